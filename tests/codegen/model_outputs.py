"""The harness parts shared by emulated_kernels.py, compile_kernels.py and the small-model
checks (reduction_schedules.py, attention_schedules.py).

Both check what stitchopt emits for the bundled models (models/manifest.json): the
models selected with --model, each compiled by `stitchopt MODEL -o WORK/NAME` with the
manifest's input_shape_flags (its dynamic inputs) and any overridden input shapes, and
both end with the same exit status convention (exit_status).
"""
import json
import os
import subprocess

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EMU_DIR = os.path.join(SOURCE_DIR, "emit", "cuda")

# Shapes used instead of the manifest's, so the emulated check stays within minutes on
# 2 cores (emulation runs every CUDA thread as a fiber), and compile_kernels.py compiles
# the same kernels; printed when used. Only dynamic dims can change: the other models
# declare their output shapes, which stitchopt checks (recommender's <750000,32> runs at
# full size). None needed yet.
REDUCED_SHAPES = {}


class Failure(Exception):
    """A problem with one model or kernel: reported, and the run goes on."""


def manifest_entries(models_dir, only):
    """The manifest's model entries, in manifest order; only those named in `only` if any."""
    with open(os.path.join(models_dir, "manifest.json")) as f:
        entries = json.load(f)["models"]
    return [entry for entry in entries if not only or entry["name"] in only]


def entry_with_shapes(entry, overrides):
    """The manifest entry with some input shapes replaced."""
    entry = json.loads(json.dumps(entry))
    for spec in entry["inputs"]:
        if spec["name"] in overrides:
            spec["shape"] = list(overrides[spec["name"]])
    return entry


def input_shape_flags(entry, overrides):
    """The manifest's input_shape_flags (its dynamic inputs) as --input-shape flags, with
    every overridden input's shape replacing or adding to them."""
    shapes = dict(flag.split("=", 1) for flag in entry["input_shape_flags"])
    shapes.update((name, ",".join(map(str, shape))) for name, shape in overrides.items())
    return [part for name, dims in shapes.items() for part in ("--input-shape", f"{name}={dims}")]


def run_stitchopt(stitchopt, models_dir, entry, overrides, work, timeout):
    """Compiles the model of `entry` with `overrides` applied into WORK/NAME.

    Returns (the entry with the overridden shapes, the output directory)."""
    entry = entry_with_shapes(entry, overrides)
    out_dir = os.path.join(work, entry["name"])
    proc = subprocess.run([stitchopt, os.path.join(models_dir, entry["file"]), "-o", out_dir] +
                          input_shape_flags(entry, overrides),
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise Failure(f"stitchopt exit {proc.returncode}: {proc.stderr.strip()}")
    return entry, out_dir


def stitchopt_run(stitchopt, out_dir, outputs, flags=(), timeout=600):
    """`stitchopt run OUT_DIR FLAGS...`, which compares every graph output with the
    reference interpreter. Returns (matched, text): matched when it exits 0 and says all
    `outputs` outputs match; text is its stdout and stderr, prefixed by the exit status
    when it did not match."""
    proc = subprocess.run([stitchopt, "run", out_dir, *flags], capture_output=True, text=True,
                          timeout=timeout)
    text = proc.stdout + proc.stderr
    matched = proc.returncode == 0 and f"all {outputs} outputs match" in text
    return matched, text if matched else f"stitchopt run exit {proc.returncode}:\n{text}"


def exit_status(failed, checked, missing, allow_missing, nothing_checked):
    """0 pass, 1 fail, 77 (ctest's skip) when no model had kernels/ and that is allowed.

    failed/checked: counts; missing: the models for which stitchopt wrote no kernels/;
    nothing_checked: the line printed when nothing was checked and nothing was missing."""
    if missing:
        print(f"no kernels/ for: {', '.join(missing)}")
        if not allow_missing:
            print("FAIL: every model must have kernels/ (--allow-missing-kernels skips them)")
            return 1
    if failed:
        return 1
    if checked == 0:
        if missing:
            print("SKIP: stitchopt writes no kernels/ yet (codegen phase not wired into the CLI)")
            return 77
        print(f"FAIL: {nothing_checked}")
        return 1
    return 0


def compile_kernel_dirs(kernel_dirs, nvrtc_check, failures):
    """compile_kernels.py over the kernel directories (nvcc sm_80/sm_90, NVRTC with
    nvrtc_check when given); prints its report and appends a failure when it fails.
    The small-model checks (reduction_schedules.py, attention_schedules.py) end with it."""
    import sys
    command = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_kernels.py")]
    for directory in kernel_dirs:
        command += ["--kernels-dir", directory]
    if nvrtc_check:
        command += ["--nvrtc-check", nvrtc_check]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
    print(proc.stdout.rstrip())
    if proc.returncode == 77:
        print("nvcc not found: the compile check is skipped")
    elif proc.returncode != 0:
        failures.append(f"compile_kernels.py exit {proc.returncode}:\n{proc.stdout}{proc.stderr}")


def small_model_parser():
    """The command line of the small-model checks: --stitchopt, --nvcc, --nvrtc-check, --keep."""
    import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--nvcc", action="store_true", help="also compile every kernel with nvcc")
    parser.add_argument("--nvrtc-check", help="stitch_nvrtc_check, passed to compile_kernels.py")
    parser.add_argument("--keep", help="write the models and outputs here instead of a temporary directory")
    return parser


def compile_small_model(stitchopt, model, work, name, flags=()):
    """Saves `model` as WORK/NAME.onnx and compiles it into WORK/NAME (replacing an earlier
    output), with the extra stitchopt options `flags`. Returns (out_dir, kernels): the codegen records of the fused groups and the
    single-op kernels; raises Failure when stitchopt fails or generates no kernel."""
    import onnx
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    out = os.path.join(work, name)
    proc = subprocess.run([stitchopt, path, "-o", out, "-q", "--force", *flags], capture_output=True,
                          text=True, timeout=300)
    if proc.returncode != 0:
        raise Failure(f"{name}: stitchopt exit {proc.returncode}: {proc.stdout}{proc.stderr}")
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    kernels = [g["codegen"] for g in report["groups"] + report.get("unfused", []) if g.get("codegen")]
    if not kernels:
        raise Failure(f"{name}: the report has no generated kernel")
    return out, kernels



def run_small_model_cases(cases, check, flags=None):
    """The small-model checks' main: for each (name, model, *expected) of `cases`,
    compiles the model (with flags[name], extra stitchopt options, when given), calls check(name, expected, kernels) for the failures of its
    plan (a list of lines; the summary after PASS when empty, else the failures),
    runs it under `stitchopt run --emulate` against the reference, and with --nvcc
    compiles every kernel. Prints PASS/FAIL lines and returns the exit status."""
    import sys
    import tempfile
    args = small_model_parser().parse_args()
    failures = []
    passed = 0
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or temporary
        os.makedirs(work, exist_ok=True)
        kernel_dirs = []
        for name, model, *expected in cases:
            try:
                out, kernels = compile_small_model(args.stitchopt, model, work, name,
                                                   (flags or {}).get(name, ()))
            except Failure as failure:
                failures.append(str(failure))
                continue
            problems, summary = check(name, expected, kernels, out)
            failures.extend(problems)
            matched, text = stitchopt_run(args.stitchopt, out, len(model.graph.output), ["--emulate"])
            if not matched:
                failures.append(f"{name} (--emulate): {text}")
                continue
            kernel_dirs.append(os.path.join(out, "kernels"))
            if problems:
                continue
            print(f"PASS {name:22s} {summary}")
            passed += 1
        if args.nvcc and kernel_dirs:
            compile_kernel_dirs(kernel_dirs, args.nvrtc_check, failures)
    for failure in failures:
        print("FAIL " + failure)
    print(f"{passed} of {len(cases)} cases pass")
    sys.stdout.flush()
    return 1 if failures else 0

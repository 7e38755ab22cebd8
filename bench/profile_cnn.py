#!/usr/bin/env python3
"""Emulated profile of the CNN exports: fused against --no-stencils and --unfused (issue 40).

Each CNN export of tests/exports/export_torch.py (opset 17, static shapes, 64x64 images,
batch 1) is compiled three times by the same binary: the plan (depthwise and grouped
convs and pools are generated stencils that fuse with their neighbours),
`--no-stencils` (those convs and pools as library calls, the rest fused as before) and
`--unfused`; each output is profiled with `stitchopt profile OUT --emulate`
(docs/perf-model.md: estimates from the CUDA emulation's counters and the kernels'
SASS, not GPU timings). Printed per model, side by side from one run: the three
estimated times, their ratios, the launches, and the share of the fused model's
global bytes its lanes move 128 bits at a time; then the memory-bound kernels over
1 MB with their sector efficiency.

--check FILE applies the "cnn_exports" gates of FILE (bench/profile_gates.json; the
ctest exports.cnn_profile_gates runs it; exit 1 names each failed gate):
  - every export is estimated faster fused than both --no-stencils and --unfused
    (but those its not_yet_faster_than_no_stencils lists, with why, than --no-stencils:
    a listed export that is faster fails the gate until it leaves the list);
  - the models of min_speedup_unfused at least that much faster than --unfused;
  - no generated memory-bound kernel (no GEMM or convolution) over min_dram_bytes of
    DRAM traffic below min_sector_efficiency;
  - every profile is whole: nvcc and nvdisasm were found, so no estimate lacks its
    compute and latency terms (profile.json "partial").

    bench/profile_cnn.py --stitchopt build/bin/stitchopt --exports build/exports/models
                         [--models convnext,efficientnet_b0] [--json F] [--keep DIR]
                         [--check bench/profile_gates.json]

--exports is the models directory tests/exports/check_exports.py writes (its
--export-only exports the corpus without checking it). With --ci (the ctest), only the
gates' `ci_unfused` exports are also compiled and profiled `--unfused` (their emulation
builds are the run's largest: 44 to 116 kernels each); the others' fused-against-unfused
margins (1.85x to 4.4x, docs/benchmarks.md) are checked by a run without --ci.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from profile_bundled import memory_kernel_findings  # noqa: E402

CNNS = ["mobile_blocks", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "convnext",
        "mnasnet0_5", "regnet_y_400mf", "resnext50_32x4d"]
VARIANTS = {"fused": [], "no_stencils": ["--no-stencils"], "unfused": ["--unfused"]}


def compile_and_profile(stitchopt, model, out, flags):
    """report.json and profile.json of `model` compiled with `flags` into `out`."""
    subprocess.run([stitchopt, str(model), "-o", str(out), "-q", "--force", *flags], check=True)
    profiled = subprocess.run([stitchopt, "profile", str(out), "--emulate"], check=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if profiled.stderr:
        sys.stderr.write(profiled.stderr)
    return (json.loads((out / "report.json").read_text()),
            json.loads((out / "profile.json").read_text()))


def wide_share(profile):
    """The fraction of the generated kernels' global bytes (loads and stores, as the
    lanes asked for them) moved by 128-bit lane accesses."""
    wide = total = 0
    for k in profile["kernels"]:
        g = k.get("global")
        if k["kind"] != "kernel" or g is None:
            continue
        wide += g["wide_load_bytes"] + g["wide_store_bytes"]
        total += g["load_bytes"] + g["store_bytes"]
    return wide / total if total else 0.0


def profile_model(stitchopt, exports, name, work, memory_gate, variants, keep):
    """The estimates of one export's variants. Without `keep`, each variant's output
    (its emulation builds are up to 0.5 GB) goes as soon as its profile is read."""
    model = Path(exports) / f"{name}_op17_static.onnx"
    result = {"model": name}
    for variant in variants:
        flags = VARIANTS[variant]
        out = Path(work) / name / variant
        report, profile = compile_and_profile(stitchopt, model, out, flags)
        if not keep:
            shutil.rmtree(out, ignore_errors=True)
        result[f"{variant}_us"] = profile["total_estimated_us"]
        result[f"{variant}_launches"] = len(profile["kernels"])
        result[f"{variant}_partial"] = profile.get("partial", True)
        if variant == "fused":
            result["wide_share"] = wide_share(profile)
            result["memory"] = memory_kernel_findings(
                profile, report, memory_gate["min_dram_bytes"],
                memory_gate["min_sector_efficiency"], 0.0)
            result["memory_kernels"] = [
                (k["kernel"], k["dram_bytes"], k["sector_efficiency"])
                for k in profile["kernels"]
                if k["kind"] == "kernel" and k["dram_bytes"] >= memory_gate["min_dram_bytes"]]
    return result


def check_gates(results, gates):
    """The failed gates, one line each (empty when every gate holds)."""
    failures = []
    pending = gates.get("not_yet_faster_than_no_stencils", {})
    for r in results:
        for other in ("no_stencils", "unfused"):
            if f"{other}_us" not in r:
                continue
            faster = r["fused_us"] < r[f"{other}_us"]
            if other == "no_stencils" and r["model"] in pending:
                if faster:
                    failures.append(f"{r['model']}: now estimated faster fused than "
                                    "--no-stencils: take it off not_yet_faster_than_no_stencils")
                continue
            if not faster:
                failures.append(f"{r['model']}: estimated {r['fused_us']:.1f} us fused, not "
                                f"faster than {r[f'{other}_us']:.1f} us --{other.replace('_', '-')}")
        least = gates.get("min_speedup_unfused", {}).get(r["model"])
        if least is not None and r["unfused_us"] < least * r["fused_us"]:
            failures.append(f"{r['model']}: estimated {r['unfused_us'] / r['fused_us']:.2f}x "
                            f"faster than --unfused, below {least}x")
        partial = [v for v in VARIANTS if r.get(f"{v}_partial")]
        if partial:
            failures.append(f"{r['model']}: the profile of {', '.join(partial)} is partial (no "
                            "nvcc or nvdisasm: scripts/setup.sh installs nvdisasm in .venv)")
        for kernel, what in r["memory"]:
            failures.append(f"{r['model']}: memory-bound kernel {kernel}: {what}, below "
                            f"{gates['memory_kernels']['min_sector_efficiency']}")
    missing = [m for m in gates.get("min_speedup_unfused", {}) if m not in
               {r["model"] for r in results}]
    if missing and len(results) == len(gates["models"]):
        failures.append(f"min_speedup_unfused names models not profiled: {', '.join(missing)}")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", default=str(ROOT / "build" / "bin" / "stitchopt"))
    parser.add_argument("--exports", required=True, help="check_exports.py's models directory")
    parser.add_argument("--models", help="comma-separated model names (default: the gates' or "
                        "every CNN export)")
    parser.add_argument("--check", help="the gates file (bench/profile_gates.json)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--keep", help="keep the outputs in this directory")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="models profiled at a time (default: the cores)")
    parser.add_argument("--ci", action="store_true",
                        help="with --check: --unfused only for the gates' ci_unfused models")
    args = parser.parse_args()
    gates = None
    if args.check:
        gates = json.loads(Path(args.check).read_text())["cnn_exports"]
    names = (args.models.split(",") if args.models else
             gates["models"] if gates else CNNS)
    memory_gate = gates["memory_kernels"] if gates else {"min_dram_bytes": 1 << 20,
                                                         "min_sector_efficiency": 0.8}
    if args.keep:
        return run(args, gates, names, memory_gate, args.keep)
    with tempfile.TemporaryDirectory(prefix="stitch_profile_cnn_") as work:
        return run(args, gates, names, memory_gate, work)


def run(args, gates, names, memory_gate, work):
    """Profiles `names` in `work`, prints the table and applies the gates."""
    # Each `stitchopt profile` compiles its kernels with one job per core; a few models
    # at a time keep both the compiles and the emulated runs busy.
    def variants(name):
        # A speedup gate over --unfused always profiles --unfused.
        wanted = set(gates.get("ci_unfused", names)) | set(gates.get("min_speedup_unfused", {})) \
            if gates else set(names)
        if args.ci and name not in wanted:
            return ["fused", "no_stencils"]
        return list(VARIANTS)

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(lambda n: profile_model(args.stitchopt, args.exports, n, work,
                                                         memory_gate, variants(n),
                                                         bool(args.keep)), names))
    print(f"{'model':<20} {'fused':>8} {'--no-stencils':>14} {'--unfused':>10} "
          f"{'vs no-st.':>9} {'vs unf.':>8} {'launches f/n/u':>15} {'128-bit':>8}")
    for r in results:
        unfused = r.get("unfused_us", float("nan"))
        launches = (f"{r['fused_launches']}/{r['no_stencils_launches']}/"
                    f"{r.get('unfused_launches', '-')}")
        print(f"{r['model']:<20} {r['fused_us']:8.1f} {r['no_stencils_us']:14.1f} "
              f"{unfused:10.1f} {r['no_stencils_us'] / r['fused_us']:8.2f}x "
              f"{unfused / r['fused_us']:7.2f}x {launches:>15} {r['wide_share']:8.1%}")
    print("(estimated us, emulated profile; 128-bit: share of the fused model's generated "
          "kernels' global bytes moved by 128-bit lane accesses)")
    big = [(r["model"], k) for r in results for k in r["memory_kernels"]]
    print(f"generated kernels over {memory_gate['min_dram_bytes']} DRAM bytes: {len(big)}")
    for model, (kernel, dram, efficiency) in big:
        print(f"  {model} {kernel}: {dram / 1e6:.1f} MB, sector efficiency {efficiency:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    if gates:
        failures = check_gates(results, gates)
        for line in failures:
            print("FAIL", line)
        if failures:
            return 1
        known = [r["model"] for r in results
                 if r["model"] in gates.get("not_yet_faster_than_no_stencils", {})]
        print(f"cnn gates: all hold ({len(results)} exports; not yet faster fused than "
              f"--no-stencils, as listed: {', '.join(known) or 'none'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

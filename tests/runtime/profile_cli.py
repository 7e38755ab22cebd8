"""End-to-end test of `stitchopt profile OUT --emulate` (profiling/profile.h,
docs/perf-model.md) on bundled models.

For gpt2_block (fused, and --unfused) and mlp:
  - profile exits 0, prints a table and writes OUT/profile.json with the documented
    fields (docs/report-schema.md, "profile.json"): one entry per kernel or library
    launch of the program, each bound one of the six names, sector efficiency in
    (0, 1], DRAM bytes > 0, estimates at least the launch latency, and a total that is
    the sum of the entries;
  - every kernel launch is one kernels.json lists, and its analytic estimate is the
    predicted time kernels.json recorded for it (one meaning, docs/report-schema.md,
    "Predicted time": the profile costs the recorded charges);
  - the counters agree with what the kernels must do: every kernel reads and writes
    global memory, kernels.json's cooperative kernels report their grid barriers, and
    gpt2_block's attention kernel (one launch, no grid barrier) re-reads K and V per
    query tile (redundancy > 2), which the fused row-wise kernels do not need to;
  - the fused model is estimated faster than the unfused one, and no fused group slower
    than its nodes unfused (matched by node name through report.json's groups);
  - the output directory stays an earlier stitchopt output (recompiling into it works);
  - with nvcc and nvdisasm (PyPI nvidia-cuda-nvdisasm in the test venv), every kernel has
    an instruction estimate from its SASS with most of its loads and stores matched to
    counted sites, and the attention kernel's CUDA-core GEMMs make it issue more
    instructions than every row-wise kernel (3x); without them the profile says why;
  - without --emulate, or on a directory that is no stitchopt output: exit 2;
  - finding nvdisasm (profiling/cuda_tools.h): the build's stitchopt, given no
    --nvdisasm, finds the checkout's .venv one above its build directory; a copy of
    stitchopt outside the checkout with no nvdisasm anywhere it looks writes a profile
    that says it is partial ("partial": true) and warns on stderr; a $STITCH_NVDISASM
    that names no executable is an error (exit 2), not a silent partial estimate.
Exit 0 when every check passes; one line per failure otherwise.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_harness import Harness, venv_nvdisasm  # noqa: E402

BOUNDS = {"memory", "compute", "shared", "barrier", "launch", "library", "latency"}


def check_launch_mode(check, name, profile, report):
    """profile.json charges each launch the phi of the mode the output was compiled for."""
    check(profile["launch_mode"] == report["device"]["launch_mode"] and
          profile["launch_latency_us"] == report["device"]["launch_latency_us"],
          f"{name}: profile.json charges {profile['launch_mode']} launches, the "
          f"output was compiled for {report['device']['launch_mode']}")


def check_recorded_predictions(check, name, profile, kernels_json):
    predicted = {k["name"]: k["predicted_time_us"] for k in kernels_json["kernels"]}
    for k in profile["kernels"]:
        where = f"{name}: {k['kernel']} ({k['node']})"
        if k["kind"] != "kernel":
            continue
        if k["kernel"] not in predicted:
            check(False, f"{where}: not in kernels.json")
            continue
        want = predicted[k["kernel"]]
        check(abs(k["analytic_us"] - want) <= 1e-9 * want,
              f"{where}: analytic {k['analytic_us']} us, kernels.json predicts {want} us")


def run_profile(binary, out, env):
    return subprocess.run([binary, "profile", out, "--emulate"], capture_output=True, text=True,
                          env=env, timeout=900)


def check_tool_discovery(stitchopt, check, out, nvdisasm, nvcc):
    """profiling/cuda_tools.h on `out` (a compiled gpt2_block)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "STITCH_NVDISASM")}
    binary = os.path.realpath(stitchopt)
    above = [os.path.dirname(binary)]
    for _ in range(3):
        above.append(os.path.dirname(above[-1]))
    in_checkout = nvdisasm and any(os.path.realpath(nvdisasm).startswith(a + "/.venv/")
                                   for a in above)
    if in_checkout and nvcc:
        run = run_profile(binary, out, env)
        with open(os.path.join(out, "profile.json")) as f:
            profile = json.load(f)
        check(run.returncode == 0 and not profile["partial"] and
              profile["instructions"].startswith("SASS"),
              f"stitchopt did not find the checkout's nvdisasm by itself: exit "
              f"{run.returncode}, {profile['instructions']}\n{run.stderr[-2000:]}")
    env_missing = dict(env, STITCH_NVDISASM="/nonexistent/nvdisasm")
    run = run_profile(binary, out, env_missing)
    check(run.returncode == 2 and "/nonexistent/nvdisasm" in run.stderr,
          f"a missing $STITCH_NVDISASM: exit {run.returncode}, expected 2 naming it:\n"
          f"{run.stderr[-2000:]}")
    toolkit = [os.path.dirname(nvcc)] if nvcc else []
    if any(os.path.exists(os.path.join(d, "nvdisasm")) for d in toolkit + ["/usr/local/cuda/bin"]):
        print("note: a toolkit nvdisasm exists: the partial profile is not checked")
        return
    with tempfile.TemporaryDirectory() as elsewhere:
        copy = os.path.join(elsewhere, "stitchopt")
        shutil.copy2(binary, copy)
        bare = dict(env, PATH="/usr/bin:/bin")
        run = run_profile(copy, out, bare)
        with open(os.path.join(out, "profile.json")) as f:
            profile = json.load(f)
        check(run.returncode == 0 and profile["partial"] and "PARTIAL" in run.stderr and
              "not estimated" in profile["instructions"],
              f"no nvdisasm anywhere: exit {run.returncode}, partial {profile['partial']}, "
              f"stderr:\n{run.stderr[-2000:]}")


def check_refusals_and_tools(harness, args, entries, work, nvdisasm, nvcc):
    """Without --emulate or on no stitchopt output: exit 2; then check_tool_discovery."""
    stitchopt, check = harness.stitchopt, harness.check
    out = os.path.join(work, "gpt2_block")
    entry = entries["gpt2_block"]
    flags = [p for flag in entry["input_shape_flags"] for p in ("--input-shape", flag)]
    stitchopt(os.path.join(args.models, entry["file"]), "-o", out, "-q", *flags)
    text = stitchopt("profile", out, expect=2)
    check("--emulate" in text, f"profile without --emulate does not say why:\n{text}")
    stitchopt("profile", work, "--emulate", expect=2)
    check_tool_discovery(args.stitchopt, check, out, nvdisasm, nvcc)


def check_kernels(check, name, profile, sass):
    """The per-launch entries of one model's profile.json."""
    for k in profile["kernels"]:
        where = f"{name}: {k['kernel']} ({k['node']})"
        for key in ("kernel", "composition", "dram_bytes", "ideal_bytes",
                    "sector_efficiency", "estimated_us", "bound"):
            check(key in k, f"{where}: no {key}")
        check(k["bound"] in BOUNDS, f"{where}: bound {k['bound']}")
        check(0 < k["sector_efficiency"] <= 1, f"{where}: sector efficiency "
              f"{k['sector_efficiency']}")
        check(k["estimated_us"] >= profile["launch_latency_us"], f"{where}: "
              f"{k['estimated_us']} us is below phi {profile['launch_latency_us']}")
        check(k["dram_bytes"] > 0, f"{where}: no DRAM bytes")
        if k["kind"] == "kernel":
            g = k["global"]
            check(g["load_requests"] > 0 and g["store_requests"] > 0,
                  f"{where}: no global loads or stores counted: {g}")
            if sass:
                i = k.get("instructions")
                check(i is not None and i["total"] > 0,
                      f"{where}: no instruction estimate: {i}")
                if i is not None:
                    # Anchors of loops the emulated run never entered (a
                    # 128-bit path's scalar fallback) cannot match.
                    executed = i["anchors"] - i["unexecuted_anchors"]
                    check(i["matched_anchors"] > 0 and
                          i["matched_anchors"] >= 0.4 * executed,
                          f"{where}: {i['matched_anchors']} of {executed} SASS "
                          "loads and stores matched to counted sites "
                          f"({i['unexecuted_anchors']} in loops never entered)")
            if k["launch"]["cooperative"]:
                # Its blocks meet at grid barriers, or count their arrivals for
                # the last block's run of the stages after the first (4c.).
                check(k["sync"]["grid_barriers"] > 0 or k["sync"]["atomics"] > 0,
                      f"{where}: cooperative without grid barriers or arrivals")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}
    harness = Harness(args.stitchopt)
    failures, stitchopt, check = harness.failures, harness.stitchopt, harness.check
    nvdisasm = venv_nvdisasm()
    nvcc = shutil.which("nvcc") or (os.path.exists("/usr/local/cuda/bin/nvcc") and
                                    "/usr/local/cuda/bin/nvcc")
    sass = bool(nvdisasm and nvcc)
    disassembler = ["--nvdisasm", nvdisasm] if nvdisasm else []
    if not sass:
        print("note: nvcc or nvdisasm missing: the instruction estimate is not checked")

    with tempfile.TemporaryDirectory() as work:
        profiles = {}
        for name, extra in [("gpt2_block", []), ("gpt2_block_unfused", ["--unfused"]),
                            ("mlp", [])]:
            entry = entries[name.replace("_unfused", "")]
            flags = [p for flag in entry["input_shape_flags"] for p in ("--input-shape", flag)]
            out = os.path.join(work, name)
            model = os.path.join(args.models, entry["file"])
            stitchopt(model, "-o", out, "-q", *flags, *extra)
            text = stitchopt("profile", out, "--emulate", *disassembler)
            check("total:" in text and "bound" in text, f"{name}: no table printed:\n{text}")
            path = os.path.join(out, "profile.json")
            if not os.path.exists(path):
                failures.append(f"{name}: no profile.json")
                continue
            with open(path) as f:
                profile = json.load(f)
            profiles[name] = profile
            with open(os.path.join(out, "kernels", "kernels.json")) as f:
                kernels_json = json.load(f)
            with open(os.path.join(out, "report.json")) as f:
                report = json.load(f)
            check(profile["schema"] == "stitchopt.profile/1", f"{name}: schema {profile['schema']}")
            check_launch_mode(check, name, profile, report)
            launches = report["kernels"]["fused"]
            check(len(profile["kernels"]) == launches,
                  f"{name}: {len(profile['kernels'])} profiled launches, report says {launches}")
            total = sum(k["estimated_us"] for k in profile["kernels"])
            check(abs(total - profile["total_estimated_us"]) <= 1e-6 * max(total, 1),
                  f"{name}: total {profile['total_estimated_us']} is not the sum {total}")
            check_recorded_predictions(check, name, profile, kernels_json)
            check_kernels(check, name, profile, sass)
        if "gpt2_block" in profiles:
            attention = [k for k in profiles["gpt2_block"]["kernels"]
                         if k["composition"] == "attention"]
            check(attention, "gpt2_block: no attention-composition kernel")
            # Row-wise kernels: warp and block compositions without a GEMM (report.json's
            # category; a tiled MatMul is a block composition too).
            with open(os.path.join(work, "gpt2_block", "report.json")) as f:
                gemm_kernels = {g["kernel"] for g in json.load(f)["groups"]
                                if g["category"] == "gemm"}
            rowwise = [k for k in profiles["gpt2_block"]["kernels"]
                       if k["composition"] in ("warp", "block") and k["kernel"] not in gemm_kernels]
            for k in attention:
                # One launch, no grid barrier; every query tile of a head reads all of
                # its keys and values (gpt2_block: 8 tiles of 4 rows per head).
                check(not k["launch"]["cooperative"] and k["sync"]["grid_barriers"] == 0,
                      f"gpt2_block: {k['kernel']} waits at grid barriers")
                check(k["redundancy"] > 2, f"gpt2_block: {k['kernel']} redundancy "
                      f"{k['redundancy']}: K and V are read by every query tile")
                if sass:
                    most = max(r["instructions"]["total"] for r in rowwise)
                    # Both GEMMs on CUDA cores from shared tiles (10x the row-wise
                    # kernels on 2026-11-26).
                    check(k["instructions"]["total"] > 3 * most,
                          f"gpt2_block: {k['kernel']} issues {k['instructions']['total']} "
                          f"instructions, not 3x the row-wise kernels' {most}")
            if not sass:
                check("not estimated" in profiles["gpt2_block"]["instructions"],
                      "gpt2_block: no SASS, but profile.json does not say so")
        if "gpt2_block" in profiles and "gpt2_block_unfused" in profiles:
            fused = profiles["gpt2_block"]["total_estimated_us"]
            unfused = profiles["gpt2_block_unfused"]["total_estimated_us"]
            check(fused < unfused, f"gpt2_block: fused {fused} us is not below unfused {unfused}")
            # Each fused group (node <kernel>_<group id>) against its nodes unfused.
            with open(os.path.join(work, "gpt2_block", "report.json")) as f:
                groups = {g["id"]: g for g in json.load(f)["groups"]}
            parts = {}
            for k in profiles["gpt2_block_unfused"]["kernels"]:
                parts[k["node"]] = parts.get(k["node"], 0.0) + k["estimated_us"]
            compared = 0
            for k in profiles["gpt2_block"]["kernels"]:
                suffix = k["node"].rsplit("_", 1)[-1]
                if not k["node"].startswith("stitch_") or not suffix.isdigit():
                    continue
                nodes = [n["name"] for n in groups[int(suffix)]["nodes"]]
                alone = sum(parts.get(n, 0.0) for n in nodes)
                compared += 1
                check(k["estimated_us"] <= alone, f"gpt2_block: group {suffix} ({k['kernel']}) "
                      f"estimated {k['estimated_us']:.2f} us, its {len(nodes)} nodes unfused "
                      f"{alone:.2f} us")
            check(compared >= 5, f"gpt2_block: only {compared} fused groups compared")
        check_refusals_and_tools(harness, args, entries, work, nvdisasm, nvcc)

    for failure in failures:
        print("FAIL:", failure)
    print(f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

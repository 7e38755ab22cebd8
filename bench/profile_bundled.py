#!/usr/bin/env python3
"""Emulated profile of every bundled model, fused against unfused (docs/perf-model.md).

For each model of models/manifest.json: compiles it twice (the plan, and --unfused),
runs `stitchopt profile OUT --emulate` on both, and prints, side by side from one run:
the estimated model time fused and unfused, the five costliest launches of the fused
model (bound, sector efficiency, redundancy), and how often the planner's analytic
estimate is within 25% of the emulated estimate.

    bench/profile_bundled.py --stitchopt build/bin/stitchopt [--models bert,vit] [--json F] [--launch-mode graph|host]
                             [--check bench/profile_gates.json | --record bench/profile_gates.json]

--check applies the gates of issue 14 against the recorded thresholds (the ctest
bench.profile_gates runs it over every bundled model; exit 1 names each failed gate):
every model is estimated faster fused than unfused, and at least by its recorded
speedup; no fused group is estimated slower than its nodes unfused; the analytic
estimate is within the tolerance of the emulated one for the recorded fraction of
kernels; and (issue 16, lean code) no float32 kernel, fused or unfused, has an FP64
instruction or calls the software 64-bit divide in its SASS (nvdisasm over the
profile's sm_90 cubins; kernels with float64 tensors excepted). --record rewrites the per-model speedups from this run (less a margin), after
an intended change; the other gates stay as they are.
"""
import argparse
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def nvdisasm_flags():
    """--nvdisasm for the venv's PyPI nvidia-cuda-nvdisasm, when installed."""
    found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                          "nvidia", "cu*", "bin", "nvdisasm")))
    return ["--nvdisasm", found[-1]] if found else []


def compile_and_profile(stitchopt, model, out, unfused, launch_mode=None):
    command = [stitchopt, str(ROOT / "models" / model["file"]), "-o", str(out), "-q"]
    if launch_mode:
        command += ["--launch-mode", launch_mode]
    for flag in model.get("input_shape_flags", []):
        command += ["--input-shape", flag]
    if unfused:
        command.append("--unfused")
    subprocess.run(command, check=True)
    subprocess.run([stitchopt, "profile", str(out), "--emulate", *nvdisasm_flags()], check=True,
                   stdout=subprocess.DEVNULL)
    return json.loads((out / "profile.json").read_text())


# SASS that lean float32 kernels never contain (issue 16): FP64 arithmetic or
# conversions, and the software 64-bit integer divide.
FP64_OPCODE = re.compile(r"\b(DADD|DMUL|DFMA|DSETP|DSET|DMNMX|DMMA)\b|\.F64\b")
DIV64_CALL = re.compile(r"CALL\S*\s.*__cuda_sm\d+_(div|rem)_[us]64")
SECTION = re.compile(r"\s*\.section\s+\.text\.([A-Za-z0-9_]+),")


def sass_findings(out):
    """[(kernel, what)] for every kernel of OUT whose SASS (the profile's cubins,
    disassembled) has an FP64 instruction or calls the 64-bit divide, unless its source
    holds float64 tensors (then FP64 is its arithmetic). None without nvdisasm."""
    tool = nvdisasm_flags()
    if not tool:
        return None
    findings = []
    for cubin in sorted((out / "kernels" / "emu_counters_build").glob("*.cubin")):
        # The listing `profile` kept beside the cubin (nvdisasm -gi -c -hex), else one.
        listing = Path(str(cubin) + ".sass")
        if listing.exists() and listing.stat().st_mtime >= cubin.stat().st_mtime:
            text = listing.read_text()
        else:
            text = subprocess.run([tool[1], str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
        function = None
        seen = set()
        for line in text.splitlines():
            match = SECTION.match(line)
            if match:
                function = match.group(1)
                continue
            if line.lstrip().startswith(".section"):
                function = None
            if function is None or not function.endswith("_kernel"):
                continue
            if DIV64_CALL.search(line):
                kind, what = "div64", "calls the software 64-bit divide"
            elif FP64_OPCODE.search(line) and "/*" in line:
                instruction = line.split(";")[0].split("*/")[-1].strip()
                kind, what = "fp64", f"has FP64 instructions ({instruction})"
            else:
                continue
            kernel = function[:-len("_kernel")]
            if (kernel, kind) in seen:
                continue
            seen.add((kernel, kind))
            source = out / "kernels" / (kernel + ".cu")
            if not (source.exists() and "double*" in source.read_text()):
                findings.append((kernel, what))
    return findings


def groups_against_parts(fused, unfused, report):
    """Each fused launch (a fused node is named <kernel>_<group id>) against the sum of
    the unfused launches of its nodes, by node name: [(kernel, fused us, parts us)]."""
    unfused_us = {}
    for k in unfused["kernels"]:
        unfused_us[k["node"]] = unfused_us.get(k["node"], 0.0) + k["estimated_us"]
    groups = {g["id"]: g for g in report["groups"]}
    result = []
    for k in fused["kernels"]:
        suffix = k["node"].rsplit("_", 1)[-1]
        if not k["node"].startswith("stitch_") or not suffix.isdigit():
            continue
        group = groups.get(int(suffix))
        if group is None:
            continue
        parts = sum(unfused_us.get(n["name"], 0.0) for n in group["nodes"])
        result.append((k["kernel"], k["composition"], k["estimated_us"], parts))
    return result


# Ops that make a kernel compute-intensive: a kernel holding one is not judged by the
# memory gates below.
COMPUTE_OPS = {"MatMul", "Gemm", "Conv", "ConvTranspose", "MatMulInteger", "QLinearMatMul"}


def memory_kernel_findings(fused, report, min_bytes, min_sector_efficiency, min_bandwidth):
    """[(kernel, what)] for each generated memory-bound kernel (no GEMM or convolution
    among its nodes) moving at least `min_bytes` of DRAM traffic whose sector efficiency
    or estimated bandwidth is below the gate. Its bandwidth is the fraction of the
    profile's bandwidth at its size it reaches: its memory term over its time after the
    launch, max(M(dram bytes), L2 sectors / L2 bandwidth) / (estimate - launch); a gather
    from a table that stays in L2 runs at L2 speed (its waste in sectors is what the
    sector efficiency judges)."""
    groups = {g["id"]: g for g in report["groups"]}
    findings, seen = [], set()
    for k in fused["kernels"]:
        suffix = k["node"].rsplit("_", 1)[-1]
        if k["kind"] != "kernel" or k["kernel"] in seen or k["dram_bytes"] < min_bytes:
            continue
        group = groups.get(int(suffix)) if suffix.isdigit() else None
        if group and any(n["op"] in COMPUTE_OPS for n in group["nodes"]):
            continue
        seen.add(k["kernel"])
        running = k["estimated_us"] - k["terms_us"]["launch"]
        memory_us = max(k["terms_us"]["dram"], k["terms_us"]["l2"])
        bandwidth = memory_us / running if running > 0 else 1.0
        if k["sector_efficiency"] < min_sector_efficiency:
            findings.append((k["kernel"], f"sector efficiency {k['sector_efficiency']:.2f} "
                             f"({k['dram_bytes'] / 1e6:.1f} MB, {k['composition']})"))
        if bandwidth < min_bandwidth:
            findings.append((k["kernel"], f"{bandwidth:.0%} of the profile's bandwidth at its "
                             f"size ({k['dram_bytes'] / 1e6:.1f} MB, {k['composition']}, "
                             f"bound {k['bound']})"))
    return findings


def within(analytic, emulated, fraction=0.25):
    return abs(analytic - emulated) <= fraction * emulated


# Issue 16's gate on memory-bound kernels (bench/profile_gates.json can override it).
MEMORY_GATE = {"min_dram_bytes": 1 << 20, "min_sector_efficiency": 0.9,
               "min_bandwidth_fraction": 0.7}

# --record keeps this much below each measured speedup, so that a change that moves
# an estimate by a few percent does not need a new recording.
SPEEDUP_MARGIN = 0.03


def check_gates(results, gates):
    """The failed gates, one line each (empty when every gate holds)."""
    failures = []
    recorded = gates["min_speedup"]
    for r in results:
        speedup = r["unfused_us"] / r["fused_us"]
        if r["fused_us"] >= r["unfused_us"]:
            failures.append(f"{r['model']}: estimated {r['fused_us']:.1f} us fused, not faster "
                            f"than {r['unfused_us']:.1f} us unfused")
        if r["model"] not in recorded:
            failures.append(f"{r['model']}: no recorded speedup in the gates file (run --record)")
        elif speedup < recorded[r["model"]]:
            failures.append(f"{r['model']}: estimated speedup {speedup:.3f}x is below the recorded "
                            f"{recorded[r['model']]:.3f}x")
    slower = sum(len(r["groups_slower_than_parts"]) for r in results)
    if slower > gates["max_groups_slower_than_parts"]:
        failures.append(f"{slower} fused groups are estimated slower than their nodes unfused "
                        f"(at most {gates['max_groups_slower_than_parts']})")
    if "max_lean_code_findings" in gates:
        findings = [(r["model"], k, what) for r in results for k, what in r["sass"] or []]
        unchecked = [r["model"] for r in results if r["sass"] is None]
        if unchecked:
            failures.append(f"no nvdisasm: the SASS of {', '.join(unchecked)} was not checked "
                            "(scripts/setup.sh installs nvidia-cuda-nvdisasm in the venv)")
        if len(findings) > gates["max_lean_code_findings"]:
            failures.append(f"{len(findings)} float32 kernels have FP64 instructions or call the "
                            f"64-bit divide (at most {gates['max_lean_code_findings']}): " +
                            "; ".join(f"{m} {k} {w}" for m, k, w in findings[:8]))
    if "memory_kernels" in gates:
        findings = [(r["model"], k, what) for r in results for k, what in r["memory"]]
        if findings:
            g = gates["memory_kernels"]
            failures.append(f"{len(findings)} memory-bound kernels over {g['min_dram_bytes']} bytes "
                            f"miss sector efficiency >= {g['min_sector_efficiency']} or bandwidth "
                            f">= {g['min_bandwidth_fraction']:.0%}: " +
                            "; ".join(f"{m} {k} {w}" for m, k, w in findings))
    agree = sum(r["analytic_within_25pct"] for r in results)
    kernels = sum(r["kernels"] for r in results)
    if kernels and agree < gates["min_analytic_agreement"] * kernels:
        failures.append(f"the analytic estimate is within {gates['analytic_tolerance']:.0%} of the "
                        f"emulated one for {agree}/{kernels} kernels "
                        f"({agree / kernels:.1%}), below {gates['min_analytic_agreement']:.0%}")
    return failures


def record_gates(results, gates, path):
    for r in results:
        speedup = r["unfused_us"] / r["fused_us"]
        gates["min_speedup"][r["model"]] = math.floor(speedup * (1 - SPEEDUP_MARGIN) * 1000) / 1000
    gates["min_speedup"] = dict(sorted(gates["min_speedup"].items()))
    Path(path).write_text(json.dumps(gates, indent=2) + "\n")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", default=str(ROOT / "build" / "bin" / "stitchopt"))
    parser.add_argument("--models", help="comma-separated model names (default: all)")
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--launch-mode", choices=["graph", "host"],
                        help="compile for this launch mode (default: stitchopt's, graph); the "
                        "gates are recorded for the default")
    gate = parser.add_mutually_exclusive_group()
    gate.add_argument("--check", help="a gates file (bench/profile_gates.json): exit 1 when a "
                      "gate fails")
    gate.add_argument("--record", help="a gates file: rewrite its per-model speedups from this run")
    args = parser.parse_args()
    if args.launch_mode and (args.check or args.record):
        parser.error("--check and --record apply to the default launch mode: drop --launch-mode")
    return args


def main():
    args = parse_args()
    gates = None
    if args.check or args.record:
        gates = json.loads(Path(args.check or args.record).read_text())
        if gates.get("schema") != "stitchopt.profile_gates/1":
            print(f"{args.check or args.record}: not a stitchopt.profile_gates/1 file",
                  file=sys.stderr)
            return 2
    tolerance = gates["analytic_tolerance"] if gates else 0.25
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text())
    wanted = set(args.models.split(",")) if args.models else None
    results = []
    with tempfile.TemporaryDirectory(prefix="stitch_profile_") as temp:
        for model in manifest["models"]:
            if wanted and model["name"] not in wanted:
                continue
            start = time.monotonic()
            fused = compile_and_profile(args.stitchopt, model, Path(temp) / (model["name"] + "_f"),
                                        False, args.launch_mode)
            unfused = compile_and_profile(args.stitchopt, model,
                                          Path(temp) / (model["name"] + "_u"), True,
                                          args.launch_mode)
            print(f"{model['name']}: profiled fused and unfused in "
                  f"{time.monotonic() - start:.0f} s", file=sys.stderr)
            report = json.loads((Path(temp) / (model["name"] + "_f") / "report.json").read_text())
            sass = None
            if gates and "max_lean_code_findings" in gates:
                fused_sass = sass_findings(Path(temp) / (model["name"] + "_f"))
                unfused_sass = sass_findings(Path(temp) / (model["name"] + "_u"))
                if fused_sass is not None and unfused_sass is not None:
                    sass = fused_sass + [(k + " (unfused)", w) for k, w in unfused_sass]
            versus = groups_against_parts(fused, unfused, report)
            kernels = [k for k in fused["kernels"] if k["kind"] == "kernel"]
            memory_gate = (gates or {}).get("memory_kernels", MEMORY_GATE)
            memory = memory_kernel_findings(fused, report, memory_gate["min_dram_bytes"],
                                            memory_gate["min_sector_efficiency"],
                                            memory_gate["min_bandwidth_fraction"])
            agree = sum(within(k["analytic_us"], k["estimated_us"], tolerance) for k in kernels)
            results.append({
                "model": model["name"],
                "fused_us": fused["total_estimated_us"],
                "unfused_us": unfused["total_estimated_us"],
                "fused_launches": len(fused["kernels"]),
                "unfused_launches": len(unfused["kernels"]),
                "kernels": len(kernels),
                "instructions": fused.get("instructions", ""),
                "analytic_within_25pct": agree,
                "sass": sass,
                "memory": memory,
                "groups": len(versus),
                "groups_slower_than_parts": [v for v in versus if v[2] > v[3]],
                "costliest": sorted(fused["kernels"], key=lambda k: -k["estimated_us"])[:5],
                "worst_agreement": sorted(
                    kernels, key=lambda k: -abs(k["analytic_us"] - k["estimated_us"]) /
                    max(k["estimated_us"], 1e-9))[:3],
            })
    print(f"{'model':<20} {'fused us':>9} {'unfused us':>10} {'speedup':>7} "
          f"{'launches':>9} {f'analytic within {tolerance:.0%}':>20}")
    total_agree = total_kernels = 0
    for r in results:
        total_agree += r["analytic_within_25pct"]
        total_kernels += r["kernels"]
        print(f"{r['model']:<20} {r['fused_us']:9.1f} {r['unfused_us']:10.1f} "
              f"{r['unfused_us'] / r['fused_us']:6.2f}x "
              f"{r['fused_launches']:>4}/{r['unfused_launches']:<4} "
              f"{r['analytic_within_25pct']:>9}/{r['kernels']:<3} kernels")
    print(f"analytic within {tolerance:.0%} of emulated: {total_agree}/{total_kernels} kernels")
    slower = [(r["model"], *v) for r in results for v in r["groups_slower_than_parts"]]
    print(f"fused groups estimated slower than their nodes unfused: {len(slower)} of "
          f"{sum(r['groups'] for r in results)}")
    for model, kernel, composition, fused_us, parts_us in slower:
        print(f"  {model:<14} {kernel:<36} {composition[:16]:<16} fused {fused_us:7.2f} us, "
              f"parts unfused {parts_us:7.2f} us")
    memory = [(r["model"], k, what) for r in results for k, what in r["memory"]]
    print(f"memory-bound kernels over 1 MB below sector efficiency or bandwidth: {len(memory)}")
    for model, kernel, what in memory:
        print(f"  {model:<14} {kernel:<36} {what}")
    for r in results:
        print(f"\n{r['model']}: five costliest launches")
        for k in r["costliest"]:
            print(f"  {k['kernel']:<36} {k['composition'][:36]:<36} {k['estimated_us']:8.2f} us "
                  f"(model {k['analytic_us']:.2f}) {k['bound']:<8} sector eff "
                  f"{k['sector_efficiency']:.2f} redundancy {k['redundancy']:.1f} "
                  f"instructions {k.get('instructions', {}).get('total', 0):.3g}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    if args.record:
        record_gates(results, gates, args.record)
        print(f"\nrecorded the per-model speedups into {args.record}")
    if args.check:
        failures = check_gates(results, gates)
        print(f"\ngates ({args.check}): " + ("all hold" if not failures else
                                             f"{len(failures)} failed"))
        for failure in failures:
            print(f"  FAILED {failure}")
        if failures:
            print("  (an intended change: rerun with --record and say why in the commit)")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

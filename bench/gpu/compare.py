#!/usr/bin/env python3
"""Puts the GPU's measurements (bench/gpu/device_run.sh's run.log and bench.log) beside
the emulated estimates (bench/gpu/prepare.py --estimates) as markdown tables for
docs/benchmarks.md:

    .venv/bin/python bench/gpu/compare.py RESULTS_DIR ESTIMATES_DIR [--kernels FILE.md]

One row per model: estimated and measured time fused and unfused (end to end and as a
CUDA Graph replay), the speedups, and whether every output matched the reference on the
GPU. Then, over every kernel step of every output, the measured time against the
estimate, by composition. --kernels writes the per-kernel table.
"""
import argparse
import hashlib
import json
import re
import statistics
import sys
from pathlib import Path

# A step of `bench --per-kernel`: host-launched time, then with --graph the step alone
# replayed as a CUDA graph ("graph - us" when it could not be captured).
STEP = re.compile(r"^\s+(kernel|library|host)\s+(\S+)\s+([\d.]+) us\s+"
                  r"(?:graph ([\d.]+|-) us\s+)?(.*)$")
MEDIAN = re.compile(r"median ([\d.]+) ms")


def parse_bench(text):
    """{output: {"e2e_us", "graph_us", "steps": [(kind, op, us, name, graph_us)], "rc"}};
    a step's graph_us is None without --graph or when it could not be captured."""
    result, current = {}, None
    for line in text.splitlines():
        if line.startswith("=== "):
            current = result.setdefault(line[4:].strip(), {"steps": []})
        elif current is None:
            continue
        elif line.startswith("end to end:"):
            current["e2e_us"] = float(MEDIAN.search(line).group(1)) * 1000
        elif line.startswith("CUDA graph: median"):
            current["graph_us"] = float(MEDIAN.search(line).group(1)) * 1000
        elif line.startswith("rc="):
            current["rc"] = int(line[3:])
        elif m := STEP.match(line):
            graph = float(m[4]) if m[4] not in (None, "-") else None
            current["steps"].append((m[1], m[2], float(m[3]), m[5].strip(), graph))
    return result


def parse_run(text):
    """{output: `stitchopt run`'s exit status}."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^=== (\S+) rc=(\d+)", text, re.M)}


def fmt(value, digits=1):
    return "—" if value is None else f"{value:.{digits}f}"


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def step_tables(bench, profiles, kernels_path):
    """Each step against its estimate: timed alone host-launched, and (with --graph)
    replayed alone as a CUDA graph, the launch mode the profile's phi is for when the
    output was compiled for graphs (its profile.json "launch_mode"). Prints the
    summary by composition; writes the per-kernel table to `kernels_path` if given."""
    rows, by_composition, by_composition_graph = [], {}, {}
    for name, measured in bench.items():
        kernels = {}
        for k in profiles.get(name, {}).get("kernels", []):
            kernels.setdefault(k["node"], []).append(k)
        for kind, op, us, node, graph_us in measured["steps"]:
            estimated = kernels.get(node)
            if not estimated or kind == "host":
                continue
            est = sum(k["estimated_us"] for k in estimated)
            composition = estimated[0]["composition"] if kind == "kernel" else "library"
            rows.append((name, estimated[0]["kernel"], composition, est, us, graph_us,
                         sum(k.get("dram_bytes", 0) for k in estimated)))
            by_composition.setdefault(composition, []).append(us / est)
            if graph_us is not None:
                by_composition_graph.setdefault(composition, []).append(graph_us / est)
    for title, table in (("timed alone, host-launched", by_composition),
                         ("replayed alone as a CUDA graph", by_composition_graph)):
        if not table:
            continue
        print(f"\nPer step, {title}:\n")
        print("| composition | steps | median measured/emulated | within 25% | within 2x |")
        print("|---|---:|---:|---:|---:|")
        for composition, ratios in sorted(table.items()):
            within = sum(1 for r in ratios if 0.8 <= r <= 1.25)
            within2 = sum(1 for r in ratios if 0.5 <= r <= 2.0)
            print(f"| {composition} | {len(ratios)} | {statistics.median(ratios):.2f} "
                  f"| {within} | {within2} |")
    if kernels_path:
        lines = ["| output | kernel | composition | DRAM bytes | emulated µs | measured µs "
                 "| ratio | graph µs | graph ratio |",
                 "|---|---|---|---:|---:|---:|---:|---:|---:|"]
        lines += [f"| {o} | {k} | {c} | {b} | {e:.1f} | {m:.1f} | {m / e:.2f} "
                  f"| {fmt(g)} | {fmt(ratio(g, e), 2)} |"
                  for o, k, c, e, m, g, b in rows]
        Path(kernels_path).write_text("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results")
    parser.add_argument("estimates")
    parser.add_argument("--kernels", help="write the per-kernel table here")
    args = parser.parse_args()
    results, estimates = Path(args.results), Path(args.estimates)
    bench = parse_bench((results / "bench.log").read_text())
    runs = parse_run((results / "run.log").read_text())
    profiles = {p.parent.name: json.loads(p.read_text())
                for p in estimates.glob("*/profile.json")}
    # The GPU compiled each job itself: its model.fused.onnx must be the one estimated.
    for line in (results / "compile.log").read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] == "compiled" and parts[0] in profiles:
            here = hashlib.sha256((estimates / parts[0] / "model.fused.onnx").read_bytes())
            if not here.hexdigest().startswith(parts[2]):
                print(f"warning: {parts[0]} compiled differently on the GPU machine: its "
                      "estimate is not for the kernels measured", file=sys.stderr)

    fused = [n for n in bench if not n.endswith(("_unfused", "_noattn"))]
    print("| model | emulated fused µs | emulated unfused µs | est. speedup | measured fused µs "
          "| measured unfused µs | measured speedup | graph fused µs | graph unfused µs "
          "| graph speedup | outputs match (GPU) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name in fused:
        f, u = bench[name], bench.get(name + "_unfused", {})
        ef = profiles.get(name, {}).get("total_estimated_us")
        eu = profiles.get(name + "_unfused", {}).get("total_estimated_us")
        match = [runs[n] == 0 for n in (name, name + "_unfused") if n in runs]
        print(f"| {name} | {fmt(ef)} | {fmt(eu)} | {fmt(ratio(eu, ef), 2)} "
              f"| {fmt(f.get('e2e_us'))} | {fmt(u.get('e2e_us'))} "
              f"| {fmt(ratio(u.get('e2e_us'), f.get('e2e_us')), 2)} "
              f"| {fmt(f.get('graph_us'))} | {fmt(u.get('graph_us'))} "
              f"| {fmt(ratio(u.get('graph_us'), f.get('graph_us')), 2)} "
              f"| {'yes' if all(match) else 'NO: ' + str(match)} |")
    for name in bench:
        if name.endswith("_noattn"):
            base = name[: -len("_noattn")]
            print(f"\n{name}: emulated {fmt(profiles.get(name, {}).get('total_estimated_us'))} µs"
                  f" (fused attention {fmt(profiles.get(base, {}).get('total_estimated_us'))}), "
                  f"measured {fmt(bench[name].get('e2e_us'))} µs end to end, "
                  f"{fmt(bench[name].get('graph_us'))} µs graph (fused attention "
                  f"{fmt(bench[base].get('e2e_us'))}, {fmt(bench[base].get('graph_us'))})")

    step_tables(bench, profiles, args.kernels)
    return 0


if __name__ == "__main__":
    sys.exit(main())

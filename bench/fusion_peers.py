#!/usr/bin/env python3
"""Kernel counts of stitchopt's fusion plan next to ONNX Runtime's optimized graph.

For every bundled model (models/manifest.json), at the manifest's static shapes:
  - stitchopt's kernels.original, kernels.fused and compression (report.json);
  - the peer: ONNX Runtime with graph_optimization_level ORT_ENABLE_ALL writing its
    optimized graph (optimized_model_filepath), counted as nodes that launch work
    (views, constants and shape queries excluded, as kernels.original counts them;
    bench/ort_peer.py);
  - an ablation: substitution patterns only, + exploratory, + packing, + library
    epilogues (the default), and the ILP objective against the greedy plan's
    objective.
With --exports WORK, the same comparison over the real PyTorch exports instead
(tests/exports/export_torch.py, exported into WORK/models as the ctest exports.pytorch
does): nodes, kernels original / host shape ops / fused, ONNX Runtime's work nodes and
the compile time of each file, dynamic-axes exports compiled with --input-shape.
Prints Markdown tables. Usage, from the repository root after scripts/setup.sh:

  .venv/bin/python bench/fusion_peers.py [--stitchopt build/bin/stitchopt]
  .venv/bin/python bench/fusion_peers.py --exports build/exports [--only name,name]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from model_manifest import input_shapes
from ort_peer import fix_input_shapes, session, work_nodes

HERE = os.path.dirname(os.path.abspath(__file__))


def stitchopt_report(binary, model_path, flags, extra, work):
    out = os.path.join(work, "out")
    cmd = [binary, model_path, "-o", out, "-q", "--force"] + extra
    for flag in flags:
        cmd += ["--input-shape", flag]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def ort_kernels(model_path, shapes, work):
    optimized = os.path.join(work, "ort_optimized.onnx")
    session(fix_input_shapes(model_path, shapes, os.path.join(work, "fixed.onnx")), optimized)
    return work_nodes(optimized)


def print_table(header, alignment, rows):
    print(header)
    print(alignment)
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def exports_table(binary, work, only):
    sys.path.insert(0, os.path.join(HERE, "..", "tests", "exports"))
    from check_exports import export
    models = export(work, only)
    with open(os.path.join(models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    rows = []
    for entry in entries:
        flags = [f"{spec['name']}={','.join(map(str, spec['shape']))}"
                 for spec in entry["inputs"]] if entry["dynamic"] else []
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        path = os.path.join(models, entry["file"])
        with tempfile.TemporaryDirectory() as scratch:
            start = time.monotonic()
            report = stitchopt_report(binary, path, flags, [], scratch)
            seconds = time.monotonic() - start
            peer = ort_kernels(path, shapes, scratch)
        kernels = report["kernels"]
        rows.append([entry["file"], report["simplify"]["nodes_before"], kernels["original"],
                     kernels["host_shape_ops"], kernels["fused"], peer,
                     "yes" if kernels["fused"] < peer else "no", f"{seconds:.2f}"])
        print(f"done {entry['file']}", file=sys.stderr, flush=True)
    print_table("| model | nodes | kernels original | host shape ops | fused | ORT work nodes "
                "| fewer than ORT | compile s |",
                "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |", rows)
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", default="build/bin/stitchopt")
    parser.add_argument("--models", default="models")
    parser.add_argument("--exports", metavar="WORK",
                        help="compare over the PyTorch export corpus exported into WORK")
    parser.add_argument("--only", help="with --exports: comma-separated model names")
    args = parser.parse_args()
    binary = os.path.abspath(args.stitchopt)
    if args.exports:
        return exports_table(binary, os.path.abspath(args.exports), args.only)
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    main_rows = []
    ablation_rows = []
    for entry in entries:
        path = os.path.abspath(os.path.join(args.models, entry["file"]))
        flags = entry["input_shape_flags"]
        shapes = input_shapes(flags)
        with tempfile.TemporaryDirectory() as work:
            full = stitchopt_report(binary, path, flags, [], work)
            off = ["--no-codegen", "--no-epilogue"]
            substitution = stitchopt_report(binary, path, flags,
                                            off + ["--no-exploratory", "--no-packing"], work)
            exploratory = stitchopt_report(binary, path, flags, off + ["--no-packing"], work)
            packing = stitchopt_report(binary, path, flags, off, work)
            peer = ort_kernels(path, shapes, work)
        kernels = full["kernels"]
        main_rows.append([entry["name"], kernels["original"], kernels["fused"],
                          f"{kernels['compression']:.1f}x", peer,
                          "yes" if kernels["fused"] < peer
                          else "no (tie)" if kernels["fused"] == peer else "no",
                          full["solver"]["status"]])
        ablation_rows.append([entry["name"], substitution["kernels"]["fused"],
                              exploratory["kernels"]["fused"], packing["kernels"]["fused"],
                              kernels["fused"],
                              f"{full['solver']['objective_us']:.1f}",
                              f"{full['solver']['greedy_objective_us']:.1f}"])
        print(f"done {entry['name']}", file=sys.stderr, flush=True)
    print_table("| model | kernels.original | kernels.fused | compression "
                "| ONNX Runtime ORT_ENABLE_ALL | fewer than ORT | solver |",
                "|---|---:|---:|---:|---:|---|---|", main_rows)
    print()
    print_table("| model | substitution only | + exploratory | + packing "
                "| + epilogues (default) | ILP objective (us) | greedy objective (us) |",
                "|---|---:|---:|---:|---:|---:|---:|", ablation_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

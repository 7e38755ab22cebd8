#!/usr/bin/env python3
"""Kernel counts of stitchopt's fusion plan next to ONNX Runtime's optimized graph.

For every bundled model (models/manifest.json), at the manifest's static shapes:
  - stitchopt's kernels.original, kernels.fused and compression (report.json);
  - the peer: ONNX Runtime with graph_optimization_level ORT_ENABLE_ALL writing its
    optimized graph (optimized_model_filepath), counted as nodes that launch work
    (every node but Reshape/Flatten/Squeeze/Unsqueeze/Identity/Constant, as
    kernels.original counts them);
  - an ablation: substitution patterns only, + exploratory, + packing, + library
    epilogues (the default), and the ILP objective against the greedy plan's
    objective.
Prints Markdown tables. Usage, from the repository root after scripts/setup.sh:

  .venv/bin/python bench/fusion_peers.py [--stitchopt build/bin/stitchopt]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx
import onnxruntime as ort

NO_KERNEL = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Constant"}


def stitchopt_report(binary, model_path, flags, extra, work):
    out = os.path.join(work, "out")
    cmd = [binary, model_path, "-o", out, "-q"] + extra
    for flag in flags:
        cmd += ["--input-shape", flag]
    subprocess.run(cmd, check=True)
    with open(os.path.join(out, "report.json")) as f:
        return json.load(f)


def ort_kernels(model_path, shapes, work):
    model = onnx.load(model_path)
    for value in model.graph.input:
        if value.name in shapes:
            dims = value.type.tensor_type.shape.dim
            for dim, size in zip(dims, shapes[value.name]):
                dim.ClearField("dim_param")
                dim.dim_value = size
    fixed = os.path.join(work, "fixed.onnx")
    onnx.save(model, fixed, save_as_external_data=False)
    optimized = os.path.join(work, "ort_optimized.onnx")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = optimized
    options.log_severity_level = 3
    ort.InferenceSession(fixed, options, providers=["CPUExecutionProvider"])
    graph = onnx.load(optimized, load_external_data=False).graph
    return sum(1 for node in graph.node if node.op_type not in NO_KERNEL)


def print_table(header, alignment, rows):
    print(header)
    print(alignment)
    for row in rows:
        print("| " + " | ".join(str(cell) for cell in row) + " |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", default="build/bin/stitchopt")
    parser.add_argument("--models", default="models")
    args = parser.parse_args()
    binary = os.path.abspath(args.stitchopt)
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    main_rows = []
    ablation_rows = []
    for entry in entries:
        path = os.path.abspath(os.path.join(args.models, entry["file"]))
        flags = entry["input_shape_flags"]
        shapes = {}
        for flag in flags:
            name, dims = flag.rsplit("=", 1)
            shapes[name] = [int(d) for d in dims.split(",")]
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

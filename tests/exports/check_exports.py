#!/usr/bin/env python3
"""Real PyTorch exports through stitchopt (issue 15; tests/exports/export_torch.py).

Exports the corpus with Debian's /usr/bin/python3 (python3-torch, python3-torchvision)
into --work (reused while the exporter and torch are unchanged), then for every file:
  - `stitchopt FILE -o OUT` (with --input-shape for dynamic-axes exports) exits 0 and,
    after simplification, no node output has an unknown type
    (report.json simplify.unknown_types == 0);
  - ONNX Runtime runs OUT/model.fused.onnx and the original on the same random inputs
    and agrees within 1e-5 (max |a-b| / max |b|);
  - `stitchopt run OUT --emulate` runs every generated kernel and matches the reference
    interpreter (exit 0), or --cpu when --no-emulate;
  - stitchopt launches fewer kernels than ONNX Runtime's optimized graph has work
    nodes (views, constants and shape queries excluded).
Prints a table (nodes, kernels original / host shape ops / fused, ORT work nodes,
compile seconds); exit 1 with one line per failure.

    .venv/bin/python tests/exports/check_exports.py --stitchopt build/bin/stitchopt
        --work build/exports [--only name,name] [--no-emulate]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.join(HERE, "export_torch.py")
NO_WORK = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Constant", "Shape", "Size"}


def export(work, only):
    """The corpus in work/models, exported unless the stamp says it is current."""
    with open(EXPORTER, "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest() + (only or "")
    models = os.path.join(work, "models")
    stamp_path = os.path.join(models, "stamp")
    if os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        return models
    command = ["/usr/bin/python3", EXPORTER, models] + (["--only", only] if only else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        print("exporting failed: scripts/setup.sh installs python3-torch and python3-torchvision")
        sys.exit(1)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return models


def random_feeds(entry, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        if spec["dtype"] == "int64":
            feeds[spec["name"]] = rng.integers(0, 100, spec["shape"]).astype(np.int64)
        else:
            feeds[spec["name"]] = rng.standard_normal(spec["shape"]).astype(np.float32)
    return feeds


def session(path, optimized_path=None):
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if optimized_path:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = optimized_path
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def fixed_shapes(path, entry, out_path):
    """The model with its inputs' dims fixed (ONNX Runtime's optimizer then sees what
    stitchopt sees with --input-shape)."""
    model = onnx.load(path)
    shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
    for value in model.graph.input:
        if value.name in shapes:
            for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
                dim.ClearField("dim_param")
                dim.dim_value = size
    onnx.save(model, out_path)
    return out_path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--no-emulate", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    models = export(args.work, args.only)
    with open(os.path.join(models, "manifest.json")) as f:
        manifest = json.load(f)
    failures = []
    rows = []
    for entry in manifest["models"]:
        file = entry["file"]
        path = os.path.join(models, file)
        out = os.path.join(args.work, "out", file[:-5])
        command = [args.stitchopt, path, "-o", out, "-q", "--force"]
        if entry["dynamic"]:
            for spec in entry["inputs"]:
                command += ["--input-shape", f"{spec['name']}={','.join(map(str, spec['shape']))}"]
        start = time.monotonic()
        compiled = subprocess.run(command, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if compiled.returncode != 0:
            failures.append(f"{file}: stitchopt exit {compiled.returncode}: {compiled.stderr.strip()}")
            continue
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        simplify = report["simplify"]
        if simplify["unknown_types"] != 0:
            roots = ", ".join(f"{r['node']} ({r['op']})" for r in simplify["unknown_type_roots"][:5])
            failures.append(f"{file}: {simplify['unknown_types']} unknown types after "
                            f"simplification, starting at {roots}")
        feeds = random_feeds(entry)
        reference = session(fixed_shapes(path, entry, os.path.join(out, "fixed.onnx")),
                            os.path.join(out, "ort_optimized.onnx"))
        expected = reference.run(None, feeds)
        got = session(os.path.join(out, "model.fused.onnx")).run(None, feeds)
        for index, (a, b) in enumerate(zip(got, expected)):
            error = float(np.max(np.abs(a.astype(np.float64) - b))) / max(float(np.max(np.abs(b))),
                                                                            1e-30)
            if not error <= 1e-5:
                failures.append(f"{file}: output {index} differs from ONNX Runtime: {error:.3g}")
        mode = "--cpu" if args.no_emulate else "--emulate"
        run = subprocess.run([args.stitchopt, "run", out, mode], capture_output=True, text=True)
        if run.returncode != 0 or "outputs match the reference interpreter" not in run.stdout:
            failures.append(f"{file}: run {mode} exit {run.returncode}:\n"
                            f"{(run.stdout + run.stderr)[-1500:]}")
        optimized = onnx.load(os.path.join(out, "ort_optimized.onnx"), load_external_data=False)
        ort_work = sum(1 for node in optimized.graph.node if node.op_type not in NO_WORK)
        kernels = report["kernels"]
        if kernels["fused"] >= ort_work:
            failures.append(f"{file}: {kernels['fused']} kernels, ONNX Runtime's optimized graph "
                            f"has {ort_work} work nodes")
        rows.append((file, simplify["nodes_before"], kernels["original"],
                     kernels.get("host_shape_ops", "-"), kernels["fused"], ort_work, seconds))
    print("| model | nodes | kernels original | host shape ops | fused | ORT work nodes | "
          "compile s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]} | {row[5]} | {row[6]:.2f} |")
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

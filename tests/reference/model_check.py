#!/usr/bin/env python3
"""Reference interpreter vs ONNX Runtime on every bundled model.

For each model in MODELS_DIR/manifest.json: feeds seeded random inputs at the
manifest's shapes (integer inputs drawn from the manifest's "range", bools 0/1),
writes them as input_N.pb (graph input order), runs `stitch_reference MODEL DIR`
and ONNX Runtime (CPU, graph optimizations disabled), and compares every output:
float32/float64 within |ref - ort| <= 1e-5 * max(|ort|, 1) elementwise (a relative
bound that becomes absolute near zero, so small values don't divide by ~0),
float16/bfloat16 within 1e-2 of the same form, integers and bools exactly.

Prints one line per model (with the reference evaluation time) and a closing line
"N passed, M failed"; exits 1 if any model failed, 2 on bad usage.

Usage: model_check.py --stitch-reference PATH --models DIR [--model NAME ...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from manifest_inputs import random_feeds  # noqa: E402
from compare import compare_reference_outputs, run_onnxruntime  # noqa: E402


def check_model(tool, models_dir, entry, work):
    path = os.path.join(models_dir, entry["file"])
    feeds = random_feeds(entry)
    model = onnx.load(path, load_external_data=False)
    directory = os.path.join(work, entry["name"])
    os.makedirs(directory, exist_ok=True)
    for index, graph_input in enumerate(model.graph.input):
        if graph_input.name in feeds:
            tensor = numpy_helper.from_array(feeds[graph_input.name], graph_input.name)
            with open(os.path.join(directory, f"input_{index}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
    start = time.monotonic()
    proc = subprocess.run([tool, path, directory], capture_output=True, text=True, timeout=120)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        return f"stitch_reference exit {proc.returncode}: {proc.stderr.strip()}", seconds
    names, expected = run_onnxruntime(path, feeds)
    return compare_reference_outputs(directory, names, expected), seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitch-reference", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--model", action="append", default=[])
    args = parser.parse_args()
    with open(os.path.join(args.models, "manifest.json")) as f:
        manifest = json.load(f)
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="stitch_model_check_") as work:
        for entry in manifest["models"]:
            if args.model and entry["name"] not in args.model:
                continue
            try:
                problem, seconds = check_model(args.stitch_reference, args.models, entry, work)
            except Exception as error:  # noqa: BLE001 - reported per model
                problem, seconds = f"{type(error).__name__}: {error}", 0.0
            if problem:
                failed += 1
                print(f"FAIL {entry['name']}: {problem}")
            else:
                passed += 1
                print(f"ok   {entry['name']} ({seconds:.2f} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

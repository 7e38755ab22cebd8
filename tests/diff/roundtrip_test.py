#!/usr/bin/env python3
"""Differential round-trip test of stitchopt against onnxruntime.

For each model in MODELS_DIR/manifest.json:
  1. runs `stitchopt MODEL -o WORK/NAME/out [--input-shape NAME=d0,d1 ...]`
     and requires exit code 0;
  2. checks OUT/model.fused.onnx with onnx.checker.check_model(full_check=True);
  3. checks OUT/report.json: schema "stitchopt.report/2", keys tool, model
     (path, sha256, opset, node_count; sha256/opset/node_count must match the
     input model), phases, kernels.original;
  4. runs the original and the rewritten model in onnxruntime (CPU, graph
     optimizations disabled, one thread) on the same seeded random inputs at
     the manifest's shapes and compares every output.

Two modes:
  --mode exact       stitchopt --no-simplify: the model only round-trips through
                     the IR, and every output must be bit-identical.
  --mode simplified  the default pipeline runs (folding, rewrites, opening
                     compound ops): integer and bool outputs must be equal, float
                     outputs within a max relative error of 1e-5, measured as
                     max|a - b| / max(max|a|, 1e-30) over each output tensor.

Prints one line per model and a closing line "N passed, M failed"; exits 1 if
any model failed, 2 on bad usage.

Usage: roundtrip_test.py --stitchopt PATH --models DIR [--mode exact|simplified]
                         [--model NAME ...] [--work DIR] [--timeout S]
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from manifest_inputs import random_feeds  # noqa: E402

REPORT_SCHEMA = "stitchopt.report/2"


class Failure(Exception):
    pass


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def run_ort(path, feeds):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.log_severity_level = 3
    try:
        sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        return dict(zip(names, sess.run(None, feeds)))
    except Exception as e:  # onnxruntime raises several exception types
        raise Failure(f"onnxruntime failed on {path}: {str(e).splitlines()[0]}")


RELATIVE_TOLERANCE = 1e-5


def compare(expected, actual, exact):
    if list(expected) != list(actual):
        raise Failure(f"output names differ: original {list(expected)}, "
                      f"rewritten {list(actual)}")
    for name, a in expected.items():
        b = actual[name]
        if a.dtype != b.dtype or a.shape != b.shape:
            raise Failure(f"output {name}: original {a.dtype}{list(a.shape)}, "
                          f"rewritten {b.dtype}{list(b.shape)}")
        if a.tobytes() == b.tobytes():
            continue
        floating = np.issubdtype(a.dtype, np.floating)
        if floating and np.array_equal(a, b, equal_nan=True):
            continue  # only NaN payloads differ
        if floating and not exact:
            scale = max(float(np.nanmax(np.abs(a))) if a.size else 0.0, 1e-30)
            nan_mismatch = np.isnan(a) != np.isnan(b)
            error = float(np.nanmax(np.abs(a.astype(np.float64) - b))) / scale
            if not nan_mismatch.any() and error <= RELATIVE_TOLERANCE:
                continue
            raise Failure(f"output {name}: max relative error {error:.3g} > "
                          f"{RELATIVE_TOLERANCE:g}" +
                          (", NaNs differ" if nan_mismatch.any() else ""))
        differ = a != b
        detail = ""
        if floating:
            differ &= ~(np.isnan(a) & np.isnan(b))
            detail = f", max abs diff {float(np.nanmax(np.abs(a - b))):.3g}"
        mismatch = int(np.count_nonzero(differ))
        raise Failure(f"output {name}: {mismatch} of {a.size} elements differ{detail}")


def check_report(path, model_path, entry):
    if not os.path.isfile(path):
        raise Failure(f"{path} was not written")
    with open(path) as f:
        try:
            report = json.load(f)
        except json.JSONDecodeError as e:
            raise Failure(f"{path} is not valid JSON: {e}")
    if report.get("schema") != REPORT_SCHEMA:
        raise Failure(f"{path}: schema is {report.get('schema')!r}, "
                      f"expected {REPORT_SCHEMA!r}")
    for key in ("tool", "model", "phases", "kernels"):
        if key not in report:
            raise Failure(f"{path}: missing key {key!r}")
    model = report["model"]
    for key in ("path", "sha256", "opset", "node_count"):
        if key not in model:
            raise Failure(f"{path}: missing key model.{key}")
    if model["sha256"] != sha256_of(model_path):
        raise Failure(f"{path}: model.sha256 {model['sha256']} is not the input's "
                      f"{sha256_of(model_path)}")
    if model["opset"] != entry["opset"]:
        raise Failure(f"{path}: model.opset {model['opset']}, manifest {entry['opset']}")
    if model["node_count"] != entry["node_count"]:
        raise Failure(f"{path}: model.node_count {model['node_count']}, "
                      f"manifest {entry['node_count']}")
    kernels = report["kernels"]
    if not isinstance(kernels, dict) or "original" not in kernels:
        raise Failure(f"{path}: missing key kernels.original")
    original = kernels["original"]
    if not isinstance(original, int) or not 0 < original <= entry["node_count"]:
        raise Failure(f"{path}: kernels.original {original!r} is not in "
                      f"1..{entry['node_count']}")


def run_one(stitchopt, models_dir, entry, work, timeout, exact):
    model_path = os.path.join(models_dir, entry["file"])
    if not os.path.isfile(model_path):
        raise Failure(f"{model_path} does not exist")
    out = os.path.join(work, entry["name"], "out")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    cmd = [stitchopt, model_path, "-o", out] + (["--no-simplify"] if exact else [])
    for flag in entry["input_shape_flags"]:
        cmd += ["--input-shape", flag]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"stitchopt timed out after {timeout}s: {' '.join(cmd)}")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise Failure(f"stitchopt exited {proc.returncode}: {' | '.join(tail)}")
    fused = os.path.join(out, "model.fused.onnx")
    if not os.path.isfile(fused):
        raise Failure(f"{fused} was not written")
    try:
        onnx.checker.check_model(fused, full_check=True)
    except Exception as e:  # checker raises ValidationError or InferenceError
        raise Failure(f"onnx checker rejects {fused}: {str(e).splitlines()[0]}")
    check_report(os.path.join(out, "report.json"), model_path, entry)
    feeds = random_feeds(entry)
    compare(run_ort(model_path, feeds), run_ort(fused, feeds), exact)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stitchopt", required=True, help="path to the stitchopt binary")
    ap.add_argument("--models", required=True, help="directory with manifest.json")
    ap.add_argument("--model", action="append", default=[],
                    help="test only this model (repeatable)")
    ap.add_argument("--work", help="keep outputs here (default: a temporary "
                                   "directory, removed afterwards)")
    ap.add_argument("--mode", choices=["exact", "simplified"], default="exact",
                    help="exact: --no-simplify, bit-identical outputs; simplified: the "
                         "default pipeline, float outputs within 1e-5 relative error")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds allowed per stitchopt run")
    args = ap.parse_args()

    manifest_path = os.path.join(args.models, "manifest.json")
    try:
        with open(manifest_path) as f:
            entries = json.load(f)["models"]
    except (OSError, ValueError, KeyError) as e:
        print(f"error: cannot read {manifest_path}: {e}", file=sys.stderr)
        return 2
    known = [e["name"] for e in entries]
    unknown = [m for m in args.model if m not in known]
    if unknown:
        print(f"error: unknown model(s) {unknown}; {manifest_path} lists {known}",
              file=sys.stderr)
        return 2
    if args.model:
        entries = [e for e in entries if e["name"] in args.model]
    stitchopt = os.path.abspath(args.stitchopt)
    if not os.access(stitchopt, os.X_OK):
        print(f"error: {stitchopt} is not an executable file", file=sys.stderr)
        return 2

    work = os.path.abspath(args.work) if args.work else tempfile.mkdtemp(
        prefix="stitchopt-roundtrip-")
    passed = failed = 0
    try:
        for entry in entries:
            start = time.monotonic()
            try:
                run_one(stitchopt, args.models, entry, work, args.timeout,
                        args.mode == "exact")
                passed += 1
                status = "PASS"
                detail = ""
            except Failure as e:
                failed += 1
                status = "FAIL"
                detail = f"  {e}"
            print(f"{status} {entry['name']:20s} {time.monotonic() - start:6.2f}s{detail}",
                  flush=True)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

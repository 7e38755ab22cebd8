#!/usr/bin/env python3
"""Every bundled model's compiled kernels on a real GPU, vs the reference.

For each model of models/manifest.json (or those given with --model):
  `stitchopt MODEL -o WORK/NAME` (the manifest's --input-shape flags), then
  `stitchopt run WORK/NAME`: libstitch_kernels.so is built with nvcc from the emitted
  .cu files, every step runs on the GPU (generated kernels, cuBLASLt / cuDNN library
  calls) in the planned device arena, and every graph output is compared with the
  reference interpreter on the same seeded inputs (float32 max |a-b|/max(|b|,1) <= 1e-5,
  float16/bfloat16 <= 1e-2, integers exact); `run` exits 3 on a mismatch.
A model passes when `run` exits 0, says "all N outputs match" and ran on the GPU.
Steps the CUDA backend declines run on the host and are reported in the line
"on the host: K" (printed, not failed).

Without a usable GPU (no driver, or cudaGetDeviceCount failing, e.g. error 35 on a
machine without one), `stitchopt run` says "no GPU (<reason>)": this script prints
"SKIP: <reason>" and exits 77, ctest's skip code. Exit 1 on any failure, 0 otherwise.

Usage: gpu_kernels.py --stitchopt PATH --models DIR [--model NAME]... [--work DIR]
"""
import argparse
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_outputs import Failure, manifest_entries, run_stitchopt, stitchopt_run  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--model", action="append", default=[], help="only these models")
    parser.add_argument("--work", help="keep the outputs here instead of a temporary directory")
    args = parser.parse_args()
    failures = []
    passed = 0
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or temporary
        os.makedirs(work, exist_ok=True)
        for entry in manifest_entries(args.models, args.model):
            name = entry["name"]
            try:
                entry, out = run_stitchopt(args.stitchopt, args.models, entry, {}, work, timeout=600)
            except Failure as failure:
                failures.append(f"{name}: {failure}")
                continue
            start = time.monotonic()
            outputs = len(entry["outputs"])
            matched, text = stitchopt_run(args.stitchopt, out, outputs, timeout=1200)
            seconds = time.monotonic() - start
            skipped = re.search(r"no GPU \((.*)\); running on the CPU", text)
            if skipped:
                print(f"SKIP: no usable GPU: {skipped.group(1)}")
                return 77
            host = re.search(r"on the host: (\d+)", text)
            if not matched:
                failures.append(f"{name}: {text}")
                continue
            errors = re.findall(r"max rel err (\S+)", text)
            print(f"PASS {name:20s} {outputs} outputs, largest error {max(map(float, errors)):.3g}, "
                  f"steps on the host: {host.group(1) if host else '?'} ({seconds:.1f} s)")
            passed += 1
    for failure in failures:
        print("FAIL " + failure)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""The runtime library's C and C++ APIs end to end (issue 38): compile bundled models
(mlp: float input; bert: integer inputs and a mask), then run
  - tests/runtime/api/c_api_test.c (a C program on the C ABI): emulated kernels
    against the reference interpreter, and every bad argument with its code;
  - tests/runtime/api/session_threads_test.cc (stitchopt::Session): 8 threads on one
    session and two sessions at once, results equal to the ones computed alone, and
    sessions opened and closed leaving the heap where it was;
  - with --device-test alone, tests/runtime/api/device_api_test.cc on a GPU (device
    tensors, a caller's stream, CUDA-graph replay, bad pointers, device memory after
    close); exit 77 (skipped) when it finds no GPU;
on each output directory. Exit 0 when every check passes.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_harness import Harness, input_shape_flags  # noqa: E402

MODELS = ["mlp", "bert"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--c-test")
    parser.add_argument("--threads-test")
    parser.add_argument("--device-test", help="tests/runtime/api/device_api_test.cc: exit 77 "
                                              "(skipped) when it has no GPU")
    args = parser.parse_args()
    binaries = [b for b in (args.c_test, args.threads_test, args.device_test) if b]
    skipped = []
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}
    h = Harness(args.stitchopt)
    with tempfile.TemporaryDirectory() as work:
        for name in MODELS:
            entry = entries[name]
            flags = input_shape_flags(entry)
            out = os.path.join(work, name)
            h.stitchopt(os.path.join(args.models, entry["file"]), "-o", out, "-q", *flags)
            for binary in binaries:
                proc = subprocess.run([binary, out], capture_output=True, text=True, timeout=900)
                text = proc.stdout + proc.stderr
                if binary == args.device_test and proc.returncode == 77:
                    print(text.strip())
                    skipped.append(name)
                    continue
                print(f"{os.path.basename(binary)} {name}: {text.strip().splitlines()[-1] if text.strip() else ''}")
                h.check(proc.returncode == 0 and "all checks passed" in text,
                        f"{os.path.basename(binary)} {out}: exit {proc.returncode}:\n{text[-3000:]}")
    if skipped and len(skipped) == len(MODELS) and binaries == [args.device_test]:
        return 77  # ctest: skipped (no GPU)
    return h.finish("runtime.api")


if __name__ == "__main__":
    sys.exit(main())

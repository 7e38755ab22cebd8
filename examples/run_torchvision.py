#!/usr/bin/env python3
"""Compile a torchvision model with stitchopt and run it from Python.

    .venv/bin/python examples/run_torchvision.py [--model resnet18] [--work DIR]

1. Exports the model with Debian's torch (/usr/bin/python3 with python3-torch and
   python3-torchvision; scripts/setup.sh installs them): random weights and a random
   batch, both seeded, opset 17. The torch output is kept for the comparison.
2. Compiles it: `stitchopt model.onnx -o DIR/out`.
3. Runs DIR/out through stitchopt.InferenceSession (ONNX Runtime's signature; the GPU
   when one is usable, else the generated kernels emulated on the CPU) and compares
   with onnxruntime on the exported model and with torch.

Run it with the test venv's python (scripts/setup.sh installs the stitchopt package
and onnxruntime there). Exit 1 when stitchopt differs from either by more than
--tolerance (max |a-b| / max |b|).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnxruntime
import stitchopt

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Runs under /usr/bin/python3 (Debian's torch): model, batch, torch's output, export.
EXPORT = r"""
import sys
import numpy as np
import torch
import torchvision
name, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
torch.manual_seed(0)
model = getattr(torchvision.models, name)(weights=None).eval()
x = torch.randn(batch, 3, 224, 224)
with torch.no_grad():
    y = model(x)
np.save(path + ".input.npy", x.numpy())
np.save(path + ".torch.npy", y.numpy())
torch.onnx.export(model, x, path, opset_version=17, input_names=["image"],
                  output_names=["logits"])
"""


def relative(a, b):
    return float(np.max(np.abs(a.astype(np.float64) - b))) / max(float(np.max(np.abs(b))), 1e-30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resnet18", help="a torchvision.models name")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--work", help="where the model and OUT go (default: a temporary "
                                       "directory)")
    parser.add_argument("--stitchopt", default=shutil.which("stitchopt") or
                        os.path.join(ROOT, "build", "bin", "stitchopt"))
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        return run(args, args.work)
    with tempfile.TemporaryDirectory(prefix="stitchopt-example-") as work:
        return run(args, work)


def run(args, work):
    """Exports, compiles and runs the model in `work`; 0 when it matches both peers."""
    model = os.path.join(work, args.model + ".onnx")
    out = os.path.join(work, "out")

    subprocess.run(["/usr/bin/python3", "-c", EXPORT, args.model, model, str(args.batch)],
                   check=True)
    subprocess.run([args.stitchopt, model, "-o", out, "--force", "-q"], check=True)
    image = np.load(model + ".input.npy")
    from_torch = np.load(model + ".torch.npy")

    start = time.monotonic()
    session = stitchopt.InferenceSession(out)       # was: onnxruntime.InferenceSession(model)
    opened = time.monotonic() - start
    feed = {session.get_inputs()[0].name: image}
    start = time.monotonic()
    logits, = session.run(None, feed)
    ran = time.monotonic() - start
    reference, = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"]).run(
        None, feed)

    print(f"{args.model}, batch {args.batch}: stitchopt on {session.backend} "
          f"({session.launch_mode}); opened in {opened:.1f} s, ran in {ran * 1e3:.1f} ms")
    worst = 0.0
    for peer, expected in (("onnxruntime", reference), ("torch", from_torch)):
        error = relative(logits, expected)
        worst = max(worst, error)
        print(f"  against {peer:<11}: max |a-b| / max |b| = {error:.2e}")
    print(f"  top-1 classes: stitchopt {logits.argmax(1).tolist()}, "
          f"torch {from_torch.argmax(1).tolist()}")
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())

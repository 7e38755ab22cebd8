#!/usr/bin/env python3
"""Node counts after stitchopt's simplification next to onnxsim and onnxslim.

For every bundled model (models/manifest.json), at the manifest's static input
shapes, prints one Markdown table row:

  model | nodes in | stitchopt simplified (before opening compound ops) |
  stitchopt default pipeline (compound ops opened) | onnxsim | onnxslim

"stitchopt simplified" is `stitchopt --disable-pass decompose`, the like-for-like
comparison: the peers never open compound ops. Counts are top-level graph nodes of
the written models. Usage (from the repository root, after scripts/setup.sh and
`.venv/bin/pip install -r bench/requirements.txt`):

  .venv/bin/python bench/simplify_peers.py [--stitchopt build/bin/stitchopt]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import onnx

from model_manifest import input_shapes


def stitchopt_nodes(binary, model_path, flags, extra, work):
    out = os.path.join(work, "out")
    cmd = [binary, model_path, "-o", out, "-q"] + extra
    for flag in flags:
        cmd += ["--input-shape", flag]
    subprocess.run(cmd, check=True)
    return len(onnx.load(os.path.join(out, "model.fused.onnx"), load_external_data=False).graph.node)


def peer_nodes(tool, model_path, shapes):
    model = onnx.load(model_path)
    if tool == "onnxsim":
        import onnxsim
        simplified, ok = onnxsim.simplify(model, overwrite_input_shapes=shapes or None)
        if not ok:
            return "check failed"
        return len(simplified.graph.node)
    import onnxslim
    flags = [f"{name}:{','.join(map(str, dims))}" for name, dims in shapes.items()]
    simplified = onnxslim.slim(model, input_shapes=flags or None)
    return len(simplified.graph.node)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", default="build/bin/stitchopt")
    parser.add_argument("--models", default="models")
    args = parser.parse_args()
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    print("| model | nodes in | stitchopt simplified | stitchopt + opened compound ops "
          "| onnxsim 0.8.1 | onnxslim 0.1.98 |")
    print("|---|---:|---:|---:|---:|---:|")
    for entry in entries:
        path = os.path.join(args.models, entry["file"])
        flags = entry["input_shape_flags"]
        shapes = input_shapes(flags)
        with tempfile.TemporaryDirectory() as work:
            ours = stitchopt_nodes(args.stitchopt, path, flags, ["--disable-pass", "decompose"], work)
            opened = stitchopt_nodes(args.stitchopt, path, flags, [], work)
        row = [entry["name"], entry["node_count"], ours, opened,
               peer_nodes("onnxsim", path, shapes), peer_nodes("onnxslim", path, shapes)]
        print("| " + " | ".join(str(cell) for cell in row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The fused attention against the library path at sizes past the launch-bound ones.

For each size below, an ONNX model of scaled dot-product attention with an additive
padding mask (BERT's form: Q K^T / sqrt(d) + mask, Softmax, P V) is compiled twice,
`stitchopt MODEL -o OUT` (the attention composition) and `--no-attention` (the plan
without it: cuBLAS QK^T and PV around a fused softmax kernel), each profiled with
`stitchopt profile OUT --emulate` (docs/perf-model.md: estimates, not GPU timings),
and printed side by side with the memory floor of the attention kernel (its inputs
and outputs at the profile's bandwidth, plus one launch).

Usage: attention_sizes.py --stitchopt PATH [--nvdisasm PATH] [--keep DIR]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

# (batch, heads, sequence, head dim, element type)
SIZES = [
    (8, 8, 64, 32, T.FLOAT),
    (4, 8, 256, 64, T.FLOAT),
    (4, 8, 256, 64, T.FLOAT16),
]


def attention_model(batch, heads, seq, dim, elem):
    scale = helper.make_tensor("scale", elem, [], [math.sqrt(dim)])
    mask = np.zeros((batch, 1, 1, seq), np.float32)
    mask[:, :, :, seq - seq // 8:] = -10000.0
    mask_tensor = numpy_helper.from_array(mask.astype(np.float16 if elem == T.FLOAT16 else np.float32), "mask")
    nodes = [helper.make_node("Transpose", ["k"], ["k_t"], perm=[0, 1, 3, 2], name="k_t"),
             helper.make_node("MatMul", ["q", "k_t"], ["s"], name="qk"),
             helper.make_node("Div", ["s", "scale"], ["scaled"], name="scale"),
             helper.make_node("Add", ["scaled", "mask"], ["masked"], name="mask"),
             helper.make_node("Softmax", ["masked"], ["p"], axis=-1, name="softmax"),
             helper.make_node("MatMul", ["p", "v"], ["o"], name="pv")]
    shape = [batch, heads, seq, dim]
    graph = helper.make_graph(nodes, "attention",
                              [helper.make_tensor_value_info(n, elem, shape) for n in ("q", "k", "v")],
                              [helper.make_tensor_value_info("o", elem, shape)],
                              initializer=[scale, mask_tensor])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="bench/attention_sizes.py")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def profile(stitchopt, model_path, out, flags, nvdisasm):
    subprocess.run([stitchopt, model_path, "-o", out, "-q", "--force"] + flags, check=True)
    command = [stitchopt, "profile", out, "--emulate"]
    if nvdisasm:
        command += ["--nvdisasm", nvdisasm]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=3600)
    with open(os.path.join(out, "profile.json")) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--nvdisasm", help="nvdisasm for the instruction estimate")
    parser.add_argument("--keep", help="write the models and outputs here")
    args = parser.parse_args()
    print(f"{'size (B, H, L, d, type)':28s} {'fused us':>9s} {'launches':>8s} {'no-attention us':>15s} "
          f"{'launches':>8s} {'ratio':>6s}  attention kernel: est / floor, bound")
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or temporary
        os.makedirs(work, exist_ok=True)
        for batch, heads, seq, dim, elem in SIZES:
            label = f"{batch}x{heads}x{seq}x{dim} {'f16' if elem == T.FLOAT16 else 'f32'}"
            name = label.replace(" ", "_")
            path = os.path.join(work, name + ".onnx")
            onnx.save(attention_model(batch, heads, seq, dim, elem), path)
            fused = profile(args.stitchopt, path, os.path.join(work, name), [], args.nvdisasm)
            library = profile(args.stitchopt, path, os.path.join(work, name + "_no_attention"),
                              ["--no-attention"], args.nvdisasm)
            kernel = next((k for k in fused["kernels"] if k["composition"] == "attention"), None)
            if kernel is None:
                detail = "none: the planner kept the library path"
            else:
                terms = kernel["terms_us"]
                dram = terms["dram"] * kernel["ideal_bytes"] / kernel["dram_bytes"] if kernel["dram_bytes"] else 0
                floor = terms["launch"] + dram
                detail = (f"{kernel['estimated_us']:.1f} / {floor:.1f} us ({kernel['estimated_us'] / floor:.2f}x), "
                          f"{kernel['bound']}")
            print(f"{label:28s} {fused['total_estimated_us']:9.1f} {len(fused['kernels']):8d} "
                  f"{library['total_estimated_us']:15.1f} {len(library['kernels']):8d} "
                  f"{library['total_estimated_us'] / fused['total_estimated_us']:5.2f}x  {detail}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

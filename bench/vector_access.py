#!/usr/bin/env python3
"""128-bit accesses of the thread and row compositions, on memory-bound kernels.

Each model below is one kernel over float32 tensors of 4M elements (16 MB each). The
thread composition: a tanh GELU (the whole chain inlined, one input), a bias +
residual + ReLU (a broadcast bias along the last axis), and a per-row scale and column
bias (one element per run of 4 read from the scale). The row compositions (each lane
walks runs of 4 elements of its row): LayerNorm over rows of 256 and 768 (a warp per
row), a residual Add stored and normalized (the sum read back through its windows)
and a softmax over rows of 1024 (a warp per row). Each is compiled with `stitchopt MODEL -o
OUT` and profiled with `stitchopt profile OUT --emulate` (docs/perf-model.md:
estimates from the CUDA emulation and the kernel's SASS, not GPU timings). With
--baseline, a second stitchopt binary (a build without the 128-bit path) compiles and
profiles the same models in the same run, and the table puts both side by side.

Printed per model and binary: the kernel's vector width (kernels.json), its global
load and store requests (warp-level), its issued warp instructions, the estimated
time, its memory floor (launch + the DRAM term scaled to the kernel's ideal bytes)
and the bound the model names.

Usage: vector_access.py --stitchopt PATH [--baseline PATH] [--nvdisasm PATH] [--keep DIR]
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attention_sizes  # noqa: E402  (its profile(): compile, then `stitchopt profile --emulate`)

ROWS, COLS = 1024, 4096


def model(name, inputs, nodes, output, initializers=(), dims=(ROWS, COLS)):
    outputs = [output] if isinstance(output, str) else output
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, T.FLOAT, d) for n, d in inputs],
                              [helper.make_tensor_value_info(o, T.FLOAT, list(dims))
                               for o in outputs],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="bench/vector_access.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def scalar(name, value):
    return helper.make_tensor(name, T.FLOAT, [], [value])


def gelu():
    nodes = [helper.make_node("Mul", ["x", "x"], ["x2"], name="square"),
             helper.make_node("Mul", ["x2", "x"], ["x3"], name="cube"),
             helper.make_node("Mul", ["x3", "c"], ["x3c"], name="scale_cube"),
             helper.make_node("Add", ["x", "x3c"], ["inner"], name="inner"),
             helper.make_node("Mul", ["inner", "k"], ["arg"], name="arg"),
             helper.make_node("Tanh", ["arg"], ["t"], name="tanh"),
             helper.make_node("Add", ["t", "one"], ["t1"], name="one_plus"),
             helper.make_node("Mul", ["x", "t1"], ["xt"], name="x_times"),
             helper.make_node("Mul", ["xt", "half"], ["y"], name="half")]
    return model("gelu", [("x", [ROWS, COLS])], nodes, "y",
                 [scalar("c", 0.044715), scalar("k", 0.7978845608), scalar("one", 1.0),
                  scalar("half", 0.5)])


def bias_residual_relu():
    bias = numpy_helper.from_array(np.linspace(-1, 1, COLS, dtype=np.float32), "bias")
    nodes = [helper.make_node("Add", ["x", "bias"], ["xb"], name="bias"),
             helper.make_node("Add", ["xb", "r"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["y"], name="relu")]
    return model("bias_residual_relu", [("x", [ROWS, COLS]), ("r", [ROWS, COLS])], nodes, "y",
                 [bias])


def row_scale():
    bias = numpy_helper.from_array(np.linspace(-1, 1, COLS, dtype=np.float32), "bias")
    nodes = [helper.make_node("Mul", ["x", "s"], ["xs"], name="row_scale"),
             helper.make_node("Add", ["xs", "bias"], ["y"], name="column_bias")]
    return model("row_scale", [("x", [ROWS, COLS]), ("s", [ROWS, 1])], nodes, "y", [bias])


def layernorm_nodes(x, y):
    return [helper.make_node("LayerNormalization", [x, "gamma", "beta"], [y], axis=-1,
                             epsilon=1e-5, name="layernorm")]


def layernorm_params(cols):
    return [numpy_helper.from_array(np.linspace(0.5, 1.5, cols, dtype=np.float32), "gamma"),
            numpy_helper.from_array(np.linspace(-0.1, 0.1, cols, dtype=np.float32), "beta")]


def layernorm(cols):
    def make():
        rows = ROWS * COLS // cols
        return model(f"layernorm_{cols}", [("x", [rows, cols])], layernorm_nodes("x", "y"), "y",
                     layernorm_params(cols), (rows, cols))
    return make


def residual_layernorm():
    cols = 768
    rows = ROWS * COLS // cols
    nodes = [helper.make_node("Add", ["x", "r"], ["s"], name="residual")] + \
        layernorm_nodes("s", "y")
    return model("residual_layernorm", [("x", [rows, cols]), ("r", [rows, cols])], nodes,
                 ["s", "y"], layernorm_params(cols), (rows, cols))


def softmax():
    cols = 1024
    rows = ROWS * COLS // cols
    nodes = [helper.make_node("Softmax", ["x"], ["y"], axis=-1, name="softmax")]
    return model("softmax_1024", [("x", [rows, cols])], nodes, "y", (), (rows, cols))


MODELS = [gelu, bias_residual_relu, row_scale, layernorm(256), layernorm(768),
          residual_layernorm, softmax]


def profile(stitchopt, model_path, out, nvdisasm):
    profile_json = attention_sizes.profile(stitchopt, model_path, out, [], nvdisasm)
    with open(os.path.join(out, "kernels", "kernels.json")) as f:
        widths = {k["name"]: k.get("vector_width", 1) for k in json.load(f)["kernels"]}
    kernels = [k for k in profile_json["kernels"] if k["kind"] == "kernel"]
    if len(kernels) != 1:
        raise SystemExit(f"{model_path}: expected one kernel, got {len(kernels)}")
    k = kernels[0]
    terms = k["terms_us"]
    dram = terms["dram"] * k["ideal_bytes"] / k["dram_bytes"] if k["dram_bytes"] else 0
    instructions = k.get("instructions", {}).get("total", 0)
    return {"width": widths.get(k["kernel"], 1), "loads": k["global"]["load_requests"],
            "stores": k["global"]["store_requests"], "instructions": instructions,
            "us": k["estimated_us"], "floor": terms["launch"] + dram, "bound": k["bound"],
            "composition": k["composition"]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--baseline", help="a second stitchopt to compare with")
    parser.add_argument("--nvdisasm", help="nvdisasm for the instruction estimate")
    parser.add_argument("--keep", help="write the models and outputs here")
    args = parser.parse_args()
    binaries = [("this", args.stitchopt)] + ([("baseline", args.baseline)] if args.baseline else [])
    print(f"{'model':20s} {'binary':9s} {'width':>5s} {'load req':>9s} {'store req':>9s} "
          f"{'warp instr':>10s} {'est us':>7s} {'floor us':>8s} {'bound':8s}")
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or temporary
        os.makedirs(work, exist_ok=True)
        for make in MODELS:
            m = make()
            path = os.path.join(work, m.graph.name + ".onnx")
            onnx.save(m, path)
            rows = {}
            for label, binary in binaries:
                rows[label] = r = profile(binary, path, os.path.join(work, f"{m.graph.name}_{label}"),
                                          args.nvdisasm)
                print(f"{m.graph.name:20s} {label:9s} {r['width']:5d} {r['loads']:9d} "
                      f"{r['stores']:9d} {r['instructions']:10.3g} {r['us']:7.2f} "
                      f"{r['floor']:8.2f} {r['bound']:8s}")
            if args.baseline:
                this, base = rows["this"], rows["baseline"]
                print(f"{'':20s} {'ratio':9s} {'':5s} {base['loads'] / max(this['loads'], 1):8.2f}x "
                      f"{base['stores'] / max(this['stores'], 1):8.2f}x "
                      f"{base['instructions'] / max(this['instructions'], 1):9.2f}x "
                      f"{base['us'] / this['us']:6.2f}x")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Library calls with their pointwise epilogue, end to end (fusion/epilogue.h).

A dense Conv is a cuDNN call and a large MatMul a cuBLASLt one; the planner may fold
the pointwise ops after them into the call. float32 keeps the legacy form (bias, residual add, a final ReLU:
cudnnConvolutionBiasActivationForward); a float16 or bfloat16 Conv with even channel
counts (a MatMul: even K and N) takes any chain of bias, per-channel scale, ReLU,
clip, sigmoid, tanh, SiLU, hard-sigmoid, hard-swish and GELU (erf or tanh) as one cuDNN graph (runtime_stub/cuda/cudnn_graph.h, whose
graphs tests/runtime/cudnn/ pins). This test writes small CNN blocks and for each:

  1. `stitchopt MODEL -o OUT` must give the named Conv or MatMul the expected library epilogue
     (report.json's groups[].epilogue), and no generated kernel may be a lone
     activation (Clip, Sigmoid, Mul, HardSwish, HardSigmoid, Tanh) reading a library
     call's output;
  2. ONNX Runtime must give the same outputs for MODEL and OUT/model.fused.onnx (the
     fused nodes' function bodies), within 1e-5 (float32) or 1e-3 (float16) (ONNX's
     Conv takes no bfloat16 at opset 17, so no bfloat16 model here);
  3. `stitchopt run OUT --emulate` must match the reference interpreter;
  4. with --nvcc, the generated kernels go through nvcc and NVRTC.

Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: library_epilogues.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_outputs import run_small_model_cases  # noqa: E402
from stencil_schedules import conv, graph_model, silu  # noqa: E402

F, H = T.FLOAT, T.FLOAT16
NUMPY = {F: np.float32, H: np.float16}
ACTIVATIONS = {"Clip", "Sigmoid", "Mul", "HardSwish", "HardSigmoid", "Tanh", "Relu"}


def weights(name, shape, seed, elem):
    data = np.random.default_rng(seed).standard_normal(shape) / 4
    return numpy_helper.from_array(data.astype(NUMPY[elem]), name)


def bounds(elem, low=0.0, high=6.0):
    return [helper.make_tensor("lo", elem, [], [low]), helper.make_tensor("hi", elem, [], [high])]


def expand_dw_project(name, elem):
    """MobileNetV2's inverted residual: 1x1 expand + ReLU6, 3x3 depthwise + ReLU6,
    1x1 project, residual add."""
    return graph_model(name, [("x", elem, [1, 16, 28, 28])],
                       [conv("x", "e", "we", "be"),
                        helper.make_node("Clip", ["e", "lo", "hi"], ["e6"], name="e6"),
                        conv("e6", "d", "wd", "bd", group=64, pads=[1, 1, 1, 1]),
                        helper.make_node("Clip", ["d", "lo", "hi"], ["d6"], name="d6"),
                        conv("d6", "p", "wp", "bp"),
                        helper.make_node("Add", ["p", "x"], ["y"], name="y")],
                       [("y", elem)],
                       [weights("we", [64, 16, 1, 1], 1, elem), weights("be", [64], 2, elem),
                        weights("wd", [64, 1, 3, 3], 3, elem), weights("bd", [64], 4, elem),
                        weights("wp", [16, 64, 1, 1], 5, elem), weights("bp", [16], 6, elem)]
                       + bounds(elem))


def stem_silu(name, elem):
    """EfficientNet's stem: a strided 3x3 conv + SiLU, then a global mean."""
    return graph_model(name, [("x", elem, [1, 4, 32, 32])],
                       [conv("x", "c", "w", "b", strides=[2, 2], pads=[1, 1, 1, 1])]
                       + silu("c", "a")
                       + [helper.make_node("ReduceMean", ["a"], ["y"], name="y", axes=[2, 3])],
                       [("y", elem)],
                       [weights("w", [32, 4, 3, 3], 7, elem), weights("b", [32], 8, elem)])


def hardswish_block(name, elem):
    """MobileNetV3: conv (no bias) + per-channel scale and shift (an unfolded
    BatchNorm) + HardSwish (which the decompose pass opens into five nodes), then a
    1x1 conv + Tanh and a channel mean."""
    return graph_model(name, [("x", elem, [1, 8, 20, 20])],
                       [conv("x", "c", "w", pads=[1, 1, 1, 1]),
                        helper.make_node("Mul", ["c", "s"], ["m"], name="scale"),
                        helper.make_node("Add", ["m", "t"], ["a"], name="shift"),
                        helper.make_node("HardSwish", ["a"], ["h"], name="hardswish"),
                        conv("h", "q", "wq"),
                        helper.make_node("Tanh", ["q"], ["u"], name="u"),
                        helper.make_node("ReduceMean", ["u"], ["y"], name="y", axes=[1])],
                       [("y", elem)],
                       [weights("w", [16, 8, 3, 3], 9, elem), weights("s", [16, 1, 1], 10, elem),
                        weights("t", [16, 1, 1], 11, elem), weights("wq", [8, 16, 1, 1], 12, elem)])


def matmul_tanh(name, elem):
    """An MLP: MatMul over a batch of rows + bias + Tanh, a second MatMul (a library
    call, so the Tanh has no generated kernel to join), then a mean over the
    features."""
    return graph_model(name, [("x", elem, [2, 64, 256])],
                       [helper.make_node("MatMul", ["x", "w"], ["m"], name="m"),
                        helper.make_node("Add", ["m", "b"], ["a"], name="a"),
                        helper.make_node("Tanh", ["a"], ["t"], name="t"),
                        helper.make_node("MatMul", ["t", "w2"], ["n"], name="n"),
                        helper.make_node("ReduceMean", ["n"], ["y"], name="y", axes=[2])],
                       [("y", elem)],
                       [weights("w", [256, 128], 13, elem), weights("b", [128], 14, elem),
                        weights("w2", [128, 256], 15, elem)])


def matmul_gelu(name, elem):
    """A transformer MLP: MatMul + bias + GELU as PyTorch exports it at opset 17
    (x / sqrt(2), Erf, + 1, times x, times 1/2), a second MatMul, a mean."""
    def scalar(value_name, value):
        return numpy_helper.from_array(np.array(value, dtype=NUMPY[elem]), value_name)
    return graph_model(name, [("x", elem, [2, 32, 128])],
                       [helper.make_node("MatMul", ["x", "w"], ["m"], name="m"),
                        helper.make_node("Add", ["m", "b"], ["a"], name="a"),
                        helper.make_node("Div", ["a", "sqrt2"], ["s"], name="s"),
                        helper.make_node("Erf", ["s"], ["e"], name="e"),
                        helper.make_node("Add", ["e", "one"], ["p"], name="p"),
                        helper.make_node("Mul", ["a", "p"], ["g"], name="g"),
                        helper.make_node("Mul", ["g", "half"], ["t"], name="t"),
                        helper.make_node("MatMul", ["t", "w2"], ["n"], name="n"),
                        helper.make_node("ReduceMean", ["n"], ["y"], name="y", axes=[2])],
                       [("y", elem)],
                       [weights("w", [128, 256], 16, elem), weights("b", [256], 17, elem),
                        weights("w2", [256, 128], 18, elem), scalar("sqrt2", 2 ** 0.5),
                        scalar("one", 1.0), scalar("half", 0.5)])


def matmul_gelu_tanh(name, elem):
    """GPT-2's MLP: MatMul + bias + the tanh GELU as PyTorch 1.13 exports it at opset 17
    (x * x * x, times 0.044715, + x, times sqrt(2 / pi), Tanh, + 1, times x, times 1/2),
    a second MatMul, a mean."""
    def scalar(value_name, value):
        return numpy_helper.from_array(np.array(value, dtype=NUMPY[elem]), value_name)
    return graph_model(name, [("x", elem, [2, 32, 128])],
                       [helper.make_node("MatMul", ["x", "w"], ["m"], name="m"),
                        helper.make_node("Add", ["b", "m"], ["a"], name="a"),
                        helper.make_node("Mul", ["a", "a"], ["q"], name="q"),
                        helper.make_node("Mul", ["a", "q"], ["c"], name="c"),
                        helper.make_node("Mul", ["kappa", "c"], ["k"], name="k"),
                        helper.make_node("Add", ["a", "k"], ["i"], name="i"),
                        helper.make_node("Mul", ["beta", "i"], ["s"], name="s"),
                        helper.make_node("Tanh", ["s"], ["e"], name="e"),
                        helper.make_node("Add", ["one", "e"], ["p"], name="p"),
                        helper.make_node("Mul", ["a", "p"], ["g"], name="g"),
                        helper.make_node("Mul", ["half", "g"], ["t"], name="t"),
                        helper.make_node("MatMul", ["t", "w2"], ["n"], name="n"),
                        helper.make_node("ReduceMean", ["n"], ["y"], name="y", axes=[2])],
                       [("y", elem)],
                       [weights("w", [128, 256], 19, elem), weights("b", [256], 20, elem),
                        weights("w2", [256, 128], 21, elem), scalar("kappa", 0.044715),
                        scalar("beta", (2 / np.pi) ** 0.5), scalar("one", 1.0),
                        scalar("half", 0.5)])


# (name, model, {Conv/MatMul output name: the epilogue of its library group, None when
# it is a library call alone}[, the activations allowed to be a kernel alone])
CASES = [
    # float32: the expand conv's ReLU6 joins the depthwise stencil's kernel (None: the
    # conv is a lone library call), the SiLU a generated kernel.
    ("f32_inverted_residual", expand_dw_project("f32_inverted_residual", F),
     {"e": None, "p": ["bias", "residual add"]}),
    ("f16_inverted_residual", expand_dw_project("f16_inverted_residual", H),
     {"e": ["bias", "clip(0,6)"], "p": ["bias", "residual add"]}),
    ("f32_stem_silu", stem_silu("f32_stem_silu", F), {"c": None}),
    ("f16_stem_silu", stem_silu("f16_stem_silu", H), {"c": ["bias", "swish"]}),
    ("f16_hardswish", hardswish_block("f16_hardswish", H),
     {"c": ["scale", "bias", "hardswish"], "q": ["tanh"]}),
    # cuBLASLt has no Tanh epilogue: float32 keeps the bias in cuBLASLt and the Tanh
    # is a kernel alone between the two calls; float16 takes the chain as a cuDNN graph.
    ("f32_matmul_tanh", matmul_tanh("f32_matmul_tanh", F), {"m": ["bias"]}, {"t"}),
    ("f16_matmul_tanh", matmul_tanh("f16_matmul_tanh", H), {"m": ["bias", "tanh"]}),
    # GELU: cuBLASLt's GELU epilogue is the tanh approximation, so float32 keeps the
    # bias only (the GELU's five nodes are a generated kernel); float16 takes the erf
    # GELU into the cuDNN graph (GELU_FWD).
    ("f32_matmul_gelu", matmul_gelu("f32_matmul_gelu", F), {"m": ["bias"]}),
    ("f16_matmul_gelu", matmul_gelu("f16_matmul_gelu", H), {"m": ["bias", "gelu"]}),
    # The tanh GELU: float32 keeps the bias only (cuBLASLt's GELU epilogue would compute
    # it, but its accuracy against the float32 reference is not known without a GPU);
    # float16 takes it into the cuDNN graph (GELU_APPROX_TANH_FWD).
    ("f32_matmul_gelu_tanh", matmul_gelu_tanh("f32_matmul_gelu_tanh", F), {"m": ["bias"]}),
    ("f16_matmul_gelu_tanh", matmul_gelu_tanh("f16_matmul_gelu_tanh", H),
     {"m": ["bias", "gelu_tanh"]}),
]
MODELS = {name: model for name, model, *_ in CASES}


def ort_problems(name, out):
    """ONNX Runtime on the model and on the rewritten one; failure lines."""
    model = MODELS[name]
    elem = model.graph.input[0].type.tensor_type.elem_type
    import onnxruntime as ort
    dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    feed = {"x": np.random.default_rng(0).standard_normal(dims).astype(NUMPY[elem])}
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    want = ort.InferenceSession(model.SerializeToString(), options).run(None, feed)
    got = ort.InferenceSession(os.path.join(out, "model.fused.onnx"), options).run(None, feed)
    tolerance = 1e-5 if elem == F else 1e-3
    problems = []
    for a, b in zip(want, got):
        a, b = a.astype(np.float64), b.astype(np.float64)
        error = np.max(np.abs(a - b) / (np.abs(a) + 1.0))
        if not error <= tolerance:
            problems.append(f"{name}: ONNX Runtime differs on the rewritten model by {error:.3g}")
    return problems


def check(name, expected, kernels, out):
    epilogues, lone_allowed = expected[0], (expected[1] if len(expected) > 1 else set())
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    problems = []
    found = {}
    library_outputs = set()
    for group in report["groups"]:
        if group.get("category") != "library":
            continue
        nodes = group.get("nodes", [])
        for node in nodes:
            for origin in node.get("origin", [node["name"]]):
                found[origin] = group.get("epilogue", [])
        library_outputs.add(nodes[-1]["name"] if nodes else "")
    for conv_name, want in epilogues.items():
        got = found.get(conv_name)
        if got != want:
            problems.append(f"{name}: {conv_name} has library epilogue {got}, expected {want}")
    # No generated kernel is a single activation right after a library call.
    for entry in report["groups"] + report.get("unfused", []):
        nodes = entry.get("nodes", [entry])
        if (entry.get("codegen") and len(nodes) == 1 and nodes[0].get("op") in ACTIVATIONS
                and nodes[0]["name"] not in lone_allowed):
            problems.append(f"{name}: {nodes[0]['name']} ({nodes[0]['op']}) is a kernel alone")
    problems += ort_problems(name, out)
    return problems, ", ".join(f"{c}: {found.get(c)}" for c in epilogues)


if __name__ == "__main__":
    sys.exit(run_small_model_cases(CASES, check))

#!/usr/bin/env python3
"""The attention composition (docs/codegen.md, "Attention"), checked end to end.

Each case below is a small ONNX model holding scaled dot-product attention in one of
the forms exporters write: a scale (Mul or Div), an additive padding mask or bias, a
causal mask through Where, the head split (Split, Reshape, Transpose) before it,
Swin's window mask added through views, partial tiles (key counts and query rows
that are not multiples of the tiles, head
dims that are not multiples of 4 or 32), broadcast batch dims, several key tiles
(the online softmax rescales), GEMMs over the fused 64x64x64 limit, and float16 /
bfloat16 on tensor cores and on CUDA cores. For each:

  1. `stitchopt MODEL -o OUT` must give the attention a kernel whose report.json
     composition is "attention" (float16/bfloat16 with head dims of 16k: on tensor
     cores, mma.sync m16n8k16 emulated fragment by fragment);
  2. `stitchopt run OUT --emulate` compiles the emitted .cu against the CUDA
     emulation layer, runs it on seeded random inputs and compares every output
     with the reference interpreter (float32 1e-5, float16 1e-2);
  3. with --nvcc, every emitted kernel also goes through compile_kernels.py (nvcc
     sm_80/sm_90 with warnings as errors, and NVRTC with --nvrtc-check).

Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: attention_schedules.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_outputs import run_small_model_cases  # noqa: E402

OPSET = 17


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(name, inputs, nodes, outputs, initializers=(), elem=T.FLOAT):
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, elem, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, elem, s) for n, s in outputs],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="tests/codegen/attention_schedules.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def attention(q, k_t, v, out, scale=None, divide=False, extra=()):
    """S = q @ k_t, scaled, then each (op, operand) of `extra`, Softmax, @ v."""
    nodes = [node("MatMul", [q, k_t], ["s"])]
    last = "s"
    if scale is not None:
        nodes.append(node("Div" if divide else "Mul", [last, "scale"], ["scaled"]))
        last = "scaled"
    for i, (op, operand) in enumerate(extra):
        name = f"masked{i}"
        nodes.append(node("Where", [operand, last, "neg_inf"], [name]) if op == "Where"
                     else node(op, [last, operand], [name]))
        last = name
    nodes += [node("Softmax", [last], ["p"], axis=-1), node("MatMul", ["p", v], [out])]
    initializers = []
    if scale is not None:
        initializers.append(const("scale", np.float32(scale)))
    if any(op == "Where" for op, _ in extra):
        initializers.append(const("neg_inf", np.float32(-np.inf)))
    return nodes, initializers


def transpose_keys(k, perm=(0, 1, 3, 2)):
    return node("Transpose", [k], ["k_t"], perm=list(perm))


def case_plain():
    # 40 keys (a partial second tile), 40 query rows, d 24, dv 20 (lanes past 20 idle).
    nodes, inits = attention("q", "k_t", "v", "o", scale=1 / math.sqrt(24))
    return model("plain", [("q", [2, 4, 40, 24]), ("k", [2, 4, 40, 24]), ("v", [2, 4, 40, 20])],
                 [transpose_keys("k")] + nodes, [("o", [2, 4, 40, 20])], inits)


def case_padding_mask():
    # BERT: divide by sqrt(d), add a [B, 1, 1, Lk] mask of 0 / -10000.
    mask = np.zeros((2, 1, 1, 32), np.float32)
    mask[0, 0, 0, 20:] = -10000.0
    nodes, inits = attention("q", "k_t", "v", "o", scale=math.sqrt(16), divide=True,
                             extra=[("Add", "mask")])
    return model("padding_mask", [("q", [2, 3, 32, 16]), ("k", [2, 3, 32, 16]), ("v", [2, 3, 32, 16])],
                 [transpose_keys("k")] + nodes, [("o", [2, 3, 32, 16])], inits + [const("mask", mask)])


def case_causal():
    # GPT-2: Where(lower triangle, S / sqrt(d), -inf); 70 keys over three tiles.
    tril = np.tril(np.ones((70, 70), bool)).reshape(1, 1, 70, 70)
    nodes, inits = attention("q", "k_t", "v", "o", scale=1 / 8.0, extra=[("Where", "causal")])
    return model("causal", [("q", [1, 2, 70, 64]), ("k", [1, 2, 70, 64]), ("v", [1, 2, 70, 64])],
                 [transpose_keys("k")] + nodes, [("o", [1, 2, 70, 64])], inits + [const("causal", tril)])


def case_bias_odd_dims():
    # A per-head additive bias [1, H, Lq, Lk]; d = 6 (no four-float loads), Lq = 3.
    bias = np.random.default_rng(3).standard_normal((1, 2, 3, 9)).astype(np.float32)
    nodes, inits = attention("q", "k_t", "v", "o", extra=[("Add", "bias")])
    return model("bias_odd_dims", [("q", [2, 2, 3, 6]), ("k", [2, 2, 9, 6]), ("v", [2, 2, 9, 5])],
                 [transpose_keys("k")] + nodes, [("o", [2, 2, 3, 5])], inits + [const("bias", bias)])


def case_head_split():
    # GPT-2's prologue: x [B, L, 3 x H x d] + bias -> Split -> Reshape -> Transpose,
    # and the output back to [B, L, H x d] (outside the attention).
    b, l, h, d = 2, 24, 4, 8
    nodes = [node("Add", ["x", "qkv_bias"], ["qkv"]),
             node("Split", ["qkv", "split"], ["q0", "k0", "v0"], axis=2)]
    for name, perm in (("q", [0, 2, 1, 3]), ("k_t", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
        nodes += [node("Reshape", [name[0] + "0", "heads"], [name + "_r"]),
                  node("Transpose", [name + "_r"], [name], perm=perm)]
    core, inits = attention("q", "k_t", "v", "o", scale=1 / math.sqrt(d), divide=False)
    nodes += core + [node("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3]),
                     node("Reshape", ["o_t", "merged"], ["y"])]
    inits += [const("qkv_bias", np.linspace(-1, 1, 3 * h * d).astype(np.float32)),
              const("split", np.array([h * d] * 3, np.int64)),
              const("heads", np.array([b, l, h, d], np.int64)),
              const("merged", np.array([b, l, h * d], np.int64))]
    return model("head_split", [("x", [b, l, 3 * h * d])], nodes, [("y", [b, l, h * d])], inits)


def case_window_mask():
    # Swin's shifted windows: S of [windows x batch, heads, N, N] plus a relative
    # position bias, viewed as [batch, windows, heads, N, N] to add the window mask, and
    # viewed back before the Softmax: views inside the score chain.
    b, w, h, n, d = 2, 4, 3, 16, 8
    bias = np.random.default_rng(5).standard_normal((1, h, n, n)).astype(np.float32)
    mask = np.where(np.random.default_rng(6).random((1, w, 1, n, n)) < 0.3, -100.0, 0.0).astype(np.float32)
    nodes = [transpose_keys("k"), node("MatMul", ["q", "k_t"], ["s"]),
             node("Add", ["s", "bias"], ["biased"]),
             node("Reshape", ["biased", "windows"], ["by_window"]),
             node("Add", ["by_window", "mask"], ["masked"]),
             node("Reshape", ["masked", "flat"], ["x"]),
             node("Softmax", ["x"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["o"])]
    inits = [const("bias", bias), const("mask", mask),
             const("windows", np.array([b, w, h, n, n], np.int64)),
             const("flat", np.array([b * w, h, n, n], np.int64))]
    shape = [b * w, h, n, d]
    return model("window_mask", [("q", shape), ("k", shape), ("v", shape)], nodes, [("o", shape)],
                 inits)


def case_many_tiles():
    # 300 keys in ten tiles, scores scaled up so the running max moves often.
    nodes, inits = attention("q", "k_t", "v", "o", scale=4.0)
    return model("many_tiles", [("q", [1, 2, 50, 32]), ("k", [1, 2, 300, 32]), ("v", [1, 2, 300, 32])],
                 [transpose_keys("k")] + nodes, [("o", [1, 2, 50, 32])], inits)


def case_broadcast_batch():
    # K and V shared across the batch: [H, d, Lk] and [H, Lk, dv] against Q [B, H, Lq, d].
    nodes, inits = attention("q", "k_t", "v", "o", scale=0.5)
    return model("broadcast_batch", [("q", [3, 2, 16, 8]), ("k_t", [2, 8, 16]), ("v", [2, 16, 8])],
                 nodes, [("o", [3, 2, 16, 8])], inits)


def case_over_gemm_limit():
    # 128 x 128 x 64 per head: over the fused GEMM limit, a library call before.
    nodes, inits = attention("q", "k_t", "v", "o", scale=0.125)
    return model("over_gemm_limit", [("q", [1, 2, 128, 64]), ("k", [1, 2, 128, 64]), ("v", [1, 2, 128, 64])],
                 [transpose_keys("k")] + nodes, [("o", [1, 2, 128, 64])], inits)


def half_attention(name, elem, lq, lk, d, dv, causal=False, merge=False):
    """float16/bfloat16 attention: Q, K^T by Transpose, a 1/sqrt(d) scale (and a causal
    Where), Softmax, P V; the scale and fill constants in the model's type. With merge,
    the heads merged back: O [2, 2, lq, dv] -> Transpose -> Reshape [2, lq, 2 dv]."""
    nodes, _ = attention("q", "k_t", "v", "o", scale=1.0, extra=[("Where", "causal")] if causal else ())
    scale = helper.make_tensor("scale", elem, [], [1 / math.sqrt(d)])
    inits = [scale]
    if causal:
        inits += [helper.make_tensor("neg_inf", elem, [], [-np.inf]),
                  const("causal", np.tril(np.ones((lq, lk), bool), k=lk - lq).reshape(1, 1, lq, lk))]
    outputs = [("o", [2, 2, lq, dv])]
    if merge:
        nodes += [node("Transpose", ["o"], ["o_t"], perm=[0, 2, 1, 3]),
                  node("Reshape", ["o_t", "merged"], ["y"])]
        inits.append(const("merged", np.array([2, lq, 2 * dv], np.int64)))
        outputs = [("y", [2, lq, 2 * dv])]
    return model(name, [("q", [2, 2, lq, d]), ("k", [2, 2, lk, d]), ("v", [2, 2, lk, dv])],
                 [transpose_keys("k")] + nodes, outputs, inits, elem=elem)


# (name, model, whether an attention composition is expected[, the Transpose that merges
# the heads back, expected inside the attention kernel, which writes O through it])
CASES = [
    ("plain", case_plain(), True),
    ("padding_mask", case_padding_mask(), True),
    ("causal", case_causal(), True),
    ("bias_odd_dims", case_bias_odd_dims(), True),
    ("head_split", case_head_split(), True, "o_t"),
    ("window_mask", case_window_mask(), True),
    ("many_tiles", case_many_tiles(), True),
    ("broadcast_batch", case_broadcast_batch(), True),
    ("over_gemm_limit", case_over_gemm_limit(), True),
    # Tensor cores: 40 keys (a partial key tile), 20 query rows (a partial warp tile).
    ("float16_tensor_cores", half_attention("float16_tensor_cores", T.FLOAT16, 20, 40, 32, 24), True),
    ("bfloat16_causal", half_attention("bfloat16_causal", T.BFLOAT16, 48, 64, 64, 64, causal=True), True),
    # d = 24 is no multiple of 16: the CUDA-core variant in float16.
    ("float16_cuda_cores", half_attention("float16_cuda_cores", T.FLOAT16, 16, 16, 24, 16), True),
    # The heads merged back inside the kernel, on tensor cores and on CUDA cores.
    ("float16_merged_heads",
     half_attention("float16_merged_heads", T.FLOAT16, 20, 40, 32, 24, merge=True), True, "o_t"),
    ("float16_cuda_cores_merged_heads",
     half_attention("float16_cuda_cores_merged_heads", T.FLOAT16, 16, 16, 24, 16, merge=True), True,
     "o_t"),
]


# float32 cores under --precision tf32 / fp32x3: the TF32 tensor-core variant (mma
# m16n8k8, three per step for fp32x3) where d and dv are multiples of 8, else the
# CUDA-core one with TF32-rounded operands. (name, case, options, the instruction the
# attention kernel must issue, or None for the CUDA-core variant.)
TF32_CASES = [
    ("tf32_causal", case_causal, ["--precision", "tf32"], "stitch_mma_m16n8k8_tf32"),
    ("tf32_padding_mask", case_padding_mask, ["--precision", "tf32"], "stitch_mma_m16n8k8_tf32"),
    ("tf32_broadcast_batch", case_broadcast_batch, ["--precision", "tf32"], "stitch_mma_m16n8k8_tf32"),
    ("fp32x3_many_tiles", case_many_tiles, ["--precision", "fp32x3"], "a_small"),
    # dv = 20 is no multiple of 8: CUDA cores.
    ("tf32_cuda_cores", case_plain, ["--precision", "tf32"], None),
]
FLAGS = {name: flags for name, _, flags, _ in TF32_CASES}
MMA = {name: instruction for name, _, _, instruction in TF32_CASES}
CASES += [(name, make(), True) for name, make, _, _ in TF32_CASES]
CASES.append(("tf32_head_split", case_head_split(), True, "o_t"))
FLAGS["tf32_head_split"] = ["--precision", "tf32"]
MMA["tf32_head_split"] = "stitch_mma_m16n8k8_tf32"


def attention_source(out):
    """The text of the generated .cu files of OUT that hold an attention kernel."""
    directory = os.path.join(out, "kernels")
    texts = [open(os.path.join(directory, f)).read() for f in sorted(os.listdir(directory))
             if f.endswith(".cu")]
    return "".join(t for t in texts if "// Attention " in t)


def check(name, expected, kernels, out):
    expect_attention, merge = (tuple(expected) + (None,))[:2]
    compositions = [k["composition"] for k in kernels]
    if ("attention" in compositions) != expect_attention:
        return [f"{name}: compositions {compositions}, attention expected: {expect_attention}"], ""
    held = [op["name"] for k in kernels if k["composition"] == "attention" for op in k["ops"]]
    if merge and merge not in held:
        return [f"{name}: the attention kernel does not write its output through {merge} "
                f"(it holds {held})"], ""
    if name in MMA:
        source = attention_source(out)
        tf32 = "stitch_mma_m16n8k8_tf32" in source
        if MMA[name] is None and tf32:
            return [f"{name}: the attention kernel is on tensor cores, CUDA cores expected"], ""
        if MMA[name] is not None and MMA[name] not in source:
            return [f"{name}: the attention kernel does not issue {MMA[name]}"], ""
    templates = " ".join(k["template"] for k in kernels if k["composition"] == "attention")
    return [], f"{'+'.join(compositions):28s} {templates}"


if __name__ == "__main__":
    sys.exit(run_small_model_cases(CASES, check, FLAGS))

#!/usr/bin/env python3
"""Layout changes: the transpose composition and rows moved by a Transpose, end to end.

A Transpose that moves its input's last axis reads or writes with a stride when one
thread writes each output element (sector efficiency 1/8 for float32). The transpose
composition (docs/codegen.md, "Transpose") moves it through 32 x 32 tiles in shared
memory instead. This test writes small ONNX models holding such Transposes (alone in
their kernel: fused with nothing, so the planner leaves them single ops), and for each:

  1. `stitchopt MODEL -o OUT` must give the Transpose the expected composition
     ("transpose", or "thread" for the layouts it does not take: a permutation that
     keeps the last axis, a swapped axis narrower than 8). The row-local cases (a
     LayerNorm or softmax whose output a Transpose moves row by row, issue 16 part 2)
     must keep the warp or block composition and say why;
  2. `stitchopt run OUT --emulate` runs the emitted .cu against the CUDA emulation
     layer on seeded random inputs and compares every output with the reference
     interpreter: exit 0 and "all N outputs match" are required;
  3. with --nvcc, every emitted kernel also goes through compile_kernels.py (nvcc
     sm_80/sm_90 with warnings as errors, and NVRTC with --nvrtc-check).

The vector_bias_scale case checks the thread composition's 128-bit path (4 elements per
thread, 16-byte windows) the same way.

Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: layout_schedules.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
"""
import os
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_outputs import run_small_model_cases  # noqa: E402
OPSET = 17


def transpose_model(name, dtype, dims, perm):
    out_dims = [dims[p] for p in perm] if perm else list(reversed(dims))
    attrs = {"perm": perm} if perm else {}
    node = helper.make_node("Transpose", ["x"], ["y"], name="transpose", **attrs)
    return graph_model(name, [("x", dtype, dims)], [node], [("y", dtype, out_dims)])


def graph_model(name, inputs, nodes, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, d) for n, t, d in outputs],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="tests/codegen/layout_schedules.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def layernorm(x, y):
    """LayerNorm over the last axis without scale and bias, as the decompose pass opens it."""
    return [helper.make_node("ReduceMean", [x], [y + "_m"], axes=[-1], keepdims=1, name=y + "_mean"),
            helper.make_node("Sub", [x, y + "_m"], [y + "_d"], name=y + "_sub"),
            helper.make_node("Mul", [y + "_d", y + "_d"], [y + "_q"], name=y + "_square"),
            helper.make_node("ReduceMean", [y + "_q"], [y + "_v"], axes=[-1], keepdims=1, name=y + "_var"),
            helper.make_node("Add", [y + "_v", "eps"], [y + "_e"], name=y + "_add_eps"),
            helper.make_node("Sqrt", [y + "_e"], [y + "_s"], name=y + "_sqrt"),
            helper.make_node("Div", [y + "_d", y + "_s"], [y], name=y + "_div")]


def softmax(x, y):
    return [helper.make_node("Softmax", [x], [y], axis=-1, name=y + "_softmax")]


def transpose(x, y, perm):
    return [helper.make_node("Transpose", [x], [y], perm=perm, name=y + "_transpose")]


EPS = helper.make_tensor("eps", T.FLOAT, [], [1e-5])
F = T.FLOAT

# (name, model, expected composition, expected text in a kernel's source or None)
CASES = [
    # A weight transpose as Gemm(transB=1) of a training graph decomposes to: tiles that
    # do not divide either side.
    ("weight_2d", transpose_model("weight_2d", T.FLOAT, [70, 100], [1, 0]), "transpose",
     "[1, 70, 100] -> [1, 100, 70]"),
    # NCHW -> NHWC: H and W stay adjacent and merge, a batch of 3.
    ("nchw_to_nhwc", transpose_model("nchw_to_nhwc", T.FLOAT, [3, 40, 9, 7], [0, 2, 3, 1]),
     "transpose", "[3, 40, 63] -> [3, 63, 40]"),
    # The ViT patch tokens: [batch, channels, patches] -> [batch, patches, channels], with
    # a size-1 axis that drops out, in float16.
    ("tokens_f16", transpose_model("tokens_f16", T.FLOAT16, [2, 1, 48, 33], [0, 1, 3, 2]),
     "transpose", "[2, 48, 33] -> [2, 33, 48]"),
    # Keys transposed per head: [b, s, h, d] -> [b, h, d, s]; h and d merge.
    ("keys_per_head", transpose_model("keys_per_head", T.FLOAT, [2, 37, 4, 16], [0, 2, 3, 1]),
     "transpose", "[2, 37, 64] -> [2, 64, 37]"),
    # The default permutation reverses every axis: not a batched swap, thread mapping.
    ("reverse_3d", transpose_model("reverse_3d", T.FLOAT, [9, 10, 11], None), "thread", None),
    # The head split keeps the last axis in place: every access is already contiguous.
    ("heads_keep_last", transpose_model("heads_keep_last", T.FLOAT, [2, 16, 4, 32], [0, 2, 1, 3]),
     "thread", None),
    # A swapped axis narrower than 8: thread mapping.
    ("narrow_cols", transpose_model("narrow_cols", T.FLOAT, [500, 3], [1, 0]), "thread", None),
    # 128-bit accesses (issue 16 part 3): a per-row scale (one element per run), a bias
    # along the last axis of 36 (a window at i % 36) and a residual; two outputs in one
    # loop.
    ("vector_bias_scale",
     graph_model("vector_bias_scale", [("x", F, [24, 36]), ("r", F, [24, 36]), ("s", F, [24, 1])],
                 [helper.make_node("Mul", ["x", "s"], ["xs"], name="row_scale"),
                  helper.make_node("Add", ["xs", "b"], ["xb"], name="bias"),
                  helper.make_node("Add", ["xb", "r"], ["y0"], name="residual"),
                  helper.make_node("Relu", ["y0"], ["y"], name="relu"),
                  helper.make_node("Sigmoid", ["y0"], ["z"], name="gate")],
                 [("y", F, [24, 36]), ("z", F, [24, 36])],
                 [helper.make_tensor("b", F, [36], [(i % 7 - 3) / 4 for i in range(36)])]),
     "thread", "128-bit loads and stores"),
    # int64 elements use an 8-byte tile.
    ("int64_2d", transpose_model("int64_2d", T.INT64, [33, 65], [1, 0]), "transpose",
     "[1, 33, 65] -> [1, 65, 33]"),
    # Row-local groups writing through a Transpose that moves whole rows (issue 16
    # part 2): PyTorch's sequence-first layout after a LayerNorm ([B, S, E] -> [S, B, E]).
    ("layernorm_to_seq_first",
     graph_model("layernorm_to_seq_first", [("x", F, [4, 50, 64])],
                 layernorm("x", "n") + transpose("n", "y", [1, 0, 2]), [("y", F, [50, 4, 64])], [EPS]),
     "warp", "moves whole rows, so each row is written where it lands"),
    # The normalized rows both in place and moved, one kernel.
    ("layernorm_two_layouts",
     graph_model("layernorm_two_layouts", [("x", F, [4, 50, 64])],
                 layernorm("x", "n") + transpose("n", "y", [1, 0, 2]) +
                 [helper.make_node("Relu", ["n"], ["r"], name="relu")],
                 [("y", F, [50, 4, 64]), ("r", F, [4, 50, 64])], [EPS]),
     "warp", "moves whole rows"),
    # Reading through such a view: the rows arrive sequence-first.
    ("seq_first_to_layernorm",
     graph_model("seq_first_to_layernorm", [("x", F, [50, 4, 64])],
                 transpose("x", "t", [1, 0, 2]) + layernorm("t", "y"), [("y", F, [4, 50, 64])], [EPS]),
     "warp", None),
    # Three row axes permuted, short rows (4 lanes per row of 12) whose count leaves the
    # last warp's groups past the end (2 x 3 x 7 = 42 rows).
    ("softmax_rows_permuted",
     graph_model("softmax_rows_permuted", [("x", F, [2, 3, 7, 12])],
                 softmax("x", "s") + transpose("s", "y", [2, 0, 1, 3]), [("y", F, [7, 2, 3, 12])]),
     "warp", "moves whole rows"),
    # A cheap producer between two GEMMs, read by the second GEMM and at its own index:
    # recomputed at each read instead of materialized behind a grid barrier (the
    # profile's estimate of the extra evaluations is below one barrier): 2 stages, not 3.
    # (k = 32: a warp per output, each lane a term of each dot product; with k = 16, a
    # thread walking 16 terms of both GEMMs one after another, the planner now prefers
    # a tiled GEMM kernel and a thread kernel for the load latency that would cost.)
    ("recomputed_between_gemms",
     graph_model("recomputed_between_gemms", [("x", F, [4, 32])],
                 [helper.make_node("MatMul", ["x", "w1"], ["a"], name="gemm1"),
                  helper.make_node("Add", ["a", "b"], ["ab"], name="bias"),
                  helper.make_node("Tanh", ["ab"], ["h"], name="tanh"),
                  helper.make_node("MatMul", ["h", "w2"], ["y1"], name="gemm2"),
                  helper.make_node("Mul", ["h", "c"], ["y2"], name="scale")],
                 [("y1", F, [4, 16]), ("y2", F, [4, 32])],
                 [helper.make_tensor("w1", F, [32, 32], [((i * 7) % 13 - 6) / 20 for i in range(1024)]),
                  helper.make_tensor("w2", F, [32, 16], [((i * 5) % 11 - 5) / 20 for i in range(512)]),
                  helper.make_tensor("b", F, [32], [i / 32 for i in range(32)]),
                  helper.make_tensor("c", F, [4, 32], [((i * 3) % 7 - 3) / 4 for i in range(128)])]),
     "global", "(2 stages separated by grid barriers)"),
    # Long rows: a block per row.
    ("long_rows_moved",
     graph_model("long_rows_moved", [("x", F, [3, 5, 1500])],
                 softmax("x", "s") + transpose("s", "y", [1, 0, 2]), [("y", F, [5, 3, 1500])]),
     "block", "moves whole rows"),
]


def check(name, expected, kernels, out):
    composition, detail = expected
    problems = []
    compositions = [k["composition"] for k in kernels]
    if composition not in compositions:
        problems.append(f"{name}: compositions {compositions}, expected {composition!r}")
    if detail:
        kernels_dir = os.path.join(out, "kernels")
        source = "".join(open(os.path.join(kernels_dir, f)).read()
                         for f in sorted(os.listdir(kernels_dir)) if f.endswith(".cu"))
        if detail not in source:
            problems.append(f"{name}: no kernel says {detail!r}")
    return problems, "+".join(compositions)


if __name__ == "__main__":
    sys.exit(run_small_model_cases(CASES, check))

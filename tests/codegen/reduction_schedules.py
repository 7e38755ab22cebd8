#!/usr/bin/env python3
"""Column, scalar and mixed reductions: their own schedules, checked end to end.

Column and scalar reductions have their own schedules (docs/codegen.md, "Reduction
mappings"). The bundled models hold few of these, so
this test writes small ONNX models that do, one per case below, and for each:

  1. `stitchopt MODEL -o OUT` must plan the reduction the way the case expects: the
     kernel's template (report.json, groups[].codegen) must contain the listed
     attributes (WARP-COL_32 for a column tile of 32 columns, CTA-ROWS_k for k row
     lanes in a block, GRID-SPLIT_k when the reduced range is cut over k warps or
     blocks, WARP for a warp per output) and the composition must be the expected
     one;
  2. `stitchopt run OUT --emulate` compiles the emitted .cu against the CUDA
     emulation layer, runs it on seeded random inputs and compares every output with
     the reference interpreter (float32 1e-5, float16/bfloat16 1e-2): exit 0 and
     "all N outputs match" are required;
  3. with --nvcc, every emitted kernel also goes through tests/codegen/compile_kernels.py
     (nvcc sm_80/sm_90 with warnings as errors, and NVRTC with --nvrtc-check); when
     nvcc is missing that part is reported as skipped.

Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: reduction_schedules.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
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


def ints(name, values):
    return helper.make_tensor(name, T.INT64, [len(values)], values)


def reduce(op, x, y, axes, keepdims):
    """A Reduce* node at opset 17: ReduceSum takes its axes as an input."""
    if op == "ReduceSum":
        return helper.make_node(op, [x, y + "_axes"], [y], name=y, keepdims=keepdims), [ints(y + "_axes", axes)]
    return helper.make_node(op, [x], [y], name=y, axes=axes, keepdims=keepdims), []


def model(name, inputs, body, outputs, constants=()):
    """body: list of (node, initializers) pairs or nodes; constants: more initializers."""
    nodes, inits = [], list(constants)
    for item in body:
        if isinstance(item, tuple):
            nodes.append(item[0])
            inits.extend(item[1])
        else:
            nodes.append(item)
    graph = helper.make_graph(nodes, name,
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info(n, t, s) for n, t, s in outputs],
                              initializer=inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="tests/codegen/reduction_schedules.py")
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    return m


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


# (name, model, expected template attributes, expected composition)
CASES = [
    # Few columns, many rows: 32-column tiles, the rows cut over many warps.
    ("column_sum",
     model("column_sum", [("x", T.FLOAT, [30000, 64])],
           [reduce("ReduceSum", "x", "y", [0], 0)], [("y", T.FLOAT, [64])]),
     ["WARP-COL_32", "GRID-SPLIT_"], "global"),
    # 40 columns: the second tile is partial (lanes past the last column idle).
    ("column_partial_tile",
     model("column_partial_tile", [("x", T.FLOAT, [2000, 40])],
           [reduce("ReduceMax", "x", "y", [0], 1)], [("y", T.FLOAT, [1, 40])]),
     ["WARP-COL_32"], None),
    # 3 columns in float16: 4-column tiles, 64 row lanes per block.
    ("column_narrow_f16",
     model("column_narrow_f16", [("x", T.FLOAT16, [8, 500, 3])],
           [reduce("ReduceMin", "x", "y", [1], 0)], [("y", T.FLOAT16, [8, 3])]),
     ["GRID,", "CTA-ROWS_64", "WARP-COL_4"], "block"),
    # bfloat16 L2 norm of each column (sqrt after the combine).
    ("column_l2_bf16",
     model("column_l2_bf16", [("x", T.BFLOAT16, [3000, 64])],
           [reduce("ReduceL2", "x", "y", [0], 0)], [("y", T.BFLOAT16, [64])]),
     ["WARP-COL_32"], None),
    # Two reduced runs around a kept one, innermost kept: [R, C', R, C].
    ("column_two_runs",
     model("column_two_runs", [("x", T.FLOAT, [6, 5, 70, 48])],
           [reduce("ReduceSum", "x", "y", [0, 2], 0)], [("y", T.FLOAT, [5, 48])]),
     ["WARP-COL_32"], None),
    # Center each column: the mean's partials, a grid barrier, the combine, a
    # barrier, then the broadcast Sub over every element.
    ("column_center",
     model("column_center", [("x", T.FLOAT, [4096, 96])],
           [reduce("ReduceMean", "x", "m", [0], 1), node("Sub", ["x", "m"], ["y"])],
           [("y", T.FLOAT, [4096, 96])]),
     ["WARP-COL_32", "GRID-SPLIT_"], "global"),
    # Batch-norm statistics of NCHW (mean, then variance around it) over N, H, W:
    # the innermost axis is reduced, a warp per channel and slice.
    ("batchnorm_stats",
     model("batchnorm_stats", [("x", T.FLOAT, [16, 32, 14, 14])],
           [reduce("ReduceMean", "x", "m", [0, 2, 3], 1), node("Sub", ["x", "m"], ["d"]),
            node("Mul", ["d", "d"], ["d2"]), reduce("ReduceMean", "d2", "v", [0, 2, 3], 1)],
           [("m", T.FLOAT, [1, 32, 1, 1]), ("v", T.FLOAT, [1, 32, 1, 1])]),
     ["GRID-SPLIT_4-WARP,GRID,"], "global"),
    # A bias gradient (column sum) and the gradient's squared norm (a scalar) of the
    # same tensor: the planner gives each its kernel, the column tiles and the
    # scalar split over every co-resident block.
    ("bias_grad_and_norm",
     model("bias_grad_and_norm", [("dy", T.FLOAT, [2048, 256])],
           [reduce("ReduceSum", "dy", "db", [0], 0), node("Mul", ["dy", "dy"], ["sq"]),
            reduce("ReduceSum", "sq", "norm2", [0, 1], 0)],
           [("db", T.FLOAT, [256]), ("norm2", T.FLOAT, [])]),
     ["WARP-COL_32", "GRID-SPLIT_512-CTA"], "block"),
    # A loss: per-row sums, then their mean, a scalar.
    ("loss_scalar",
     model("loss_scalar", [("x", T.FLOAT, [512, 1000]), ("t", T.FLOAT, [512, 1000])],
           [node("Mul", ["x", "t"], ["p"]), reduce("ReduceSum", "p", "s", [1], 0),
            reduce("ReduceMean", "s", "loss", [0], 0)],
           [("loss", T.FLOAT, [])]),
     [], None),
    # A scalar over a large tensor, alone: the whole tensor is one row split over
    # every co-resident block, the many partials combined by each block's threads.
    ("scalar_sum",
     model("scalar_sum", [("x", T.FLOAT, [1000, 1024])],
           [reduce("ReduceSum", "x", "y", [0, 1], 0)], [("y", T.FLOAT, [])]),
     ["GRID-SPLIT_"], "block"),
    # The inverse-trigonometric and hyperbolic functions as index functions feeding a
    # row sum (inputs are uniform in [-1, 1): Asin, Acos and Atanh stay in their domain,
    # Acosh reads 1 + x * x).
    ("unary_math_rows",
     model("unary_math_rows", [("x", T.FLOAT, [64, 300])],
           [node("Tan", ["x"], ["t0"]), node("Asin", ["x"], ["t1"]), node("Acos", ["x"], ["t2"]),
            node("Atan", ["x"], ["t3"]), node("Sinh", ["x"], ["t4"]), node("Cosh", ["x"], ["t5"]),
            node("Asinh", ["x"], ["t6"]), node("Mul", ["x", "x"], ["x2"]), node("Add", ["x2", "one"], ["x3"]),
            node("Acosh", ["x3"], ["t7"]), node("Atanh", ["x"], ["t8"]),
            node("Sum", ["t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8"], ["s"]),
            reduce("ReduceSum", "s", "y", [1], 0)],
           [("y", T.FLOAT, [64])], [helper.make_tensor("one", T.FLOAT, [], [1.0])]),
     [], None),
    # Short rows share a warp (4 lanes per row of 12, 8 rows per warp); 1003 rows leave
    # the last warp's groups past the end: they read the last row and write nothing.
    ("short_rows_softmax",
     model("short_rows_softmax", [("x", T.FLOAT, [1003, 12])],
           [reduce("ReduceMax", "x", "m", [1], 1), node("Sub", ["x", "m"], ["d"]),
            node("Exp", ["d"], ["e"]), reduce("ReduceSum", "e", "s", [1], 1),
            node("Div", ["e", "s"], ["y"])],
           [("y", T.FLOAT, [1003, 12]), ("m", T.FLOAT, [1003, 1])]),
     ["LANES_4"], "warp"),
    # The recommender's interaction: gathered embedding rows of 32, 8 lanes per row.
    ("embedding_dot_rows",
     model("embedding_dot_rows", [("u", T.INT64, [999]), ("v", T.INT64, [999])],
           [node("Gather", ["table_u", "u"], ["eu"]), node("Gather", ["table_v", "v"], ["ev"]),
            node("Mul", ["eu", "ev"], ["p"]), reduce("ReduceSum", "p", "s", [1], 0),
            node("Sigmoid", ["s"], ["y"])],
           [("y", T.FLOAT, [999])],
           [helper.make_tensor("table_u", T.FLOAT, [50, 32], [((i * 7) % 13 - 6) / 10 for i in range(1600)]),
            helper.make_tensor("table_v", T.FLOAT, [60, 32], [((i * 5) % 11 - 5) / 10 for i in range(1920)])]),
     ["LANES_8"], "warp"),
    # float16 rows of 6 (2 lanes per row, 16 rows per warp), 77 rows.
    ("short_rows_f16",
     model("short_rows_f16", [("x", T.FLOAT16, [77, 6])],
           [reduce("ReduceMean", "x", "m", [1], 1), node("Sub", ["x", "m"], ["y"])],
           [("y", T.FLOAT16, [77, 6])]),
     ["LANES_2"], "warp"),
    # A softmax's numerator and row sums written for outside, over 16 rows of 20000:
    # each row split across blocks; the sums' phase only combines partials, so the row's
    # last block to arrive combines them instead of every block behind a grid barrier
    # (one barrier, not two), and the Exp is stored by the sum's loop that reads it.
    ("split_softmax_parts",
     model("split_softmax_parts", [("x", T.FLOAT, [16, 20000])],
           [reduce("ReduceMax", "x", "m", [1], 1), node("Sub", ["x", "m"], ["d"]),
            node("Exp", ["d"], ["e"]), reduce("ReduceSum", "e", "s", [1], 1)],
           [("e", T.FLOAT, [16, 20000]), ("s", T.FLOAT, [16, 1])]),
     ["GRID-SPLIT_"], "block",
     ["atomicAdd(&done[row], 1u)", "2 phases separated by grid barriers",
      "p_e[row * 20000 + j] = v;"]),
    # Rows of 256 in runs of 4 per lane: a residual sum stored and read back through its
    # window, the row max, the shifted Exp stored by the sum's loop a run at a time.
    ("row_runs_softmax_parts",
     model("row_runs_softmax_parts", [("x", T.FLOAT, [300, 256]), ("r", T.FLOAT, [300, 256])],
           [node("Add", ["x", "r"], ["a"]), reduce("ReduceMax", "a", "m", [1], 1),
            node("Sub", ["a", "m"], ["d"]), node("Exp", ["d"], ["e"]),
            reduce("ReduceSum", "e", "s", [1], 1)],
           [("a", T.FLOAT, [300, 256]), ("e", T.FLOAT, [300, 256]), ("s", T.FLOAT, [300, 1])]),
     ["GRID-WARP_"], "warp",
     ["for (index_t j4 = 4 * lane; j4 < 256; j4 += 128)",
      "stitch_store4(p_e + row * 256 + j4, run, vec4);",
      "w_a = *reinterpret_cast<const float4*>(p_a + wi_a);"]),
    # Rows of 8 over 2 lanes, a LayerNorm-like scale along the row: one run per lane.
    ("row_runs_short",
     model("row_runs_short", [("x", T.FLOAT, [1001, 8]), ("g", T.FLOAT, [8])],
           [reduce("ReduceMean", "x", "m", [1], 1), node("Sub", ["x", "m"], ["d"]),
            node("Mul", ["d", "g"], ["y"])],
           [("y", T.FLOAT, [1001, 8])]),
     ["LANES_2"], "warp",
     ["w_g = *reinterpret_cast<const float4*>(p_g + wi_g);",
      "stitch_store4(p_y + row * 8 + j4, run, vec4);"]),
    # A scalar product of a few hundred elements: one warp, no split.
    ("scalar_prod",
     model("scalar_prod", [("x", T.FLOAT, [4, 50])],
           [node("Mul", ["x", "scale"], ["a"]), node("Exp", ["a"], ["b"]),
            reduce("ReduceProd", "b", "y", [0, 1], 0)],
           [("y", T.FLOAT, [])], [helper.make_tensor("scale", T.FLOAT, [], [0.05])]),
     [], "warp"),
]


def check(name, expected, kernels, out):
    attributes, composition, *source = expected
    problems = []
    for text in (source[0] if source else []):
        files = [os.path.join(out, "kernels", f) for f in os.listdir(os.path.join(out, "kernels"))
                 if f.endswith(".cu")]
        if not any(text in open(f).read() for f in files):
            problems.append(f"{name}: no kernel source holds {text!r}")
    template = " ".join(k["template"] for k in kernels)
    compositions = [k["composition"] for k in kernels]
    for attribute in attributes:
        if attribute not in template:
            problems.append(f"{name}: template {template!r} lacks {attribute!r}")
    if composition and composition not in compositions:
        problems.append(f"{name}: compositions {compositions}, expected {composition}")
    return problems, f"{'+'.join(compositions):14s} {template}"


if __name__ == "__main__":
    sys.exit(run_small_model_cases(CASES, check))

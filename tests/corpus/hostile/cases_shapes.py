"""Hostile cases for zero-size tensors, integer division and extreme fan-in or depth
(issue 12 #4, #9, #10; docs/semantics.md): each model must compile and, where it
runs, match the reference under `run --emulate`, or fail with exit 2 naming the node."""
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from case import Case, Step
from models import F, I64, constant, make, vi, writer

I32 = TensorProto.INT32
INT64_MIN = np.iinfo(np.int64).min

COMPILE = Step(["{model}", "-o", "{out}"])


def runs(outputs=1):
    """Steps: compile, then the emulated kernels must match the reference."""
    return [COMPILE, Step(["run", "{out}", "--emulate"], message=(f"all {outputs} outputs match",))]


def kernels_free_of_zero_divisors(work: Path, _completed):
    """Index arithmetic over an empty extent must not divide by zero (finding 10)."""
    for source in sorted((work / "out" / "kernels").glob("*.cu")):
        text = source.read_text()
        for bad in (" / 0)", " % 0)"):
            if bad in text:
                return f"{source.name} holds {bad.strip()!r}"
    return None


def reduce(op, shape, axes, out_shape, dtype=F):
    return lambda: make([helper.make_node(op, ["x"], ["y"], name="reduce", axes=axes, keepdims=0)],
                        [vi("x", dtype, shape)], [vi("y", dtype, out_shape)])


def reduce_sum_no_rows():
    return make([helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum", keepdims=0)],
                [vi("x", F, [0, 4])], [vi("y", F, [0])],
                [constant("axes", np.array([1], np.int64))])


def every_reduction_over_an_empty_axis():
    ops = ["ReduceMax", "ReduceMin", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2",
           "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
    nodes = [helper.make_node(op, ["x"], [f"y{i}"], name=f"reduce{i}", axes=[1], keepdims=0)
             for i, op in enumerate(ops)]
    nodes.append(helper.make_node("ReduceSum", ["x", "axes"], ["y_sum"], name="sum", keepdims=0))
    outputs = [vi(f"y{i}", F, [4]) for i in range(len(ops))] + [vi("y_sum", F, [4])]
    return make(nodes, [vi("x", F, [4, 0])], outputs, [constant("axes", np.array([1], np.int64))])


def softmax(shape):
    return lambda: make([helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1)],
                        [vi("x", F, shape)], [vi("y", F, shape)])


def layer_norm_dynamic_rows():
    return make([helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"],
                                  name="norm", axis=-1)],
                [vi("x", F, ["n", 16])], [vi("y", F, ["n", 16])],
                [constant("scale", np.ones(16, np.float32)),
                 constant("bias", np.zeros(16, np.float32))])


def relu_dynamic_rows():
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", F, ["n", 16])], [vi("y", F, ["n", 16])])


def matmul_empty_inner():
    return make([helper.make_node("MatMul", ["a", "b"], ["c"], name="dot"),
                 helper.make_node("Relu", ["c"], ["y"], name="relu")],
                [vi("a", F, [4, 0]), vi("b", F, [0, 8])], [vi("y", F, [4, 8])])


def empty_kv_cache():
    """Attention over a cache that is empty at the first step: Concat with a [1,0,8] part."""
    return make([helper.make_node("Concat", ["past", "new"], ["keys"], name="cache", axis=1),
                 helper.make_node("Softmax", ["keys"], ["y"], name="softmax", axis=-1)],
                [vi("past", F, [1, 0, 8]), vi("new", F, [1, 4, 8])], [vi("y", F, [1, 4, 8])])


def zero_size_every_op_kind():
    """x: f32[0,8] through every op kind: elementwise, broadcast, injective (Transpose,
    Slice, Concat, Gather, Pad, Split, Tile), view (Reshape), reduction and a fused
    MatMul; some results are empty, some are not (Concat, Pad, the reduction)."""
    def ints(name, values):
        return constant(name, np.array(values, np.int64))
    nodes = [
        helper.make_node("Transpose", ["x"], ["t"], name="transpose", perm=[1, 0]),
        helper.make_node("Reshape", ["t", "shape"], ["r"], name="reshape"),
        helper.make_node("Slice", ["r", "starts", "ends", "slice_axes"], ["s"], name="slice"),
        helper.make_node("Exp", ["s"], ["e"], name="exp"),
        helper.make_node("Add", ["e", "bias"], ["a"], name="add_bias"),
        helper.make_node("MatMul", ["a", "w"], ["m"], name="matmul"),
        helper.make_node("Relu", ["m"], ["y_gemm"], name="relu"),
        helper.make_node("Concat", ["x", "z"], ["c"], name="concat", axis=0),
        helper.make_node("Sigmoid", ["c"], ["y_concat"], name="sigmoid"),
        helper.make_node("Gather", ["z", "no_indices"], ["g"], name="gather", axis=0),
        helper.make_node("Neg", ["g"], ["y_gather"], name="neg"),
        helper.make_node("Pad", ["x", "pads"], ["p"], name="pad", mode="constant"),
        helper.make_node("Add", ["p", "z"], ["y_pad"], name="add_pad"),
        helper.make_node("Split", ["x", "split"], ["left", "right"], name="split", axis=1),
        helper.make_node("Abs", ["left"], ["y_split"], name="abs"),
        helper.make_node("Tile", ["right", "repeats"], ["y_tile"], name="tile"),
        helper.make_node("Expand", ["bias", "expand_shape"], ["y_expand"], name="expand"),
        helper.make_node("ReduceSum", ["x", "sum_axes"], ["column"], name="sum", keepdims=1),
        helper.make_node("Add", ["column", "z"], ["y_sum"], name="add_sum"),
    ]
    initializers = [
        ints("shape", [-1, 8]), ints("starts", [0]), ints("ends", [4]), ints("slice_axes", [1]),
        constant("bias", np.linspace(-1, 1, 4, dtype=np.float32)),
        constant("w", np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)),
        ints("no_indices", np.zeros([0], np.int64)), ints("pads", [1, 0, 1, 0]),
        ints("split", [3, 5]), ints("repeats", [3, 1]), ints("expand_shape", [0, 4]),
        ints("sum_axes", [0]),
    ]
    outputs = [vi("y_gemm", F, [0, 3]), vi("y_concat", F, [2, 8]), vi("y_gather", F, [0, 8]),
               vi("y_pad", F, [2, 8]), vi("y_split", F, [0, 3]), vi("y_tile", F, [0, 5]),
               vi("y_expand", F, [0, 4]), vi("y_sum", F, [2, 8])]
    return make(nodes, [vi("x", F, [0, 8]), vi("z", F, [2, 8])], outputs, initializers)


def argmax_empty_axis():
    return make([helper.make_node("ArgMax", ["x"], ["y"], name="argmax", axis=1)],
                [vi("x", F, [4, 0])], [vi("y", I64, [4, 1])])


def folded_division(op, numerators, divisors, **attributes):
    def build():
        return make([helper.make_node(op, ["a", "b"], ["y"], name="divide", **attributes)], [],
                    [vi("y", I64, [len(numerators)])],
                    [constant("a", np.array(numerators, np.int64)),
                     constant("b", np.array(divisors, np.int64))])
    return build


def division_by_constant_zero():
    """Div and Mod of a run-time input by a constant 0 (int32): one kernel, not folded."""
    zero = constant("zero", np.array([0], np.int32))
    return make([helper.make_node("Div", ["x", "zero"], ["q"], name="div"),
                 helper.make_node("Mod", ["x", "zero"], ["r"], name="mod"),
                 helper.make_node("Add", ["q", "r"], ["y"], name="add")],
                [vi("x", I32, [16])], [vi("y", I32, [16])], [zero])


def division_by_run_time_zero_and_minus_one():
    """INT64_MIN divided by x - 1, x random in {0, 1}: divisors -1 and 0 at run time."""
    return make([helper.make_node("Sub", ["x", "one"], ["d"], name="sub"),
                 helper.make_node("Div", ["minimum", "d"], ["q"], name="div"),
                 helper.make_node("Mod", ["minimum", "d"], ["r"], name="mod", fmod=1),
                 helper.make_node("Add", ["q", "r"], ["y"], name="add")],
                [vi("x", I64, [64])], [vi("y", I64, [64])],
                [constant("one", np.array([1], np.int64)),
                 constant("minimum", np.full([64], INT64_MIN, np.int64))])


def range_min_over_minus_one():
    return make([helper.make_node("Range", ["start", "limit", "delta"], ["y"], name="range")], [],
                [vi("y", I64, None)],
                [constant("start", np.array(0, np.int64)),
                 constant("limit", np.array(INT64_MIN, np.int64)),
                 constant("delta", np.array(-1, np.int64))])


def sum_of(inputs, declared):
    return lambda: make([helper.make_node("Sum", inputs, ["y"], name="sum")],
                        [vi(name, F, [4, 8]) for name in declared], [vi("y", F, [4, 8])])


def elementwise_chain(length):
    def build():
        nodes, previous = [], "x"
        for i in range(length):
            output = "y" if i == length - 1 else f"t{i}"
            op = "Relu" if i % 2 else "Neg"
            nodes.append(helper.make_node(op, [previous], [output], name=f"op{i}"))
            previous = output
        return make(nodes, [vi("x", F, [4, 8])], [vi("y", F, [4, 8])])
    return build


def cast_chain_to_gather(length):
    """Token ids through `length` Casts into a Gather: run's random inputs follow them."""
    def build():
        nodes, previous = [], "ids"
        for i in range(length):
            nodes.append(helper.make_node("Cast", [previous], [f"c{i}"], name=f"cast{i}",
                                          to=I32 if i % 2 == 0 else I64))
            previous = f"c{i}"
        nodes.append(helper.make_node("Gather", ["table", previous], ["y"], name="gather", axis=0))
        return make(nodes, [vi("ids", I64, [8])], [vi("y", F, [8, 4])],
                    [constant("table", np.arange(40, dtype=np.float32).reshape(10, 4))])
    return build


def input_shape(flag):
    return [Step(["{model}", "-o", "{out}", "--input-shape", flag]),
            Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))]


CASES = [
    # Zero-size tensors (#4a, finding 10).
    Case("reduce_sum_no_rows",
         "issue 12 #4a: SIGFPE on a row reduction of [0,4] (rows_per_block = 0)",
         writer(reduce_sum_no_rows), runs()),
    Case("reduce_max_empty_axis",
         "issue 12 #4a: run --emulate SIGSEGV on ReduceMax over [4,0] axes=[1]",
         writer(reduce("ReduceMax", [4, 0], [1], [4])), runs()),
    Case("reduce_max_no_rows_column",
         "issue 12 #4a: a column max over [0,64] read an element of an empty tensor",
         writer(reduce("ReduceMax", [0, 64], [0], [64])), runs()),
    Case("reduce_min_int32_empty_axis",
         "issue 12 #4a: an int32 min over an empty axis is the dtype's maximum",
         writer(reduce("ReduceMin", [4, 0], [1], [4], I32)), runs()),
    Case("every_reduction_empty_axis",
         "issue 12 #4a: every reduction over an empty set gives its ONNX identity",
         writer(every_reduction_over_an_empty_axis), runs(10)),
    Case("softmax_empty_axis",
         "issue 12 #10: Softmax over [4,0] emitted i / 0 and an undeclared smem",
         writer(softmax([4, 0])),
         [Step(["{model}", "-o", "{out}"], check=kernels_free_of_zero_divisors),
          Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))]),
    Case("softmax_input_shape_zero_rows",
         "issue 12 #4a: --input-shape x=0,16 divided by rows_per_block = 0",
         writer(softmax(["n", 16])), input_shape("x=0,16")),
    Case("layer_norm_input_shape_zero_rows",
         "issue 12 #4a: --input-shape x=0,16 on a layer norm",
         writer(layer_norm_dynamic_rows), input_shape("x=0,16")),
    Case("relu_zero_size_output",
         "issue 12 #4a: run exited 1: graph output \"y\" has no buffer",
         writer(relu_dynamic_rows),
         input_shape("x=0,16")
         + [Step(["run", "{out}", "--cpu"], message=("all 1 outputs match",))]),
    Case("matmul_empty_inner_dim",
         "issue 12 #10: a MatMul with k = 0 used an undeclared smem",
         writer(matmul_empty_inner), runs()),
    Case("concat_empty_kv_cache",
         "issue 12 #4a: a Concat with an empty part, then a Softmax",
         writer(empty_kv_cache), runs()),
    Case("zero_size_every_op_kind",
         "issue 12 #4a: f32[0,8] through every kind of op, fused and not",
         writer(zero_size_every_op_kind), runs(8)),
    Case("argmax_empty_axis",
         "issue 12 #4a: ArgMax over an empty axis has no answer: exit 2 at import",
         writer(argmax_empty_axis),
         [Step(["{model}", "-o", "{out}"], exit=2,
               message=('node "argmax" (ArgMax): axis 1 of input 0 "x" f32[4,0] is empty',))]),
    # Integer division (#4b).
    Case("fold_int64_min_div_minus_one",
         "issue 12 #4b: constant folding INT64_MIN / -1 was SIGFPE",
         writer(folded_division("Div", [INT64_MIN, 7], [-1, 2])), runs()),
    Case("fold_integer_division_by_zero",
         "issue 12 #4b: constant folding x / 0 and x % 0",
         writer(folded_division("Mod", [7, -7, INT64_MIN], [0, 0, -1])), runs()),
    Case("divide_by_constant_zero",
         "issue 12 #4b: run --emulate SIGFPE on Div(x, 0) and Mod(x, 0)",
         writer(division_by_constant_zero), runs()),
    Case("divide_min_by_run_time_minus_one",
         "issue 12 #4b: INT64_MIN / -1 and / 0 inside a kernel",
         writer(division_by_run_time_zero_and_minus_one), runs()),
    Case("range_min_over_minus_one",
         "issue 12 #4b: the Range shape rule divided INT64_MIN by -1",
         writer(range_min_over_minus_one),
         [Step(["{model}", "-o", "{out}"], exit=2,
               message=('node "range" (Range): start, limit and delta give more than 2^31',))]),
    # Fan-in and depth (#4c).
    Case("sum_2000_same_input",
         "issue 12 #4c: emitter SIGSEGV (recursion) on Sum of one input 2000 times",
         writer(sum_of(["x"] * 2000, ["x"])), runs()),
    Case("sum_2000_distinct_inputs",
         "issue 12 #4c: Sum of 2000 distinct inputs",
         writer(sum_of([f"x{i}" for i in range(2000)], [f"x{i}" for i in range(2000)])), runs()),
    Case("elementwise_chain_5000",
         "issue 12 #4c: a 5000-op chain overflowed the emitter's stack, and as one kernel "
         "nvcc needs minutes for it",
         writer(elementwise_chain(5000)), runs()),
    Case("cast_chain_to_gather",
         "issue 12 #4c: 5000 Casts between token ids and a Gather",
         writer(cast_chain_to_gather(5000)), runs()),
]

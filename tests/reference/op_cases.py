#!/usr/bin/env python3
"""Every registry op: reference interpreter vs ONNX Runtime on single-op models.

Each case is one node with seeded random inputs (shape-like inputs such as axes,
pads or Reshape's shape are initializers). The model is run by ONNX Runtime (CPU,
graph optimizations disabled) and by `stitch_reference MODEL DIR`, and every output
is compared (tests/reference/compare.py): float32/float64 elementwise within
|ref - ort| <= 1e-5 * max(|ort|, 1), float16/bfloat16 within 1e-2 of the same form,
integers and bools exactly.

Prints one line per failing case and a closing line "N passed, M failed"; exits 1 if
any case failed. --list prints the cases, --filter SUBSTRING runs a subset,
--coverage prints the per-op table (op, dtypes, cases passed).

Usage: op_cases.py --stitch-reference PATH [--filter S] [--coverage] [--list]
"""

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import compare_reference_outputs, run_onnxruntime  # noqa: E402

# ---------------------------------------------------------------------------------
# Inputs


class In:
    """One node input: a generator of its array and whether it is an initializer."""

    def __init__(self, make, init=False):
        self.make = make
        self.init = init


def rnd(shape, dtype="float32", low=None, high=None, init=False):
    def make(rng):
        if dtype in ("float32", "float64", "float16"):
            if low is None:
                a = rng.standard_normal(shape)
            else:
                a = rng.uniform(low, high, size=shape)
            return np.asarray(a).astype(dtype)
        if dtype == "bool":
            return rng.integers(0, 2, size=shape).astype(np.bool_)
        lo = -10 if low is None else low
        hi = 10 if high is None else high
        return rng.integers(lo, hi, size=shape).astype(dtype)
    return In(make, init)


def const(values, dtype="int64"):
    return In(lambda rng: np.array(values, dtype=dtype), init=True)


def value(values, dtype="float32", init=False):
    return In(lambda rng: np.array(values, dtype=dtype), init=init)


ABSENT = None  # an omitted optional input


class Case:
    def __init__(self, name, op, inputs, attrs=None, opset=17, outputs=1):
        self.name = name
        self.op = op
        self.inputs = inputs
        self.attrs = attrs or {}
        self.opset = opset
        self.outputs = outputs


CASES = []


def add(name, op, inputs, attrs=None, opset=17, outputs=1):
    CASES.append(Case(name, op, inputs, attrs, opset, outputs))


# ---------------------------------------------------------------------------------
# Cases

UNARY_FLOAT = {
    "Exp": {}, "Tanh": {}, "Sigmoid": {}, "Sin": {}, "Cos": {}, "Floor": {}, "Ceil": {},
    "Softplus": {}, "Softsign": {}, "Atan": {}, "Sinh": {}, "Cosh": {}, "Asinh": {},
    "Tan": {"low": -1.2, "high": 1.2},
    "Log": {"low": 0.01, "high": 10}, "Sqrt": {"low": 0.0, "high": 10},
    "Reciprocal": {"low": 0.5, "high": 4}, "Acos": {"low": -0.99, "high": 0.99},
    "Asin": {"low": -0.99, "high": 0.99}, "Atanh": {"low": -0.95, "high": 0.95},
    "Acosh": {"low": 1.01, "high": 8},
}
for op, limits in UNARY_FLOAT.items():
    add(f"{op}_f32", op, [rnd([3, 4, 5], **limits)], opset=13)
    if op in ("Exp", "Tanh", "Sigmoid", "Sqrt", "Log", "Floor", "Ceil", "Sin", "Cos", "Reciprocal"):
        add(f"{op}_f16", op, [rnd([2, 7], "float16", **limits)], opset=13)
    if op in ("Exp", "Tanh", "Sigmoid", "Sqrt", "Log", "Floor", "Ceil", "Sin", "Reciprocal"):
        add(f"{op}_f64", op, [rnd([6], "float64", **limits)], opset=13)
add("Mish_f32", "Mish", [rnd([4, 6])], opset=18)
add("Round_f32", "Round", [value([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6, 0.0, 7.5, -7.49])])
add("Round_f32_random", "Round", [rnd([5, 5], low=-20, high=20)])
add("Round_f16", "Round", [value([0.5, 1.5, 2.5, -0.5, -3.5], "float16")])
add("Erf_f32", "Erf", [rnd([3, 8])])
add("Erf_f16", "Erf", [rnd([3, 8], "float16")])
add("Abs_f32", "Abs", [rnd([4, 5])])
add("Abs_i32", "Abs", [rnd([4, 5], "int32")])
add("Abs_i64", "Abs", [rnd([7], "int64")])
add("Abs_i8", "Abs", [rnd([7], "int8")])
add("Neg_f32", "Neg", [rnd([4, 5])])
add("Neg_i64", "Neg", [rnd([4, 5], "int64")])
add("Neg_f16", "Neg", [rnd([4, 5], "float16")])
add("Sign_f32", "Sign", [value([-2.0, 0.0, 3.5, -0.0, 1e-30])])
add("Sign_i32", "Sign", [rnd([9], "int32")])
add("Not_bool", "Not", [rnd([3, 4], "bool")])
add("Relu_f32", "Relu", [rnd([3, 4, 5])])
add("Relu_f16", "Relu", [rnd([3, 4], "float16")])
add("Relu_i32", "Relu", [rnd([3, 4], "int32")], opset=14)
add("Relu_f64", "Relu", [rnd([3, 4], "float64")], opset=14)
add("LeakyRelu_default", "LeakyRelu", [rnd([3, 4])])
add("LeakyRelu_alpha", "LeakyRelu", [rnd([3, 4])], {"alpha": 0.3})
add("Elu_default", "Elu", [rnd([3, 4])])
add("Elu_alpha", "Elu", [rnd([3, 4])], {"alpha": 0.5})
add("Celu", "Celu", [rnd([3, 4])], {"alpha": 2.0})
add("Selu_default", "Selu", [rnd([3, 4])])
add("Selu_attrs", "Selu", [rnd([3, 4])], {"alpha": 1.5, "gamma": 2.0})
add("ThresholdedRelu", "ThresholdedRelu", [rnd([3, 4])], {"alpha": 0.4})
add("HardSigmoid_default", "HardSigmoid", [rnd([3, 4], low=-5, high=5)])
add("HardSigmoid_attrs", "HardSigmoid", [rnd([3, 4], low=-5, high=5)], {"alpha": 0.3, "beta": 0.4})
add("HardSwish", "HardSwish", [rnd([3, 4], low=-6, high=6)], opset=14)
add("HardSwish_f16", "HardSwish", [rnd([3, 4], "float16", low=-6, high=6)], opset=14)
add("Gelu_none", "Gelu", [rnd([4, 8])], opset=20)
add("Gelu_tanh", "Gelu", [rnd([4, 8])], {"approximate": "tanh"}, opset=20)
add("IsNaN", "IsNaN", [value([1.0, np.nan, -np.inf, 0.0])], opset=13)
add("IsInf", "IsInf", [value([1.0, np.nan, -np.inf, np.inf])], opset=13)
add("IsInf_positive", "IsInf", [value([1.0, np.nan, -np.inf, np.inf])], {"detect_negative": 0}, opset=13)
add("Softplus_f16", "Softplus", [rnd([5], "float16")])

# Binary arithmetic with broadcasting.
SHAPES = [([3, 4], [3, 4]), ([2, 3, 4], [4]), ([2, 1, 4], [3, 1]), ([], [2, 3]), ([5, 1, 1, 2], [1, 3, 1])]
for op in ("Add", "Sub", "Mul", "Div"):
    for a, b in SHAPES:
        label = "x".join(map(str, a)) or "s"
        b_in = rnd(b, low=0.5, high=3) if op == "Div" else rnd(b)
        add(f"{op}_f32_{label}_{'x'.join(map(str, b))}", op, [rnd(a), b_in], opset=14)
    add(f"{op}_f16", op, [rnd([3, 4], "float16"), rnd([4], "float16", low=0.5, high=2)], opset=14)
    add(f"{op}_i32", op, [rnd([3, 4], "int32"), rnd([4], "int32", low=1, high=5)], opset=14)
    add(f"{op}_i64", op, [rnd([2, 3], "int64", low=-100, high=100), rnd([2, 1], "int64", low=1, high=7)], opset=14)
    add(f"{op}_f64", op, [rnd([3, 4], "float64"), rnd([3, 1], "float64", low=0.5, high=2)], opset=14)
add("Div_i32_negative", "Div", [value([7, -7, 7, -7], "int32"), value([2, 2, -2, -2], "int32")], opset=14)
add("Pow_f32", "Pow", [rnd([3, 4], low=0.1, high=3), rnd([4], low=-2, high=2)], opset=15)
add("Pow_f32_int_exponent", "Pow", [rnd([3, 4]), value([2], "int64")], opset=15)
add("Pow_f32_scalar", "Pow", [rnd([3, 4]), value(2.0)], opset=15)
add("Pow_i64", "Pow", [rnd([5], "int64", low=-5, high=5), value([2, 3, 0, 1, 2], "int64")], opset=15)
add("Pow_f16", "Pow", [rnd([5], "float16", low=0.1, high=2), value([2.0], "float16")], opset=15)
add("Mod_i32_fmod0", "Mod", [value([5, -5, 5, -5, 7, 0], "int32"), value([3, 3, -3, -3, 7, 4], "int32")])
add("Mod_i64_fmod0_random", "Mod", [rnd([4, 5], "int64", low=-50, high=50), rnd([5], "int64", low=1, high=9)])
add("Mod_i64_fmod1", "Mod", [value([5, -5, 5, -5], "int64"), value([3, 3, -3, -3], "int64")], {"fmod": 1})
add("Mod_f32_fmod1", "Mod", [rnd([3, 4], low=-10, high=10), rnd([4], low=1, high=3)], {"fmod": 1})
add("Mod_f16_fmod1", "Mod", [rnd([6], "float16", low=-10, high=10), value([3.0], "float16")], {"fmod": 1})
for op in ("Max", "Min", "Sum", "Mean"):
    add(f"{op}_one", op, [rnd([3, 4])], opset=13)
    add(f"{op}_two", op, [rnd([3, 4]), rnd([3, 4])], opset=13)
    add(f"{op}_three_broadcast", op, [rnd([2, 3, 4]), rnd([4]), rnd([3, 1])], opset=13)
    add(f"{op}_f16", op, [rnd([3, 4], "float16"), rnd([4], "float16")], opset=13)
add("Max_i32", "Max", [rnd([3, 4], "int32"), rnd([4], "int32")], opset=13)
add("Min_i64", "Min", [rnd([3, 4], "int64"), rnd([3, 1], "int64")], opset=13)
for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
    # Rounded values, so that equal elements occur.
    add(f"{op}_f32", op, [In(lambda r: np.round(r.uniform(-2, 2, (3, 4))).astype(np.float32)),
                          In(lambda r: np.round(r.uniform(-2, 2, (4,))).astype(np.float32))], opset=16)
    add(f"{op}_i64", op, [rnd([3, 4], "int64", low=-3, high=3), rnd([1], "int64", low=-3, high=3)], opset=16)
    add(f"{op}_i32", op, [rnd([2, 3], "int32", low=-3, high=3), rnd([2, 1], "int32", low=-3, high=3)], opset=16)
add("Equal_bool", "Equal", [rnd([3, 4], "bool"), rnd([4], "bool")], opset=16)
for op in ("And", "Or", "Xor"):
    add(f"{op}_bool", op, [rnd([3, 4], "bool"), rnd([4], "bool")])
    add(f"{op}_bool_broadcast", op, [rnd([2, 1, 4], "bool"), rnd([3, 1], "bool")])
add("Where_f32", "Where", [rnd([3, 4], "bool"), rnd([3, 4]), rnd([4])], opset=16)
add("Where_i64_broadcast", "Where", [rnd([2, 1, 4], "bool"), rnd([3, 1], "int64"), rnd([], "int64")], opset=16)
add("Where_f16", "Where", [rnd([4], "bool"), rnd([3, 4], "float16"), rnd([3, 1], "float16")], opset=16)
add("Where_u8", "Where", [rnd([4], "bool"), rnd([3, 4], "uint8", low=0, high=255), rnd([4], "uint8", low=0, high=255)], opset=16)
add("PRelu_channel", "PRelu", [rnd([2, 3, 4, 4]), rnd([3, 1, 1])], opset=16)
add("PRelu_scalar", "PRelu", [rnd([2, 5]), rnd([1])], opset=16)
add("PRelu_f16", "PRelu", [rnd([2, 5], "float16"), rnd([5], "float16")], opset=16)

add("Clip_attrs_opset6", "Clip", [rnd([3, 4])], {"min": -0.5, "max": 0.7}, opset=7)
add("Clip_attr_min_only", "Clip", [rnd([3, 4])], {"min": -0.5}, opset=7)
add("Clip_inputs", "Clip", [rnd([3, 4]), value(-0.5, init=True), value(0.5, init=True)], opset=13)
add("Clip_min_only", "Clip", [rnd([3, 4]), value(-0.5, init=True)], opset=13)
add("Clip_max_only", "Clip", [rnd([3, 4]), ABSENT, value(0.2, init=True)], opset=13)
add("Clip_none", "Clip", [rnd([3, 4])], opset=13)
add("Clip_i32", "Clip", [rnd([3, 4], "int32"), value(-3, "int32", True), value(4, "int32", True)], opset=13)
add("Clip_f16", "Clip", [rnd([3, 4], "float16"), value(-0.5, "float16", True), value(0.5, "float16", True)], opset=13)

CAST_TYPES = {"float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16, "float64": TensorProto.DOUBLE,
              "int32": TensorProto.INT32, "int64": TensorProto.INT64, "int8": TensorProto.INT8,
              "uint8": TensorProto.UINT8, "bool": TensorProto.BOOL, "bfloat16": TensorProto.BFLOAT16}
for source in ("float32", "float16", "int64", "int32", "bool", "float64", "uint8"):
    for target in ("float32", "float16", "int64", "int32", "bool", "float64", "int8", "uint8"):
        if source == target:
            continue
        if source in ("float32", "float16", "float64"):
            data = rnd([3, 5], source, low=-100, high=100) if target not in ("uint8", "int8") else \
                rnd([3, 5], source, low=0, high=120)
        else:
            data = rnd([3, 5], source, low=0, high=100) if source == "uint8" else rnd([3, 5], source)
        add(f"Cast_{source}_to_{target}", "Cast", [data], {"to": CAST_TYPES[target]}, opset=13)
# bfloat16: ONNX Runtime's CPU kernels and numpy have no bfloat16 arithmetic, so these
# cases cast to bfloat16 and back to float32 inside the model (the "_bf16" wrappers
# below); the float32 result then shows bfloat16's rounding exactly.
for source in ("float32", "float16", "float64", "int64", "int32", "bool"):
    data = rnd([3, 5], source, low=-1000, high=1000) if source not in ("bool",) else rnd([3, 5], source)
    add(f"Cast_{source}_to_bfloat16_bf16", "Cast", [data], {"to": TensorProto.BFLOAT16}, opset=13)
for target in ("float32", "float16", "float64", "int64", "int32", "bool"):
    add(f"Cast_bfloat16_to_{target}_bf16", "Cast", [rnd([3, 5], low=-100, high=100)],
        {"to": CAST_TYPES[target]}, opset=13)
add("Cast_f32_to_bf16_ties_bf16", "Cast", [value([1.00390625, 1.01171875, -1.00390625, 3.0e38, 1e-40])],
    {"to": TensorProto.BFLOAT16}, opset=13)
add("Cast_f32_to_f16_rounding", "Cast", [value([1.0009765625, 1.00146484375, 65504.0, 70000.0, 1e-8, 5.9604645e-08])],
    {"to": TensorProto.FLOAT16}, opset=13)
add("Cast_saturate_opset19", "Cast", [rnd([4], low=-5, high=5)], {"to": TensorProto.FLOAT16, "saturate": 1}, opset=19)
add("CastLike_f32_to_f16", "CastLike", [rnd([3, 4]), value([0.0], "float16")], opset=15)
add("CastLike_i64_to_f32", "CastLike", [rnd([3, 4], "int64"), value([0.0])], opset=15)
add("Identity_f32", "Identity", [rnd([3, 4])])
add("Identity_i64", "Identity", [rnd([3, 4], "int64")])
add("Identity_bool", "Identity", [rnd([3], "bool")])
add("Dropout_inference", "Dropout", [rnd([3, 4])], opset=13)
add("Dropout_with_mask", "Dropout", [rnd([3, 4])], opset=13, outputs=2)
add("Dropout_ratio_input", "Dropout", [rnd([3, 4]), value(0.3, init=True)], opset=13)
add("Dropout_opset10", "Dropout", [rnd([3, 4])], {"ratio": 0.2}, opset=10)

# Shape and injective ops.
add("Expand_f32", "Expand", [rnd([3, 1]), const([2, 3, 4])], opset=13)
add("Expand_bidirectional", "Expand", [rnd([1, 4]), const([3, 1])], opset=13)
add("Expand_i64", "Expand", [rnd([4], "int64"), const([2, 4])], opset=13)
add("Expand_bool", "Expand", [rnd([1, 3], "bool"), const([2, 1, 3])], opset=13)
add("Transpose_default", "Transpose", [rnd([2, 3, 4])])
add("Transpose_perm", "Transpose", [rnd([2, 3, 4, 5])], {"perm": [0, 2, 3, 1]})
add("Transpose_f16", "Transpose", [rnd([3, 5], "float16")], {"perm": [1, 0]})
add("Transpose_i64", "Transpose", [rnd([2, 3, 4], "int64")], {"perm": [2, 0, 1]})
add("Transpose_bool", "Transpose", [rnd([2, 3], "bool")], {"perm": [1, 0]})
add("Reshape_infer", "Reshape", [rnd([2, 3, 4]), const([4, -1])], opset=13)
add("Reshape_zero_copy", "Reshape", [rnd([2, 3, 4]), const([0, 12])], opset=13)
add("Reshape_allowzero", "Reshape", [rnd([2, 3, 4]), const([6, 4])], {"allowzero": 1}, opset=14)
add("Reshape_i64", "Reshape", [rnd([6], "int64"), const([3, 2])], opset=13)
add("Flatten_default", "Flatten", [rnd([2, 3, 4])])
add("Flatten_axis0", "Flatten", [rnd([2, 3, 4])], {"axis": 0})
add("Flatten_axis_neg", "Flatten", [rnd([2, 3, 4, 5])], {"axis": -2}, opset=13)
add("Squeeze_attr", "Squeeze", [rnd([1, 3, 1, 4])], {"axes": [0, 2]}, opset=11)
add("Squeeze_input", "Squeeze", [rnd([1, 3, 1, 4]), const([-2])], opset=13)
add("Squeeze_all", "Squeeze", [rnd([1, 3, 1, 4])], opset=13)
add("Unsqueeze_attr", "Unsqueeze", [rnd([3, 4])], {"axes": [0, 3]}, opset=11)
add("Unsqueeze_input", "Unsqueeze", [rnd([3, 4]), const([1, -1])], opset=13)
add("Unsqueeze_i64", "Unsqueeze", [rnd([3], "int64"), const([0])], opset=13)
add("Concat_axis0", "Concat", [rnd([2, 3]), rnd([4, 3])], {"axis": 0})
add("Concat_axis1_three", "Concat", [rnd([2, 3, 2]), rnd([2, 1, 2]), rnd([2, 2, 2])], {"axis": 1})
add("Concat_negative", "Concat", [rnd([2, 3]), rnd([2, 2])], {"axis": -1})
add("Concat_i64", "Concat", [rnd([2], "int64"), rnd([3], "int64")], {"axis": 0})
add("Concat_f16", "Concat", [rnd([2, 2], "float16"), rnd([2, 2], "float16")], {"axis": 1})
add("Split_equal", "Split", [rnd([6, 4])], {"axis": 0}, opset=13, outputs=3)
add("Split_attr_sizes", "Split", [rnd([2, 7])], {"axis": 1, "split": [3, 4]}, opset=11, outputs=2)
add("Split_input_sizes", "Split", [rnd([2, 7]), const([2, 2, 3])], {"axis": -1}, opset=13, outputs=3)
add("Split_num_outputs", "Split", [rnd([7, 2])], {"axis": 0, "num_outputs": 3}, opset=18, outputs=3)
add("Split_i64", "Split", [rnd([4], "int64")], opset=13, outputs=2)
add("Slice_attrs", "Slice", [rnd([5, 6])], {"starts": [1, 0], "ends": [4, 5], "axes": [0, 1]}, opset=9)
add("Slice_attrs_no_axes", "Slice", [rnd([5, 6])], {"starts": [1], "ends": [100]}, opset=9)
add("Slice_inputs", "Slice", [rnd([5, 6, 3]), const([1, -4]), const([-1, 1000]), const([0, 1])], opset=13)
add("Slice_steps", "Slice", [rnd([10, 6]), const([1, 0]), const([9, 6]), const([0, 1]), const([3, 2])], opset=13)
add("Slice_negative_step", "Slice", [rnd([10, 6]), const([-1]), const([-100]), const([0]), const([-2])], opset=13)
add("Slice_negative_step_bounds", "Slice", [rnd([8]), const([6]), const([1]), const([0]), const([-3])], opset=13)
add("Slice_empty", "Slice", [rnd([5, 6]), const([3]), const([1]), const([0])], opset=13)
add("Slice_i64", "Slice", [rnd([5, 6], "int64"), const([0, 1]), const([2, 5])], opset=13)
add("Gather_axis0", "Gather", [rnd([5, 4]), const([[0, 2], [4, -1]])])
add("Gather_axis1", "Gather", [rnd([3, 5, 2]), const([1, 3, 3])], {"axis": 1})
add("Gather_scalar_index", "Gather", [rnd([3, 5]), const(2)], {"axis": 1})
add("Gather_i32_indices", "Gather", [rnd([6, 3]), const([5, 0], "int32")])
add("Gather_i64_data", "Gather", [rnd([6], "int64"), const([1, 1, 0])])
add("Gather_random_indices", "Gather", [rnd([50, 8]), rnd([20], "int64", low=-50, high=50)])
add("GatherElements_axis0", "GatherElements", [rnd([3, 4]), const([[0, 2, 1, 1], [2, 0, 0, -1]])], {"axis": 0}, opset=13)
add("GatherElements_axis1", "GatherElements", [rnd([3, 4]), const([[0, 3], [2, 0], [1, 1]])], {"axis": 1}, opset=13)
add("GatherElements_3d", "GatherElements", [rnd([2, 3, 4]), rnd([2, 3, 2], "int64", low=0, high=4)], {"axis": -1}, opset=13)
add("Pad_constant_attr", "Pad", [rnd([2, 3])], {"pads": [1, 0, 0, 2], "value": 1.5}, opset=7)
add("Pad_constant_input", "Pad", [rnd([2, 3]), const([1, 2, 1, 0]), value(-2.0, init=True)], opset=13)
add("Pad_constant_default", "Pad", [rnd([2, 3, 2]), const([0, 1, 0, 0, 1, 1])], opset=13)
add("Pad_reflect", "Pad", [rnd([4, 5]), const([2, 3, 1, 2])], {"mode": "reflect"}, opset=13)
add("Pad_edge", "Pad", [rnd([3, 4]), const([2, 1, 3, 2])], {"mode": "edge"}, opset=13)
add("Pad_wrap", "Pad", [rnd([3, 4]), const([1, 2, 2, 3])], {"mode": "wrap"}, opset=19)
add("Pad_negative", "Pad", [rnd([4, 5]), const([-1, 1, 0, -2])], opset=13)
add("Pad_axes", "Pad", [rnd([2, 3, 4]), const([1, 2]), ABSENT, const([-1])], opset=18)
add("Pad_i64", "Pad", [rnd([2, 3], "int64"), const([1, 1, 1, 1]), value(7, "int64", True)], opset=13)
add("Tile_2d", "Tile", [rnd([2, 3]), const([2, 3])], opset=13)
add("Tile_3d", "Tile", [rnd([2, 1, 3]), const([1, 4, 2])], opset=13)
add("Tile_i64", "Tile", [rnd([3], "int64"), const([3])], opset=13)
add("Shape", "Shape", [rnd([2, 3, 4])], opset=13)
add("Shape_start_end", "Shape", [rnd([2, 3, 4, 5])], {"start": 1, "end": -1}, opset=15)
add("Shape_start_negative", "Shape", [rnd([2, 3, 4, 5])], {"start": -2}, opset=15)
add("Size", "Size", [rnd([2, 3, 4])], opset=13)
add("ConstantOfShape_default", "ConstantOfShape", [const([2, 3])])
add("ConstantOfShape_i64", "ConstantOfShape", [const([3])],
    {"value": helper.make_tensor("v", TensorProto.INT64, [1], [7])})
add("ConstantOfShape_f16", "ConstantOfShape", [const([2, 2])],
    {"value": numpy_helper.from_array(np.array([1.5], dtype=np.float16), "v")})
add("Constant_tensor", "Constant", [], {"value": numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "v")})
add("Constant_value_float", "Constant", [], {"value_float": 2.5}, opset=13)
add("Constant_value_ints", "Constant", [], {"value_ints": [1, 2, 3]}, opset=13)
add("Constant_value_int", "Constant", [], {"value_int": 4}, opset=13)
add("Constant_value_floats", "Constant", [], {"value_floats": [1.5, -2.0]}, opset=13)
add("Range_i64", "Range", [value(2, "int64", True), value(17, "int64", True), value(3, "int64", True)])
add("Range_i64_negative", "Range", [value(10, "int64", True), value(-3, "int64", True), value(-4, "int64", True)])
add("Range_f32", "Range", [value(0.5, init=True), value(3.0, init=True), value(0.5, init=True)])
add("Range_i32_empty", "Range", [value(5, "int32", True), value(1, "int32", True), value(1, "int32", True)])
add("Trilu_upper", "Trilu", [rnd([4, 5])], opset=14)
add("Trilu_lower", "Trilu", [rnd([4, 5])], {"upper": 0}, opset=14)
add("Trilu_upper_k", "Trilu", [rnd([2, 4, 5]), const(1)], opset=14)
add("Trilu_lower_negative_k", "Trilu", [rnd([4, 5]), const(-1)], {"upper": 0}, opset=14)
add("Trilu_i64", "Trilu", [rnd([3, 3], "int64")], opset=14)
add("Trilu_bool", "Trilu", [rnd([3, 3], "bool")], {"upper": 0}, opset=14)
add("CumSum_default", "CumSum", [rnd([3, 4]), const(1)], opset=14)
add("CumSum_exclusive", "CumSum", [rnd([3, 4]), const(0)], {"exclusive": 1}, opset=14)
add("CumSum_reverse", "CumSum", [rnd([3, 4]), const(-1)], {"reverse": 1}, opset=14)
add("CumSum_both", "CumSum", [rnd([2, 3, 4]), const(1)], {"exclusive": 1, "reverse": 1}, opset=14)
add("CumSum_i64", "CumSum", [rnd([5], "int64"), const(0, "int32")], opset=14)
add("ScatterND_none", "ScatterND", [rnd([4, 3]), const([[1], [3]]), rnd([2, 3])], opset=16)
add("ScatterND_add", "ScatterND", [rnd([4, 3]), const([[1, 0], [3, 2], [1, 0]]), rnd([3])], {"reduction": "add"}, opset=16)
add("ScatterND_mul", "ScatterND", [rnd([4, 3]), const([[0], [0]]), rnd([2, 3])], {"reduction": "mul"}, opset=16)
add("ScatterND_i64", "ScatterND", [rnd([2, 2, 2], "int64"), const([[0, 1]]), rnd([1, 2], "int64")], opset=16)
add("ScatterND_max", "ScatterND", [rnd([4, 3]), const([[1], [2]]), rnd([2, 3])], {"reduction": "max"}, opset=18)

# Reductions.
REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
              "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"]
for op in REDUCE_OPS:
    positive = op == "ReduceLogSum"
    data = (lambda shape: rnd(shape, low=0.1, high=2)) if positive else (lambda shape: rnd(shape))
    add(f"{op}_attr_axes", op, [data([3, 4, 5])], {"axes": [1]}, opset=13 if op != "ReduceSum" else 11)
    add(f"{op}_attr_keepdims0", op, [data([3, 4, 5])], {"axes": [0, 2], "keepdims": 0},
        opset=13 if op != "ReduceSum" else 11)
    add(f"{op}_all", op, [data([3, 4])], opset=13 if op != "ReduceSum" else 11)
    add(f"{op}_input_axes", op, [data([3, 4, 5]), const([-1])], opset=18)
    add(f"{op}_input_axes_keepdims0", op, [data([2, 3, 4]), const([0, 1])], {"keepdims": 0}, opset=18)
    add(f"{op}_noop_empty", op, [data([3, 4]), const([], "int64")], {"noop_with_empty_axes": 1}, opset=18)
    add(f"{op}_empty_axes_reduce_all", op, [data([3, 4]), const([], "int64")], opset=18)
add("ReduceSum_input_opset13", "ReduceSum", [rnd([3, 4, 5]), const([1])], opset=13)
add("ReduceSum_rows_large", "ReduceSum", [rnd([300, 64]), const([1])], opset=13)
add("ReduceSum_columns_large", "ReduceSum", [rnd([300, 64]), const([0])], opset=13)
add("ReduceSum_f16", "ReduceSum", [rnd([4, 16], "float16"), const([1])], opset=13)
add("ReduceMean_f16", "ReduceMean", [rnd([4, 16], "float16")], {"axes": [1]}, opset=13)
add("ReduceSum_i64", "ReduceSum", [rnd([3, 4], "int64"), const([1])], opset=13)
add("ReduceMax_i32", "ReduceMax", [rnd([3, 4], "int32")], {"axes": [0]}, opset=13)
add("ReduceMin_i64", "ReduceMin", [rnd([3, 4], "int64")], {"axes": [1], "keepdims": 0}, opset=13)
add("ReduceProd_i32", "ReduceProd", [rnd([3, 4], "int32", low=-3, high=3)], {"axes": [1]}, opset=13)
add("ReduceLogSumExp_large", "ReduceLogSumExp", [rnd([3, 4], low=50, high=80)], {"axes": [1]}, opset=13)
for op in ("ArgMax", "ArgMin"):
    add(f"{op}_default", op, [rnd([3, 4])], opset=13)
    add(f"{op}_axis1_keepdims0", op, [rnd([3, 4, 5])], {"axis": 1, "keepdims": 0}, opset=13)
    add(f"{op}_last_index", op, [value([[1.0, 3.0, 3.0, 0.0, 0.0], [2.0, 2.0, 1.0, 1.0, 2.0]])],
        {"axis": 1, "select_last_index": 1}, opset=13)
    add(f"{op}_first_index", op, [value([[1.0, 3.0, 3.0, 0.0, 0.0], [2.0, 2.0, 1.0, 1.0, 2.0]])],
        {"axis": -1}, opset=13)
    add(f"{op}_i64", op, [rnd([4, 6], "int64", low=-3, high=3)], {"axis": 1}, opset=13)
    add(f"{op}_f16", op, [rnd([4, 6], "float16")], {"axis": 0}, opset=13)
for op in ("Softmax", "LogSoftmax"):
    add(f"{op}_opset11_default", op, [rnd([2, 3, 4])], opset=11)
    add(f"{op}_opset11_axis0", op, [rnd([2, 3, 4])], {"axis": 0}, opset=11)
    add(f"{op}_opset11_axis2", op, [rnd([2, 3, 4])], {"axis": 2}, opset=11)
    add(f"{op}_opset13_default", op, [rnd([2, 3, 4])], opset=13)
    add(f"{op}_opset13_axis1", op, [rnd([2, 3, 4])], {"axis": 1}, opset=13)
    add(f"{op}_opset13_axis0", op, [rnd([2, 3, 4])], {"axis": 0}, opset=13)
    add(f"{op}_f16", op, [rnd([3, 10], "float16")], opset=13)
    add(f"{op}_f64", op, [rnd([3, 10], "float64")], opset=13)
    add(f"{op}_wide", op, [rnd([4, 3000], low=-20, high=20)], opset=13)
add("LayerNormalization_last", "LayerNormalization", [rnd([2, 3, 8]), rnd([8]), rnd([8])])
add("LayerNormalization_axis1", "LayerNormalization", [rnd([2, 3, 4]), rnd([3, 4]), rnd([3, 4])], {"axis": 1})
add("LayerNormalization_no_bias", "LayerNormalization", [rnd([4, 6]), rnd([6])], {"epsilon": 1e-3})
add("LayerNormalization_stats", "LayerNormalization", [rnd([4, 6]), rnd([6]), rnd([6])], {"axis": -1}, outputs=3)
add("LayerNormalization_f16", "LayerNormalization", [rnd([4, 8], "float16"), rnd([8], "float16"), rnd([8], "float16")])
add("BatchNormalization_4d", "BatchNormalization",
    [rnd([2, 3, 4, 5]), rnd([3]), rnd([3]), rnd([3]), rnd([3], low=0.5, high=2)], opset=15)
add("BatchNormalization_2d_eps", "BatchNormalization",
    [rnd([4, 3]), rnd([3]), rnd([3]), rnd([3]), rnd([3], low=0.5, high=2)], {"epsilon": 1e-2}, opset=15)
add("BatchNormalization_opset9", "BatchNormalization",
    [rnd([2, 3, 4]), rnd([3]), rnd([3]), rnd([3]), rnd([3], low=0.5, high=2)], opset=9)
add("BatchNormalization_f16", "BatchNormalization",
    [rnd([2, 3, 4], "float16"), rnd([3], "float16"), rnd([3], "float16"), rnd([3], "float16"),
     rnd([3], "float16", low=0.5, high=2)], opset=15)
add("InstanceNormalization", "InstanceNormalization", [rnd([2, 3, 4, 5]), rnd([3]), rnd([3])])
add("InstanceNormalization_eps", "InstanceNormalization", [rnd([2, 3, 6]), rnd([3]), rnd([3])], {"epsilon": 0.1})
add("GroupNormalization_opset18", "GroupNormalization", [rnd([2, 4, 3, 3]), rnd([2]), rnd([2])],
    {"num_groups": 2}, opset=18)
add("GroupNormalization_opset21", "GroupNormalization", [rnd([2, 6, 5]), rnd([6]), rnd([6])],
    {"num_groups": 3, "epsilon": 1e-3}, opset=21)
add("NonZero_f32", "NonZero", [value([[0.0, 1.5, -0.0], [2.0, 0.0, float("nan")]])], opset=13)
add("NonZero_bool", "NonZero", [rnd([2, 3, 4], "bool")], opset=13)
add("NonZero_i64", "NonZero", [rnd([6], "int64", low=-1, high=2)], opset=13)
add("Compress_axis1", "Compress", [rnd([3, 4]), value([True, False, True], "bool")], {"axis": 1}, opset=11)
add("Compress_flat", "Compress", [rnd([2, 3], "int64", low=-5, high=5),
                                  value([False, True, True, False, True, True], "bool")], opset=11)
add("Compress_axis_neg", "Compress", [rnd([2, 3, 2]), value([False, True], "bool")], {"axis": -1}, opset=11)
add("TopK_largest", "TopK", [rnd([3, 6]), const([3])], opset=11, outputs=2)
add("TopK_smallest_axis0", "TopK", [rnd([5, 4]), const([2])], {"axis": 0, "largest": 0}, opset=11, outputs=2)
add("TopK_opset7", "TopK", [rnd([3, 6])], {"k": 2}, opset=7, outputs=2)
add("TopK_ties", "TopK", [value([[1.0, 3.0, 3.0, 2.0, 3.0]]), const([3])], opset=11, outputs=2)
add("TopK_i64", "TopK", [rnd([2, 7], "int64", low=-100, high=100), const([4])], opset=11, outputs=2)
add("TopK_f16", "TopK", [rnd([2, 7], "float16"), const([2])], opset=11, outputs=2)

# NN ops.
add("MatMul_2d", "MatMul", [rnd([3, 4]), rnd([4, 5])], opset=13)
add("MatMul_batched", "MatMul", [rnd([2, 3, 4]), rnd([2, 4, 5])], opset=13)
add("MatMul_broadcast_batch", "MatMul", [rnd([2, 1, 3, 4]), rnd([3, 4, 2])], opset=13)
add("MatMul_1d_left", "MatMul", [rnd([4]), rnd([2, 4, 5])], opset=13)
add("MatMul_1d_right", "MatMul", [rnd([2, 3, 4]), rnd([4])], opset=13)
add("MatMul_1d_both", "MatMul", [rnd([4]), rnd([4])], opset=13)
# Long dot products use positive inputs: with cancellation, ONNX Runtime's float32
# accumulation itself drifts past 1e-5 of the (much smaller) result.
add("MatMul_large_k", "MatMul", [rnd([8, 512], low=0, high=1), rnd([512, 16], low=0, high=1)], opset=13)
add("MatMul_f16", "MatMul", [rnd([3, 8], "float16"), rnd([8, 5], "float16")], opset=13)
add("MatMul_i32", "MatMul", [rnd([3, 4], "int32"), rnd([4, 2], "int32")], opset=13)
add("MatMul_i64", "MatMul", [rnd([3, 4], "int64"), rnd([4, 2], "int64")], opset=13)
add("MatMul_f64", "MatMul", [rnd([3, 4], "float64"), rnd([4, 2], "float64")], opset=13)
add("Gemm_plain", "Gemm", [rnd([3, 4]), rnd([4, 5])], opset=13)
add("Gemm_bias_vector", "Gemm", [rnd([3, 4]), rnd([4, 5]), rnd([5])], opset=13)
add("Gemm_trans_alpha_beta", "Gemm", [rnd([4, 3]), rnd([5, 4]), rnd([3, 5])],
    {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, opset=13)
add("Gemm_bias_column", "Gemm", [rnd([3, 4]), rnd([5, 4]), rnd([3, 1])], {"transB": 1}, opset=13)
add("Gemm_bias_scalar", "Gemm", [rnd([3, 4]), rnd([4, 5]), rnd([])], {"beta": 0.5}, opset=13)
add("Gemm_opset9", "Gemm", [rnd([3, 4]), rnd([4, 5]), rnd([3, 5])], opset=9)
add("Gemm_f16", "Gemm", [rnd([3, 8], "float16"), rnd([8, 5], "float16"), rnd([5], "float16")], opset=13)
add("Gemm_large_k", "Gemm", [rnd([4, 784], low=0, high=1), rnd([10, 784], low=0, high=1), rnd([10])],
    {"transB": 1}, opset=13)
add("Conv_2d_basic", "Conv", [rnd([1, 2, 5, 5]), rnd([3, 2, 3, 3])])
add("Conv_2d_pads_bias", "Conv", [rnd([2, 3, 6, 6]), rnd([4, 3, 3, 3]), rnd([4])], {"pads": [1, 1, 1, 1]})
add("Conv_2d_strides", "Conv", [rnd([1, 2, 7, 8]), rnd([2, 2, 3, 2])], {"strides": [2, 3], "pads": [1, 0, 0, 1]})
add("Conv_2d_dilations", "Conv", [rnd([1, 1, 8, 8]), rnd([2, 1, 3, 3])], {"dilations": [2, 2]})
add("Conv_groups", "Conv", [rnd([1, 4, 5, 5]), rnd([6, 2, 3, 3]), rnd([6])], {"group": 2, "pads": [1, 1, 1, 1]})
add("Conv_depthwise", "Conv", [rnd([1, 3, 5, 5]), rnd([3, 1, 3, 3])], {"group": 3})
add("Conv_same_upper", "Conv", [rnd([1, 2, 5, 6]), rnd([2, 2, 3, 3])], {"auto_pad": "SAME_UPPER", "strides": [2, 2]})
add("Conv_same_lower", "Conv", [rnd([1, 2, 6, 6]), rnd([2, 2, 4, 4])], {"auto_pad": "SAME_LOWER"})
add("Conv_valid", "Conv", [rnd([1, 2, 6, 7]), rnd([2, 2, 3, 3])], {"auto_pad": "VALID", "strides": [2, 2]})
add("Conv_1d", "Conv", [rnd([2, 3, 10]), rnd([4, 3, 3]), rnd([4])], {"pads": [1, 2], "strides": [2]})
add("Conv_3d", "Conv", [rnd([1, 2, 4, 4, 4]), rnd([2, 2, 2, 2, 2])], {"pads": [1, 0, 1, 0, 1, 0]})
add("Conv_kernel_shape_attr", "Conv", [rnd([1, 2, 5, 5]), rnd([3, 2, 3, 3])], {"kernel_shape": [3, 3]})
add("Conv_f16", "Conv", [rnd([1, 2, 5, 5], "float16"), rnd([3, 2, 3, 3], "float16")])
add("MaxPool_2d", "MaxPool", [rnd([1, 2, 6, 6])], {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=12)
add("MaxPool_pads", "MaxPool", [rnd([1, 2, 5, 5])], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=12)
add("MaxPool_ceil", "MaxPool", [rnd([1, 1, 7, 7])], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, opset=12)
add("MaxPool_ceil_pads", "MaxPool", [rnd([1, 1, 6, 6])],
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, opset=12)
add("MaxPool_dilations", "MaxPool", [rnd([1, 1, 7, 7])], {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=12)
add("MaxPool_same_upper", "MaxPool", [rnd([1, 2, 5, 5])], {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, opset=12)
add("MaxPool_1d", "MaxPool", [rnd([2, 3, 9])], {"kernel_shape": [3], "strides": [2]}, opset=12)
add("MaxPool_indices", "MaxPool", [rnd([1, 2, 4, 4])], {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=12, outputs=2)
add("MaxPool_indices_column_major", "MaxPool", [rnd([1, 2, 4, 4])],
    {"kernel_shape": [2, 2], "strides": [2, 2], "storage_order": 1}, opset=12, outputs=2)
add("MaxPool_u8", "MaxPool", [rnd([1, 1, 4, 4], "uint8", low=0, high=255)], {"kernel_shape": [2, 2]}, opset=12)
add("MaxPool_f16", "MaxPool", [rnd([1, 2, 4, 4], "float16")], {"kernel_shape": [2, 2]}, opset=12)
add("AveragePool_2d", "AveragePool", [rnd([1, 2, 6, 6])], {"kernel_shape": [2, 2], "strides": [2, 2]}, opset=11)
add("AveragePool_pads_exclude", "AveragePool", [rnd([1, 2, 5, 5])], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=11)
add("AveragePool_pads_include", "AveragePool", [rnd([1, 2, 5, 5])],
    {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, opset=11)
add("AveragePool_ceil", "AveragePool", [rnd([1, 1, 7, 7])], {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, opset=11)
add("AveragePool_ceil_include_pad", "AveragePool", [rnd([1, 1, 6, 6])],
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1}, opset=11)
add("AveragePool_same_lower", "AveragePool", [rnd([1, 2, 5, 5])], {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}, opset=11)
add("AveragePool_1d", "AveragePool", [rnd([2, 3, 9])], {"kernel_shape": [4], "strides": [3]}, opset=11)
add("AveragePool_dilations", "AveragePool", [rnd([1, 1, 7, 7])], {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=19)
add("AveragePool_f16", "AveragePool", [rnd([1, 2, 4, 4], "float16")], {"kernel_shape": [2, 2]}, opset=11)
add("GlobalAveragePool", "GlobalAveragePool", [rnd([2, 3, 4, 5])])
add("GlobalAveragePool_1d", "GlobalAveragePool", [rnd([2, 3, 7])])
add("GlobalMaxPool", "GlobalMaxPool", [rnd([2, 3, 4, 5])])
add("GlobalAveragePool_f16", "GlobalAveragePool", [rnd([1, 3, 4, 4], "float16")])
RESIZE_X = lambda: rnd([1, 2, 3, 4])  # noqa: E731
for transform in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
    add(f"Resize_linear_up_{transform}", "Resize", [RESIZE_X(), value([], init=True), value([1, 1, 2, 1.5], init=True)],
        {"mode": "linear", "coordinate_transformation_mode": transform}, opset=13)
    add(f"Resize_linear_sizes_{transform}", "Resize",
        [RESIZE_X(), ABSENT, ABSENT, const([1, 2, 5, 3])],
        {"mode": "linear", "coordinate_transformation_mode": transform}, opset=13)
    add(f"Resize_nearest_up_{transform}", "Resize", [RESIZE_X(), ABSENT, value([1, 1, 2, 3], init=True)],
        {"mode": "nearest", "coordinate_transformation_mode": transform}, opset=13)
for nearest_mode in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
    add(f"Resize_nearest_{nearest_mode}", "Resize", [rnd([1, 1, 4, 6]), ABSENT, ABSENT, const([1, 1, 7, 5])],
        {"mode": "nearest", "nearest_mode": nearest_mode}, opset=13)
    add(f"Resize_nearest_asym_{nearest_mode}", "Resize", [rnd([1, 1, 4, 4]), ABSENT, value([1, 1, 1.5, 2.5], init=True)],
        {"mode": "nearest", "nearest_mode": nearest_mode, "coordinate_transformation_mode": "asymmetric"}, opset=13)
add("Resize_linear_down", "Resize", [rnd([1, 1, 8, 8]), ABSENT, value([1, 1, 0.5, 0.6], init=True)], {"mode": "linear"}, opset=13)
add("Resize_opset10_nearest", "Resize", [rnd([1, 1, 2, 3]), value([1, 1, 2, 2], init=True)], {"mode": "nearest"}, opset=10)
add("Resize_opset10_linear", "Resize", [rnd([1, 1, 2, 3]), value([1, 1, 2, 2], init=True)], {"mode": "linear"}, opset=10)
add("Resize_opset11_roi", "Resize", [rnd([1, 1, 3, 3]), value([], init=True), value([1, 1, 2, 2], init=True)],
    {"mode": "linear"}, opset=11)
add("Resize_axes_opset18", "Resize", [rnd([1, 2, 3, 4]), ABSENT, value([2, 2], init=True)],
    {"mode": "nearest", "axes": [2, 3]}, opset=18)
add("Resize_nearest_i32", "Resize", [rnd([1, 1, 2, 3], "int32"), ABSENT, value([1, 1, 2, 2], init=True)], {"mode": "nearest"}, opset=13)
add("Resize_linear_f16", "Resize", [rnd([1, 1, 3, 3], "float16"), ABSENT, value([1, 1, 2, 2], init=True)], {"mode": "linear"}, opset=13)
add("Resize_linear_1d", "Resize", [rnd([2, 5]), ABSENT, value([1, 2.0], init=True)], {"mode": "linear"}, opset=13)
EINSUM = [
    ("matmul", "ij,jk->ik", [[3, 4], [4, 5]]),
    ("batch_matmul", "bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]),
    ("transpose", "ij->ji", [[3, 4]]),
    ("trace", "ii->", [[4, 4]]),
    ("diagonal", "ii->i", [[4, 4]]),
    ("sum_all", "ijk->", [[2, 3, 4]]),
    ("outer", "i,j->ij", [[3], [4]]),
    ("dot", "i,i", [[5], [5]]),
    ("implicit", "ij,jk", [[3, 4], [4, 2]]),
    ("ellipsis", "...ij,...jk->...ik", [[2, 3, 4], [2, 4, 5]]),
    ("ellipsis_broadcast", "...ij,...jk->...ik", [[1, 3, 4], [2, 4, 5]]),
    ("three_operands", "ij,jk,kl->il", [[2, 3], [3, 4], [4, 2]]),
    ("attention", "bhqd,bhkd->bhqk", [[1, 2, 3, 4], [1, 2, 5, 4]]),
    ("reduce_axis", "ijk->ik", [[2, 3, 4]]),
]
for label, equation, shapes in EINSUM:
    add(f"Einsum_{label}", "Einsum", [rnd(s) for s in shapes], {"equation": equation}, opset=12)
add("Einsum_i64", "Einsum", [rnd([2, 3], "int64"), rnd([3, 2], "int64")], {"equation": "ij,jk->ik"}, opset=12)
add("Einsum_f64", "Einsum", [rnd([2, 3], "float64"), rnd([3, 2], "float64")], {"equation": "ij,jk->ik"}, opset=12)


def lstm_inputs(seq, batch, size, hidden, directions, bias=True, h0=False, c0=False, lens=None, peep=False):
    inputs = [rnd([seq, batch, size]), rnd([directions, 4 * hidden, size], init=True),
              rnd([directions, 4 * hidden, hidden], init=True)]
    inputs.append(rnd([directions, 8 * hidden], init=True) if bias else ABSENT)
    inputs.append(const(lens, "int32") if lens is not None else ABSENT)
    inputs.append(rnd([directions, batch, hidden]) if h0 else ABSENT)
    inputs.append(rnd([directions, batch, hidden]) if c0 else ABSENT)
    if peep:
        inputs.append(rnd([directions, 3 * hidden], init=True))
    while inputs and inputs[-1] is ABSENT:
        inputs.pop()
    return inputs


add("LSTM_forward", "LSTM", lstm_inputs(5, 2, 3, 4, 1), {"hidden_size": 4}, opset=14, outputs=3)
add("LSTM_reverse", "LSTM", lstm_inputs(5, 2, 3, 4, 1, h0=True, c0=True), {"hidden_size": 4, "direction": "reverse"}, opset=14, outputs=3)
add("LSTM_bidirectional", "LSTM", lstm_inputs(4, 3, 2, 5, 2, h0=True), {"hidden_size": 5, "direction": "bidirectional"}, opset=14, outputs=3)
add("LSTM_no_bias_y_only", "LSTM", lstm_inputs(3, 1, 3, 2, 1, bias=False), {"hidden_size": 2}, opset=14, outputs=1)
add("LSTM_sequence_lens", "LSTM", lstm_inputs(5, 3, 2, 3, 1, lens=[5, 2, 3]), {"hidden_size": 3}, opset=14, outputs=3)
add("LSTM_sequence_lens_bidirectional", "LSTM", lstm_inputs(4, 2, 2, 3, 2, lens=[4, 2]),
    {"hidden_size": 3, "direction": "bidirectional"}, opset=14, outputs=3)
add("LSTM_peepholes", "LSTM", lstm_inputs(4, 2, 3, 3, 1, c0=True, peep=True), {"hidden_size": 3}, opset=14, outputs=3)
add("LSTM_clip", "LSTM", lstm_inputs(4, 2, 3, 3, 1), {"hidden_size": 3, "clip": 0.5}, opset=14, outputs=3)
add("LSTM_input_forget", "LSTM", lstm_inputs(4, 2, 3, 3, 1), {"hidden_size": 3, "input_forget": 1}, opset=14, outputs=3)
add("LSTM_activations", "LSTM", lstm_inputs(4, 2, 3, 3, 1),
    {"hidden_size": 3, "activations": ["HardSigmoid", "Tanh", "Relu"], "activation_alpha": [0.3],
     "activation_beta": [0.4]}, opset=14, outputs=3)



def gru_inputs(seq, batch, size, hidden, directions, gates=3, bias=True, h0=False, lens=None):
    """GRU (gates=3) or RNN (gates=1) inputs: X, W, R, B, sequence_lens, initial_h."""
    inputs = [rnd([seq, batch, size]), rnd([directions, gates * hidden, size], init=True),
              rnd([directions, gates * hidden, hidden], init=True)]
    inputs.append(rnd([directions, 2 * gates * hidden], init=True) if bias else ABSENT)
    inputs.append(const(lens, "int32") if lens is not None else ABSENT)
    inputs.append(rnd([directions, batch, hidden]) if h0 else ABSENT)
    while inputs and inputs[-1] is ABSENT:
        inputs.pop()
    return inputs


add("GRU_forward", "GRU", gru_inputs(5, 2, 3, 4, 1), {"hidden_size": 4}, opset=14, outputs=2)
add("GRU_linear_before_reset", "GRU", gru_inputs(5, 2, 3, 4, 1, h0=True),
    {"hidden_size": 4, "linear_before_reset": 1}, opset=14, outputs=2)
add("GRU_reverse", "GRU", gru_inputs(4, 3, 2, 3, 1, h0=True), {"hidden_size": 3, "direction": "reverse"},
    opset=14, outputs=2)
add("GRU_bidirectional_lens", "GRU", gru_inputs(4, 2, 2, 3, 2, lens=[4, 2]),
    {"hidden_size": 3, "direction": "bidirectional"}, opset=14, outputs=2)
add("GRU_no_bias_clip", "GRU", gru_inputs(3, 2, 3, 2, 1, bias=False), {"hidden_size": 2, "clip": 0.5},
    opset=14, outputs=2)
add("GRU_activations", "GRU", gru_inputs(4, 2, 3, 3, 1),
    {"hidden_size": 3, "activations": ["HardSigmoid", "Relu"], "activation_alpha": [0.3],
     "activation_beta": [0.4]}, opset=14, outputs=2)
add("RNN_forward", "RNN", gru_inputs(5, 2, 3, 4, 1, gates=1), {"hidden_size": 4}, opset=14, outputs=2)
add("RNN_bidirectional_h0", "RNN", gru_inputs(4, 3, 2, 3, 2, gates=1, h0=True),
    {"hidden_size": 3, "direction": "bidirectional"}, opset=14, outputs=2)
add("RNN_relu_lens", "RNN", gru_inputs(5, 3, 2, 3, 1, gates=1, lens=[5, 2, 3]),
    {"hidden_size": 3, "activations": ["Relu"]}, opset=14, outputs=2)

# ---------------------------------------------------------------------------------
# Running


def build_model(case, arrays):
    graph_inputs, initializers, names = [], [], []
    for index, (spec, array) in enumerate(zip(case.inputs, arrays)):
        if spec is ABSENT:
            names.append("")
            continue
        name = f"in{index}"
        names.append(name)
        if spec.init:
            initializers.append(numpy_helper.from_array(array, name))
        else:
            graph_inputs.append(helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape)))
    while names and names[-1] == "":
        names.pop()
    outputs = [f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, outputs, name=f"node_{case.op}", **case.attrs)
    graph = helper.make_graph([node], case.name, graph_inputs,
                              [onnx.ValueInfoProto(name=o) for o in outputs], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", case.opset)])
    model.ir_version = 8 if case.opset < 21 else 10
    inferred = onnx.shape_inference.infer_shapes(model)
    # Graph outputs get their inferred element type only; shapes come from our rules.
    del model.graph.output[:]
    first_dtype = next((helper.np_dtype_to_tensor_dtype(a.dtype) for a in arrays if a is not None),
                       TensorProto.FLOAT)
    for output in inferred.graph.output:
        # Function ops (GroupNormalization) may come back untyped: same as input 0.
        elem_type = output.type.tensor_type.elem_type or first_dtype
        model.graph.output.append(helper.make_tensor_value_info(output.name, elem_type, None))
    return model


def bfloat16_case(case):
    """*_bf16 cases wrap their node in Casts so that no bfloat16 tensor crosses the
    model boundary: Cast(to=bf16) gets a Cast back to float32 after it; other nodes
    get their float32 inputs cast to bfloat16 first."""
    return case.name.endswith("_bf16")


def make_bf16_model(case, arrays):
    model = build_model(case, arrays)
    graph = model.graph
    node = graph.node[0]
    nodes = [node]
    to_bf16 = case.op == "Cast" and case.attrs.get("to") == TensorProto.BFLOAT16
    if to_bf16:
        for i, name in enumerate(list(node.output)):
            node.output[i] = f"{name}_bf16"
            nodes.append(helper.make_node("Cast", [f"{name}_bf16"], [name], to=TensorProto.FLOAT,
                                          name=f"cast_back{i}"))
        for output in graph.output:
            output.type.tensor_type.elem_type = TensorProto.FLOAT
    else:
        for i, name in enumerate(list(node.input)):
            if name:
                nodes.insert(0, helper.make_node("Cast", [name], [f"{name}_bf16"],
                                                 to=TensorProto.BFLOAT16, name=f"cast{i}"))
                node.input[i] = f"{name}_bf16"
    del graph.node[:]
    graph.node.extend(nodes)
    return model


def run_case(case, tool, work):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    arrays = [None if spec is ABSENT else spec.make(rng) for spec in case.inputs]
    model = make_bf16_model(case, arrays) if bfloat16_case(case) else build_model(case, arrays)
    directory = os.path.join(work, case.name)
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "model.onnx")
    onnx.save(model, path)
    feeds = {}
    for index, graph_input in enumerate(model.graph.input):
        array = arrays[int(graph_input.name[2:])]
        feeds[graph_input.name] = array
        with open(os.path.join(directory, f"input_{index}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, graph_input.name).SerializeToString())
    try:
        names, expected = run_onnxruntime(path, feeds)
    except Exception as error:  # noqa: BLE001 - a case ORT cannot run is a broken case
        return f"onnxruntime failed: {str(error).splitlines()[0][:300]}"
    proc = subprocess.run([tool, path, directory], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return f"stitch_reference exit {proc.returncode}: {proc.stderr.strip()}"
    return compare_reference_outputs(directory, names, expected)


def dtype_label(case):
    if bfloat16_case(case):
        return "bf16"
    rng = np.random.default_rng(0)
    data_inputs = case.inputs[1:] if case.op == "Where" else case.inputs
    for spec in data_inputs:
        if spec is not ABSENT and not spec.init:
            return str(spec.make(rng).dtype)
    if case.op == "Cast":
        return "cast"
    for spec in case.inputs:
        if spec is not ABSENT:
            return str(spec.make(rng).dtype)
    return "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitch-reference", required=True)
    parser.add_argument("--filter", default="")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--coverage", action="store_true")
    args = parser.parse_args()
    cases = [c for c in CASES if args.filter in c.name]
    names = [c.name for c in CASES]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        print(f"duplicate case names: {sorted(duplicates)}")
        return 2
    if args.list:
        for case in cases:
            print(case.name)
        return 0
    passed = failed = 0
    coverage = collections.defaultdict(lambda: [set(), 0, 0])
    with tempfile.TemporaryDirectory(prefix="stitch_op_cases_") as work:
        for case in cases:
            try:
                problem = run_case(case, args.stitch_reference, work)
            except Exception as error:  # noqa: BLE001 - reported per case
                problem = f"{type(error).__name__}: {error}"
            entry = coverage[case.op]
            entry[0].add(dtype_label(case))
            entry[2] += 1
            if problem:
                failed += 1
                print(f"FAIL {case.name} ({case.op}, opset {case.opset}): {problem}")
            else:
                passed += 1
                entry[1] += 1
    if args.coverage:
        print("| op | dtypes | cases passed |")
        print("|---|---|---|")
        for op in sorted(coverage):
            dtypes, ok, total = coverage[op]
            print(f"| {op} | {', '.join(sorted(dtypes))} | {ok}/{total} |")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

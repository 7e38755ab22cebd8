"""Hostile model contents and options (issue 12 #7, #9, #11, #12, part 6 and 8):
attributes of the wrong type, ops that do not exist, stitchopt's own domain, and
option values past their documented bounds. All are exit 2 before anything is
written."""
import numpy as np
from onnx import helper

from case import Case, Step
from models import F, constant, fused_pair_model, make, relu_model, vi, writer


def no_output(work, _):
    return "OUT was created" if (work / "out").exists() else None


def concat_float_axis():
    node = helper.make_node("Concat", ["x", "x"], ["y"], name="concat", axis=1.0)
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 6])])


def softmax_float_axis():
    node = helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=0.0)
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def unknown_attribute():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu", alpha=0.5)
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def missing_required_attribute():
    node = helper.make_node("Cast", ["x"], ["y"], name="cast")
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def unknown_default_op():
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob")
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def op_from_a_later_opset():
    node = helper.make_node("Gelu", ["x"], ["y"], name="gelu")
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=17)


def custom_domain_op():
    node = helper.make_node("Frobnicate", ["x"], ["y"], name="frob", domain="com.example")
    return make([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])],
                extra_opsets=[("com.example", 1)])


def negative_dim():
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", F, [-5, 3])], [vi("y", F, None)])


def huge_constant_of_shape():
    shape = constant("shape", np.array([1 << 20, 1 << 20, 1 << 20], dtype=np.int64))
    return make([helper.make_node("ConstantOfShape", ["shape"], ["big"], name="fill"),
                 helper.make_node("Add", ["big", "x"], ["y"], name="add")],
                [vi("x", F, [1])], [vi("y", F, None)], [shape])


def refused(*message):
    return Step(["{model}", "-o", "{out}"], exit=2, message=message, check=no_output)


def option(*flags, message):
    return Step(["{model}", "-o", "{out}", *flags], exit=2, message=(message,), check=no_output)


CASES = [
    Case("attribute_float_for_int", "issue 12 #7: Concat(axis=1.0) ran as axis 0",
         writer(concat_float_axis),
         [refused('node "concat" (Concat): attribute "axis" is a float, but Concat takes an int')]),
    Case("attribute_float_for_int_softmax", "issue 12 #7: Softmax(axis=0.0) ran as axis -1",
         writer(softmax_float_axis),
         [refused('node "softmax" (Softmax): attribute "axis" is a float, but Softmax takes an int')]),
    Case("attribute_unknown", "issue 12 part 6: attributes an op does not take",
         writer(unknown_attribute),
         [refused('node "relu" (Relu) has attribute "alpha", which Relu does not take')]),
    Case("attribute_missing_required", "issue 12 part 6: a required attribute is missing",
         writer(missing_required_attribute),
         [refused('node "cast" (Cast) lacks the required attribute "to" (an int)')]),
    Case("unknown_default_domain_op", "issue 12: an unknown default-domain op compiled into a model "
         "ONNX Runtime rejects", writer(unknown_default_op),
         [refused('node "frob" (Frobnicate) is not an operator of the default ONNX domain')]),
    Case("op_from_a_later_opset", "issue 12 part 6: an op the model's opset does not have",
         writer(op_from_a_later_opset),
         [refused('node "gelu" (Gelu) needs default-domain opset 20 or newer, but the model '
                  'imports opset 17')]),
    Case("custom_domain_op_passes_through", "issue 12 part 6: ops of other domains stay Opaque",
         writer(custom_domain_op), [Step(["{model}", "-o", "{out}"])]),
    Case("stitchopt_domain_node", "issue 12: a stitchopt-domain node compiled into a model "
         "ONNX Runtime rejects", writer(fused_pair_model),
         [Step(["{model}", "-o", "first"], may_change=("first",)),
          Step(["first/model.fused.onnx", "-o", "{out}"], exit=2, check=no_output,
               message=('is in the domain "stitchopt", which stitchopt keeps for the fused nodes '
                        "it writes: compile the original model",))]),
    Case("negative_input_dim", "issue 12: a negative dim was called symbolic or unknown",
         writer(negative_dim),
         [refused('graph input "x" declares the dim -5, which is negative')]),
    Case("huge_intermediate", "issue 12 #4: extreme shapes reach allocations and index math",
         writer(huge_constant_of_shape),
         [refused('value "big" has type f32[1048576,1048576,1048576], more than the 1024 GiB')]),
    Case("option_nan_gate", "issue 12 #12: --min-compression nan disabled the gate",
         writer(relu_model),
         [option("--min-compression", "nan", message='"nan" is not a number from 0 to 1e+06'),
          option("--min-compression", "inf", message='"inf" is not a number from 0 to 1e+06'),
          option("--solver-time-limit", "nan", message='"nan" is not a number'),
          option("--launch-latency-us", "-1", message='"-1" is not a number from 0')]),
    Case("option_huge_pattern_size", "issue 12 #9, #11: --max-pattern-size 2147483647 was bad_alloc, "
         "30000000 took 2 GB", writer(relu_model),
         [option("--max-pattern-size", "2147483647", message="not in range 1 to 4096"),
          option("--max-pattern-size", "30000000", message="not in range 1 to 4096"),
          Step(["{model}", "-o", "{out}", "--max-pattern-size", "4096"])]),
]

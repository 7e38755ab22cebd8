"""Hostile cases for what the compiled model computes (issue 12; the graph fuzzer's
findings; docs/semantics.md).

  - Finding 07: decompositions held a reference into the graph's value storage
    across adding values: a use-after-free under ASan, without it a Cast to a
    garbage type (exit 1)."""
import numpy as np
from onnx import TensorProto, helper

from case import Case, Step
from models import F, constant, make, vi, writer

F64 = TensorProto.DOUBLE

COMPILE = Step(["{model}", "-o", "{out}"])


def runs(outputs=1):
    """Steps: compile, then the emulated kernels must match the reference."""
    return [COMPILE, Step(["run", "{out}", "--emulate"], message=(f"all {outputs} outputs match",))]


def layer_norm_double():
    """LayerNormalization of float64 with the default stash type float: a Cast to
    float, the normalization, and a Cast back to the type read from the freed value
    storage (finding 07's model, minimized; whether the freed memory is overwritten
    depends on the heap, and this graph of the fuzzer's names with four more nodes
    reproduced exit 1 without ASan)."""
    nodes = [helper.make_node("LayerNormalization", ["input_3", "input_4"],
                              ["LayerNormalization_7"], name="LayerNormalization_5", epsilon=0.5),
             helper.make_node("Less", ["LayerNormalization_7", "input_4"], ["Less_9"],
                              name="Less_8")]
    inputs = [vi("input_3", F64, [8, 8]), vi("input_4", F64, [8])]
    outputs = [vi("Less_9", TensorProto.BOOL, [8, 8])]
    for i in range(4):
        nodes.append(helper.make_node("Relu", [f"in{i}"], [f"out{i}"], name=f"relu{i}"))
        inputs.append(vi(f"in{i}", F, [4]))
        outputs.append(vi(f"out{i}", F, [4]))
    return make(nodes, inputs, outputs, opset=21)


def batch_norm_double():
    one = constant("one", np.array([1.0]))
    return make([helper.make_node("Mish", ["x"], ["m"], name="mish"),
                 helper.make_node("BatchNormalization", ["m", "one", "zero", "zero", "one"], ["y"],
                                  name="norm")],
                [vi("x", F64, [3, 1])], [vi("y", F64, [3, 1])],
                [one, constant("zero", np.array([0.0]))], opset=18)


def group_norm_bfloat16():
    return make([helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"],
                                  name="norm", num_groups=4)],
                [vi("x", TensorProto.BFLOAT16, [4, 4, 4, 4])],
                [vi("y", TensorProto.BFLOAT16, [4, 4, 4, 4])],
                [helper.make_tensor("scale", TensorProto.BFLOAT16, [4], [0.5, 1, 2, -1]),
                 helper.make_tensor("bias", TensorProto.BFLOAT16, [4], [0, 1, -1, 0.25])],
                opset=21)


CASES = [
    Case("decompose_layer_norm_double",
         "fuzz finding 07: use-after-free in decompose_layer_norm (exit 1: a Cast to a garbage type)",
         writer(layer_norm_double), runs(5)),
    Case("decompose_batch_norm_double",
         "fuzz finding 07: use-after-free in decompose_batch_norm",
         writer(batch_norm_double), runs()),
    Case("decompose_group_norm_bfloat16",
         "fuzz finding 07: use-after-free in decompose_group_norm",
         writer(group_norm_bfloat16), runs()),
]

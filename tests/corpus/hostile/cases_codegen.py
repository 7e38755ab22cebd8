"""Values that are legal but unusual (fuzzer findings 3, 19 and 20 of
docs/testing.md): non-finite attribute constants and float16 intermediates that ONNX
rounds before a Cast to float32 must compile and match the reference; a Resize of an
empty axis to a non-empty one, which the reference cannot evaluate, is refused at
compile time instead of by `run`."""
import numpy as np
from onnx import TensorProto, helper

from case import Case, Step
from models import F, constant, make, vi, writer


def elu_infinite_alpha():
    # Elu(alpha=inf) after Log: the constant must be written by its bits, not "inff".
    return make([helper.make_node("Log", ["x"], ["l"], name="log"),
                 helper.make_node("Elu", ["l"], ["y"], name="elu", alpha=float("inf"))],
                [vi("x", F, [2, 7])], [vi("y", F, [2, 7])])


def half_softplus_to_float():
    # Softplus in float16 (opened into Exp, Add, Log), then CastLike to float32: each
    # float16 result is rounded before the next op reads it.
    like = constant("like", np.zeros([4], dtype=np.float32))
    return make([helper.make_node("Softplus", ["x"], ["s"], name="softplus"),
                 helper.make_node("CastLike", ["s", "like"], ["y"], name="to_float")],
                [vi("x", TensorProto.FLOAT16, [64])], [vi("y", F, [64])], [like], opset=15)


def resize_empty_axis():
    sizes = constant("sizes", np.array([1, 8, 8, 7], dtype=np.int64))
    return make([helper.make_node("Resize", ["x", "", "", "sizes"], ["y"], name="resize",
                                  mode="nearest")],
                [vi("x", F, [0, 0, 16, 7])], [vi("y", F, [1, 8, 8, 7])], [sizes])


RUN = Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))

CASES = [
    Case("infinite_attribute_literal", "fuzz finding 3: alpha=inf was printed as inff",
         writer(elu_infinite_alpha), [Step(["{model}", "-o", "{out}"]), RUN]),
    Case("half_intermediate_rounded", "fuzz finding 20: float16 intermediates stayed float",
         writer(half_softplus_to_float), [Step(["{model}", "-o", "{out}"]), RUN]),
    Case("resize_of_empty_axis", "fuzz finding 19: compiled, then refused by run",
         writer(resize_empty_axis),
         [Step(["{model}", "-o", "{out}"], exit=2,
               message=('node "resize" (Resize): resizes an empty axis 0 to 1',))]),
]

"""Hostile cases for `stitchopt run`: outputs that must run, runs that must not pass
vacuously (issue 12 #6, #8)."""
from onnx import helper

from case import Case, Step
from models import F, make, vi, writer


def mul_self():
    return make([helper.make_node("Mul", ["x", "x"], ["y"], name="square")],
                [vi("x", F, [4, 8])], [vi("y", F, [4, 8])])


CASES = [
    Case("unfused_reads_one_tensor_twice", "issue 12 #6: Mul(x, x) compiles but never runs",
         writer(mul_self),
         [Step(["{model}", "-o", "{out}"]),
          Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))]),
]

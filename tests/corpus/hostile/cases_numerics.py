"""Hostile cases for what the compiled model computes (issue 12; the graph fuzzer's
findings; docs/semantics.md).

  - Finding 07: decompositions held a reference into the graph's value storage
    across adding values: a use-after-free under ASan, without it a Cast to a
    garbage type (exit 1); a stash_type of 99 made the same Cast. An int attribute
    naming a data type the op does not take is a bad model (exit 2).
  - Finding 08: GroupNormalization of a batch of 0 reshaped to [0, G, -1], whose -1
    is undetermined: no static type, and `run` refused the model.
  - Findings 11, 16, 17: float16 InstanceNormalization squared past 65504; Softplus
    opened into Log(Exp(x) + 1) was inf from x = 89; the Adds of a 2,000-input
    float16 Sum rounded every partial sum.
  - Finding 13: the reference interpreter turned a NaN into 1 (HardSigmoid) or 0
    (Relu, Celu, Sign) where ONNX Runtime and the decompositions keep it; the
    emitted kernels dropped it the same way.

Three ways to check a model:
  - `run --emulate` (random inputs in [-1, 1]): the emitted kernels agree with the
    reference interpreter, NaNs included where a Sqrt of a negative input makes them;
  - ONNX Runtime on the original model and on OUT/model.fused.onnx (whose function
    bodies hold the simplified graph) with inputs the case gives;
  - the same for a model whose input is a constant: constant folding evaluates it
    with the reference interpreter, so model.fused.onnx carries the interpreter's
    answer and ONNX Runtime on the original model checks it."""
import numpy as np
from onnx import TensorProto, helper

from case import Case, Step
from models import F, constant, make, vi, writer

F16 = TensorProto.FLOAT16
F64 = TensorProto.DOUBLE

COMPILE = Step(["{model}", "-o", "{out}"])


def runs(outputs=1):
    """Steps: compile, then the emulated kernels must match the reference."""
    return [COMPILE, Step(["run", "{out}", "--emulate"], message=(f"all {outputs} outputs match",))]


def agrees_with_onnxruntime(feeds, tolerance):
    """A step check: ONNX Runtime gives the same outputs for the model and for
    OUT/model.fused.onnx: NaN where NaN, equal infinities, elsewhere
    |fused - original| <= tolerance * max(|original|, 1)."""
    def check(work, _completed):
        import onnxruntime  # here, so that listing the cases needs no ONNX Runtime

        options = onnxruntime.SessionOptions()
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3

        def outputs(path):
            session = onnxruntime.InferenceSession(str(path), options,
                                                   providers=["CPUExecutionProvider"])
            names = [output.name for output in session.get_outputs()]
            return dict(zip(names, session.run(None, feeds)))

        original = outputs(work / "model" / "model.onnx")
        fused = outputs(work / "out" / "model.fused.onnx")
        for name, want in original.items():
            want = want.astype(np.float64)
            got = fused[name].astype(np.float64)
            if (np.isnan(want) != np.isnan(got)).any():
                return f"output {name}: NaN in {got} where ONNX Runtime on the model gives {want}"
            infinite = np.isinf(want)
            if (got[infinite] != want[infinite]).any():
                return f"output {name}: {got} where ONNX Runtime on the model gives {want}"
            finite = np.isfinite(want)
            error = np.abs(got[finite] - want[finite]) / np.maximum(np.abs(want[finite]), 1.0)
            if error.size and error.max() > tolerance:
                return (f"output {name}: {got} where ONNX Runtime on the model gives {want} "
                        f"(max relative error {error.max():.3g} > {tolerance})")
        return None
    return check


def compiles_and_agrees(feeds, tolerance=1e-5):
    return [Step(["{model}", "-o", "{out}"], check=agrees_with_onnxruntime(feeds, tolerance))]


def layer_norm_double():
    """LayerNormalization of float64 with the default stash type float, which was
    decomposed into a Cast to float, the normalization and a Cast back to the type
    read from the freed value storage (finding 07's model, minimized; whether the
    freed memory is overwritten depends on the heap, and this graph of the fuzzer's
    names with four more nodes reproduced exit 1 without ASan)."""
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


def with_attribute(op, inputs, attribute, value, opset, input_type=F, output_type=F):
    def build():
        node = helper.make_node(op, inputs, ["y"], name="node", **{attribute: value})
        initializers = [constant("scale", np.ones(4, np.float32))] if "scale" in inputs else []
        return make([node], [vi("x", input_type, [2, 4])], [vi("y", output_type, [2, 4])],
                    initializers, opset=opset)
    return build


def refused(*message):
    return [Step(["{model}", "-o", "{out}"], exit=2, message=message)]


# Finding 08: GroupNormalization of a batch of 0 reshaped to [0, G, -1], whose -1 is
# undetermined: the value had no static type and `run` refused the output.

def group_norm_zero_batch():
    return make([helper.make_node("Asinh", ["x"], ["a"], name="asinh"),
                 helper.make_node("GroupNormalization", ["a", "scale", "bias"], ["y"],
                                  name="norm", num_groups=1)],
                [vi("x", F, [0, 1, 8, 2])], [vi("y", F, [0, 1, 8, 2])],
                [constant("scale", np.array([0.5], np.float32)),
                 constant("bias", np.array([-2.2], np.float32))], opset=18)


# Findings 11, 16, 17: float16 normalizations and sums computed step by step in
# float16 overflowed or drifted; Softplus as Log(Exp(x) + 1) overflowed.

def instance_norm_half():
    values = np.array([-300, 250, 0, 3, -8, 500, 120, -1] * 8, np.float16).reshape(2, 2, 16, 1)
    return make([helper.make_node("InstanceNormalization", ["x", "scale", "scale"], ["y"],
                                  name="norm")],
                [vi("scale", F16, [2])], [vi("y", F16, [2, 2, 16, 1])],
                [constant("x", values)], opset=15)


def softplus():
    return make([helper.make_node("Softplus", ["x"], ["y"], name="softplus")],
                [vi("x", F, [6])], [vi("y", F, [6])])


def wide_half_sum():
    """The Sum of 2000 float16 inputs (finding 17), then a Mean of two: float16 partial
    sums drift past any tolerance (2000 times 5.0 gave 8630) or overflow."""
    return make([helper.make_node("Sum", ["x"] * 2000, ["s"], name="sum"),
                 helper.make_node("Mean", ["s", "x"], ["y"], name="mean")],
                [vi("x", F16, [64])], [vi("y", F16, [64])], opset=13)


# Finding 13: the reference interpreter turned a NaN into 1 (HardSigmoid) or 0 (Relu,
# Celu, Sign) where ONNX Runtime and the decomposition keep it.

def clamping_of_constant_nan():
    """Each activation of constants holding NaN and infinities: constant folding gives
    the reference interpreter's values, which ONNX Runtime on the model checks."""
    ops = [("Relu", {}), ("HardSigmoid", {"alpha": -0.83, "beta": 1.0}), ("HardSwish", {}),
           ("Celu", {}), ("Sign", {}), ("Clip", {}), ("ThresholdedRelu", {}), ("Softplus", {})]
    nodes, outputs = [], []
    for index, (op, attributes) in enumerate(ops):
        inputs = ["c", "low", "high"] if op == "Clip" else ["c"]
        nodes.append(helper.make_node(op, inputs, [f"a{index}"], name=f"act{index}", **attributes))
        nodes.append(helper.make_node("Add", [f"a{index}", "x"], [f"y{index}"], name=f"add{index}"))
        outputs.append(vi(f"y{index}", F, [6]))
    special = np.array([np.nan, -2, 3, np.inf, -np.inf, 0.25], np.float32)
    return make(nodes, [vi("x", F, [6])], outputs,
                [constant("c", special), constant("low", np.array(0, np.float32)),
                 constant("high", np.array(1, np.float32))], opset=17)


def clamping_of_run_time_nan(opset):
    """Sqrt of run's random inputs in [-1, 1] is NaN for half of them; the emitted
    kernels must keep each NaN where the reference does. HardSigmoid is decomposed
    from opset 8 and emitted as itself before."""
    def build():
        ops = [("Relu", {}), ("HardSigmoid", {"alpha": -0.83, "beta": 1.0}), ("Celu", {}),
               ("Sign", {}), ("HardSwish", {})] if opset >= 8 else [("HardSigmoid", {})]
        nodes = [helper.make_node("Sqrt", ["x"], ["root"], name="sqrt")]
        outputs = []
        for index, (op, attributes) in enumerate(ops):
            nodes.append(helper.make_node(op, ["root"], [f"y{index}"], name=f"act{index}",
                                          **attributes))
            outputs.append(vi(f"y{index}", F, [4, 64]))
        return make(nodes, [vi("x", F, [4, 64])], outputs, opset=opset)
    return build


STASH_MESSAGE = ('node "node" (LayerNormalization): attribute "stash_type" is 99, which is no '
                 'data type LayerNormalization takes there; set it to 1 (float) or 16 (bfloat16)')

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
    Case("layer_norm_stash_type_99",
         "fuzz finding 07: stash_type 99 became a Cast to type 99 (exit 1)",
         writer(with_attribute("LayerNormalization", ["x", "scale"], "stash_type", 99, 17)),
         refused(STASH_MESSAGE)),
    Case("layer_norm_stash_type_int64",
         "an int64 stash type: statistics of an integer type",
         writer(with_attribute("LayerNormalization", ["x", "scale"], "stash_type", 7, 17)),
         refused('attribute "stash_type" is 7, which is no data type LayerNormalization takes')),
    Case("group_norm_stash_type_99", "GroupNormalization-21's stash_type names no type",
         writer(lambda: make([helper.make_node("GroupNormalization", ["x", "scale", "bias"], ["y"],
                                               name="node", num_groups=2, stash_type=99)],
                             [vi("x", F, [1, 4, 3])], [vi("y", F, [1, 4, 3])],
                             [constant("scale", np.ones(4, np.float32)),
                              constant("bias", np.zeros(4, np.float32))], opset=21)),
         refused('node "node" (GroupNormalization): attribute "stash_type" is 99')),
    Case("eye_like_dtype_99", "EyeLike's dtype names no type: passed on to the runtime",
         writer(with_attribute("EyeLike", ["x"], "dtype", 99, 17)),
         refused('node "node" (EyeLike): attribute "dtype" is 99, which is no data type '
                 'EyeLike takes there; set it to 1 (float), 2 (uint8)')),
    Case("random_uniform_like_dtype_int64", "RandomUniformLike of an integer type",
         writer(with_attribute("RandomUniformLike", ["x"], "dtype", 7, 17,
                               output_type=TensorProto.INT64)),
         refused('node "node" (RandomUniformLike): attribute "dtype" is 7, which is no data '
                 'type RandomUniformLike takes there; set it to 1 (float), 10 (float16) or '
                 '11 (double)')),
    Case("wide_half_sum",
         "fuzz finding 17: a float16 Sum of 2000 inputs rounded every partial sum",
         writer(wide_half_sum),
         compiles_and_agrees({"x": np.linspace(-5, 30, 64).astype(np.float16)}, tolerance=1e-2)
         + [Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))],
         timeout=120),
    Case("group_norm_zero_batch",
         "fuzz finding 08: GroupNormalization of N = 0 left [0,1,?], which run refused",
         writer(group_norm_zero_batch), runs()),
    Case("clamping_of_constant_nan",
         "fuzz finding 13: the reference interpreter's HardSigmoid(NaN) was 1, Relu(NaN) 0",
         writer(clamping_of_constant_nan),
         compiles_and_agrees({"x": np.zeros(6, np.float32)})),
    Case("clamping_of_run_time_nan",
         "fuzz finding 13: emitted Relu, Celu, Sign dropped a NaN the reference keeps",
         writer(clamping_of_run_time_nan(17)), runs(5)),
    Case("hard_sigmoid_emitted_nan",
         "fuzz finding 13: the emitted HardSigmoid (opset 7, not decomposed) used fmaxf",
         writer(clamping_of_run_time_nan(7)), runs(1)),
    Case("instance_norm_half_overflow",
         "fuzz finding 11: float16 InstanceNormalization squared past 65504 (off by 3.9)",
         writer(instance_norm_half),
         compiles_and_agrees({"scale": np.array([1, -2], np.float16)}, tolerance=1e-2)),
    Case("softplus_large_inputs",
         "fuzz finding 16: Softplus as Log(Exp(x) + 1) was inf from x = 89",
         writer(softplus),
         compiles_and_agrees({"x": np.array([1, 50, 100, 1000, -1000, -20], np.float32)})
         + [Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",))]),
]

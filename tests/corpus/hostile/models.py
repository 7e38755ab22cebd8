"""Helpers the hostile cases share: small ONNX models written without the checker."""
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def vi(name, elem=F, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def make(nodes, inputs, outputs, initializers=(), opset=17, functions=(), extra_opsets=()):
    graph = helper.make_graph(nodes, "hostile", inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, functions=list(functions),
                              producer_name="stitchopt tests/corpus/hostile")
    model.ir_version = 8
    return model


def writer(build, file="model.onnx"):
    """A Case.write function: serializes build() into the model directory."""
    def write(model_dir: Path) -> Path:
        path = model_dir / file
        path.write_bytes(build().SerializeToString())
        return path
    return write


def constant(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def relu_model(input_shape=(2, 3)):
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", F, input_shape)], [vi("y", F, input_shape)])


def fused_pair_model(input_shape=(2, 3)):
    """Relu then Neg: the planner fuses them into one stitchopt node."""
    return make([helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Neg", ["r"], ["y"], name="neg")],
                [vi("x", F, input_shape)], [vi("y", F, input_shape)])

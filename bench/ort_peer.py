"""ONNX Runtime as the peer stitchopt's kernel counts are compared with
(bench/fusion_peers.py, tests/exports/check_exports.py).

The peer is ONNX Runtime's graph after ORT_ENABLE_ALL, at the same static input shapes
stitchopt compiles with, counted as nodes that launch work: views (Reshape, Flatten,
Squeeze, Unsqueeze, Identity), Constant, and the shape queries Shape and Size, which a
GPU runtime answers on the host, are not counted, as stitchopt's kernels.original
does not count them (docs/report-schema.md).
"""
import onnx
import onnxruntime as ort

NO_WORK = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Constant", "Shape", "Size"}


def fix_input_shapes(path, shapes, out_path):
    """Writes the model at `path` with the named inputs' dims fixed to `shapes`
    ({input name: [dims]}), so ONNX Runtime's optimizer sees what stitchopt sees with
    --input-shape. Returns out_path."""
    model = onnx.load(path)
    for value in model.graph.input:
        if value.name in shapes:
            for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
                dim.ClearField("dim_param")
                dim.dim_value = size
    onnx.save(model, out_path, save_as_external_data=False)
    return out_path


def session(path, optimized_path=None):
    """A CPU inference session; with optimized_path, at ORT_ENABLE_ALL writing the
    optimized graph there."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if optimized_path:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.optimized_model_filepath = optimized_path
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def work_nodes(optimized_path):
    """Nodes of an optimized graph that launch work."""
    graph = onnx.load(optimized_path, load_external_data=False).graph
    return sum(1 for node in graph.node if node.op_type not in NO_WORK)

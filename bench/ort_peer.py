"""ONNX Runtime as the peer stitchopt's kernel counts are compared with
(bench/fusion_peers.py, tests/exports/check_exports.py).

The peer is ONNX Runtime's graph after ORT_ENABLE_ALL, at the same static input shapes
stitchopt compiles with, counted as nodes that launch work: views (Reshape, Flatten,
Squeeze, Unsqueeze, Identity), Constant, and the shape queries Shape and Size, which a
GPU runtime answers on the host, are not counted, as stitchopt's kernels.original
does not count them (docs/report-schema.md).

Global-memory traffic (bytes_moved) is counted the same way on both sides: every work
node reads each of its inputs (weights included) and writes each of its outputs once.
ONNX Runtime's side is its graph at ORT_ENABLE_EXTENDED (its fusions: FusedConv with an
activation, QuickGelu, BiasGelu, LayerNormalization, ...), without the CPU-only NCHWc
layout nodes that ORT_ENABLE_ALL adds, which would only inflate its traffic.
"""
import numpy as np
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


def session(path, optimized_path=None, level=ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
    """A CPU inference session; with optimized_path, at `level` (ORT_ENABLE_ALL)
    writing the optimized graph there."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if optimized_path:
        options.graph_optimization_level = level
        options.optimized_model_filepath = optimized_path
    return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def work_nodes(optimized_path):
    """Nodes of an optimized graph that launch work."""
    graph = onnx.load(optimized_path, load_external_data=False).graph
    return sum(1 for node in graph.node if node.op_type not in NO_WORK)


def extended_graph(path, optimized_path):
    """Writes ONNX Runtime's ORT_ENABLE_EXTENDED graph of the model at `path` (static
    input shapes) to optimized_path. Returns optimized_path."""
    session(path, optimized_path, ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED)
    return optimized_path


def value_bytes(model):
    """Name -> bytes of every value of `model` whose type is static (inputs, outputs,
    value_info after ONNX shape inference, initializers)."""
    try:
        model = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - custom domains: keep the types it has
        pass
    graph = model.graph
    sizes = {}
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        tensor = info.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tensor.shape.dim]
        if tensor.HasField("shape") and all(d >= 0 for d in dims) and tensor.elem_type:
            item = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)).itemsize
            sizes[info.name] = int(np.prod(dims, dtype=np.int64)) * item
    for init in graph.initializer:
        item = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(init.data_type)).itemsize
        sizes[init.name] = int(np.prod(init.dims, dtype=np.int64)) * item
    return sizes


def bytes_moved(graph, sizes):
    """(bytes, unknown value names): every work node of `graph` reads each input and
    writes each output once; `sizes` maps value names to bytes."""
    total = 0
    unknown = set()
    for node in graph.node:
        if node.op_type in NO_WORK:
            continue
        for name in set(node.input) | set(node.output):
            if not name:
                continue
            if name in sizes:
                total += sizes[name]
            else:
                unknown.add(name)
    return total, unknown


def measured_bytes(model, names, feeds):
    """Bytes of the values `names` of `model` (a graph ONNX Runtime runs, such as its
    own optimized one, whose types it did not record), from a run on `feeds`."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    del model.graph.output[:]
    for name in sorted(names):
        model.graph.output.append(onnx.ValueInfoProto(name=name))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    run = ort.InferenceSession(model.SerializeToString(), options,
                               providers=["CPUExecutionProvider"])
    values = run.run(sorted(names), feeds)
    return {name: int(value.nbytes) for name, value in zip(sorted(names), values)}

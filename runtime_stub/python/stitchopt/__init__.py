"""stitchopt: run a model compiled by `stitchopt MODEL -o OUT` from Python.

    import numpy as np
    import stitchopt
    session = stitchopt.InferenceSession("out")          # GPU if usable, else emulated
    name = session.get_inputs()[0].name
    logits, = session.run(None, {name: np.zeros((32, 784), np.float32)})

InferenceSession has ONNX Runtime's signature (get_inputs, get_outputs, run), so that
moving from onnxruntime is a one-line change. It takes numpy arrays and any DLPack
producer (torch, CuPy, JAX) without copying them: host inputs give numpy outputs,
CUDA inputs give outputs on the same device, of the first CUDA input's framework
(torch or CuPy), ordered on its current stream. stitchopt.torch.Module wraps a
session as a torch module. docs/runtime.md, "From Python", has the whole story.

Errors: ValueError for a bad argument (unknown or missing input, wrong dtype or shape,
a non-contiguous array, a tensor on the wrong device, an output directory that is not
one or was changed), RuntimeError when no GPU is usable for backend="gpu" or for an
internal error. A session stays usable after either.
"""
import os

import numpy as np

from . import _stitchopt

__version__ = _stitchopt.version
__all__ = ["InferenceSession", "NodeArg", "__version__"]

# ONNX TensorProto element types: (ONNX Runtime's type string, numpy dtype or None).
_ONNX_TYPES = {
    1: ("tensor(float)", np.float32),
    2: ("tensor(uint8)", np.uint8),
    3: ("tensor(int8)", np.int8),
    4: ("tensor(uint16)", np.uint16),
    5: ("tensor(int16)", np.int16),
    6: ("tensor(int32)", np.int32),
    7: ("tensor(int64)", np.int64),
    9: ("tensor(bool)", np.bool_),
    10: ("tensor(float16)", np.float16),
    11: ("tensor(double)", np.float64),
    12: ("tensor(uint32)", np.uint32),
    13: ("tensor(uint64)", np.uint64),
    16: ("tensor(bfloat16)", None),  # numpy has no bfloat16
}

# DLPack device types.
_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 1, 2, 13


class NodeArg:
    """A model input or output, as onnxruntime.NodeArg: name, type, shape."""

    def __init__(self, name, dtype, shape):
        self.name = name
        self.type = _ONNX_TYPES.get(dtype, ("tensor(%d)" % dtype, None))[0]
        self.shape = list(shape)
        self.onnx_dtype = dtype  # the TensorProto element type

    def __repr__(self):
        return "NodeArg(name=%r, type=%r, shape=%r)" % (self.name, self.type, self.shape)


def _out_dir(path):
    """OUT itself, or OUT for OUT/model.fused.onnx (what onnxruntime would be given)."""
    path = os.fspath(path)
    if os.path.basename(path) == "model.fused.onnx" and os.path.isfile(path):
        return os.path.dirname(path) or "."
    return path


def _backend(providers, backend):
    """The backend asked for: `backend` when given, else from ONNX Runtime's provider
    list (a GPU provider alone: "gpu"; a GPU provider with the CPU one: "auto"; the CPU
    one alone: "emulated")."""
    if backend is not None:
        return backend
    if not providers:
        return "auto"
    names = [p[0] if isinstance(p, (tuple, list)) else p for p in providers]
    gpu = any(n in ("CUDAExecutionProvider", "TensorrtExecutionProvider") for n in names)
    cpu = "CPUExecutionProvider" in names
    if gpu:
        return "auto" if cpu else "gpu"
    if cpu:
        return "emulated"
    raise ValueError("providers %r: stitchopt knows CUDAExecutionProvider, "
                     "TensorrtExecutionProvider and CPUExecutionProvider" % (names,))


def _device(value):
    """(DLPack device type, device id) of an array-like."""
    if hasattr(value, "__dlpack_device__"):
        kind, index = value.__dlpack_device__()
        return int(kind), int(index)
    return _DLPACK_CPU, 0


def _as_array(name, value):
    """An input as something the binding takes: numpy arrays and DLPack producers as
    they are, anything else through numpy.asarray."""
    if isinstance(value, np.ndarray) or hasattr(value, "__dlpack__"):
        return value
    try:
        return np.asarray(value)
    except Exception as error:  # noqa: BLE001 - any conversion failure is the caller's
        raise ValueError("input %r: %s is neither an array nor convertible to one (%s)"
                         % (name, type(value).__name__, error)) from None


def _cuda_allocator(first_cuda):
    """A function (shape, onnx dtype) -> empty array on the device of `first_cuda`, in
    its framework, and the cudaStream_t (an int) its current stream is."""
    module = type(first_cuda).__module__.split(".")[0]
    if module == "torch":
        import torch
        from .torch import torch_dtype
        device = first_cuda.device
        stream = torch.cuda.current_stream(device).cuda_stream or 1  # 1: cudaStreamLegacy

        def allocate(shape, dtype):
            return torch.empty(shape, dtype=torch_dtype(dtype), device=device)
        return allocate, stream
    if module == "cupy":
        import cupy
        device_id = first_cuda.device.id
        with cupy.cuda.Device(device_id):
            stream = cupy.cuda.get_current_stream().ptr or 1

        def allocate(shape, dtype):
            with cupy.cuda.Device(device_id):
                return cupy.empty(shape, dtype=_numpy_dtype(dtype))
        return allocate, stream
    raise ValueError("CUDA inputs of %s: stitchopt allocates CUDA outputs with torch or "
                     "CuPy; pass torch or CuPy tensors, or give output buffers" % module)


def _numpy_dtype(dtype):
    numpy_dtype = _ONNX_TYPES.get(dtype, (None, None))[1]
    if numpy_dtype is None:
        raise ValueError("an output of ONNX type %d has no numpy dtype; use torch tensors "
                         "(stitchopt.torch.Module)" % dtype)
    return numpy_dtype


class InferenceSession:
    """A compiled model, opened once and run many times (ONNX Runtime's signature).

    path: the output directory of `stitchopt MODEL -o OUT` (or OUT/model.fused.onnx).
    providers: ONNX Runtime's list, mapped to a backend (see `backend`).
    backend: "auto" (the GPU when one is usable, else the generated kernels emulated
      on the CPU), "gpu" (an error without one), "emulated" or "reference" (the
      reference interpreter). The chosen one is in .backend.
    device_id: the GPU. cuda_graphs: capture the steps at the first run on a GPU and
      replay them after (the default); .launch_mode says what happens.
    """

    def __init__(self, path, sess_options=None, providers=None, provider_options=None,
                 *, backend=None, device_id=0, cuda_graphs=True):
        del sess_options, provider_options  # ONNX Runtime's; nothing of theirs applies
        self._session = _stitchopt.Session(_out_dir(path), _backend(providers, backend),
                                           int(device_id), bool(cuda_graphs))
        self._inputs = [NodeArg(*info) for info in self._session.inputs()]
        self._outputs = [NodeArg(*info) for info in self._session.outputs()]
        self._output_by_name = {o.name: o for o in self._outputs}

    @property
    def backend(self):
        """"CPU: emulated kernels", "CPU: reference interpreter", or the GPU's name."""
        return self._session.backend

    @property
    def launch_mode(self):
        """How the steps are launched: "CUDA graph replay (...)", "one launch per step:
        <why>", ..."""
        return self._session.launch_mode

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_providers(self):
        return ["stitchopt"]

    def run(self, output_names, input_feed, run_options=None):
        """The outputs `output_names` names (None: all), in that order, for the inputs
        `input_feed` ({name: array}) gives."""
        del run_options
        return self._run(output_names, input_feed)

    def run_with_outputs(self, input_feed, outputs, stream=0):
        """IoBinding style: writes into `outputs` ({name: preallocated array}), ordered
        on `stream` (a cudaStream_t as an int, 0 for none)."""
        feed = [(name, _as_array(name, value)) for name, value in self._feed(input_feed)]
        self._session.run(feed, list(outputs.items()), int(stream))

    def close(self):
        """Frees everything the session allocated (also done when it is collected)."""
        self._session.close()

    def _feed(self, input_feed):
        if not isinstance(input_feed, dict):
            raise ValueError("input_feed must be a dict {input name: array}, not %s"
                             % type(input_feed).__name__)
        return input_feed.items()

    def _run(self, output_names, input_feed, allocate=None, stream=0):
        """run(), with the outputs made by `allocate(shape, onnx dtype)` and the run
        ordered on `stream`; without `allocate`, numpy arrays for host inputs, else
        arrays of the first CUDA input's framework on its current stream."""
        feed = [(name, _as_array(name, value)) for name, value in self._feed(input_feed)]
        by_name = self._output_by_name
        names = [o.name for o in self._outputs] if output_names is None else list(output_names)
        for name in names:
            if name not in by_name:
                raise ValueError("run: the model has no output %r (its outputs: %s)"
                                 % (name, ", ".join(by_name)))
        if allocate is None:
            cuda = [value for _, value in feed
                    if _device(value)[0] in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)]
            if cuda and self.backend.startswith("CPU"):
                name = next(n for n, v in feed if v is cuda[0])
                raise ValueError("input %r is on CUDA device %d, but this session runs on %s; "
                                 "pass host memory" % (name, _device(cuda[0])[1], self.backend))
            if cuda:
                allocate, stream = _cuda_allocator(cuda[0])
            else:
                def allocate(shape, dtype):
                    return np.empty(shape, dtype=_numpy_dtype(dtype))
        results = [allocate(by_name[name].shape, by_name[name].onnx_dtype) for name in names]
        self._session.run(feed, list(zip(names, results)), stream)
        return results

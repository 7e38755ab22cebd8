"""stitchopt.torch.Module: a compiled model as a torch module.

    import stitchopt.torch
    model = stitchopt.torch.Module("out")
    logits = model(pixels)              # torch tensors in, torch tensors out

Positional arguments are the model's inputs in order, keyword arguments by name.
Outputs are torch tensors on the inputs' device (the CPU, or the CUDA device of the
first CUDA input), ordered on that device's current stream; one output is returned
as a tensor, several as a tuple. Non-contiguous inputs are made contiguous (a copy),
as torch operators accept them. No autograd: the module is for inference.
"""
import torch

from . import InferenceSession

_TORCH_DTYPES = {
    1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
    7: torch.int64, 9: torch.bool, 10: torch.float16, 11: torch.float64, 16: torch.bfloat16,
}


def torch_dtype(onnx_dtype):
    """The torch dtype of an ONNX TensorProto element type."""
    if onnx_dtype not in _TORCH_DTYPES:
        raise ValueError("ONNX element type %d has no torch dtype" % onnx_dtype)
    return _TORCH_DTYPES[onnx_dtype]


class Module(torch.nn.Module):
    """A compiled output directory as an nn.Module (InferenceSession's arguments)."""

    def __init__(self, out_dir, backend=None, device_id=0, cuda_graphs=True):
        super().__init__()
        self.session = InferenceSession(out_dir, backend=backend, device_id=device_id,
                                        cuda_graphs=cuda_graphs)
        self.input_names = [i.name for i in self.session.get_inputs()]
        self.output_names = [o.name for o in self.session.get_outputs()]

    def forward(self, *args, **kwargs):
        if len(args) > len(self.input_names):
            raise ValueError("%d positional inputs for a model of %d inputs (%s)"
                             % (len(args), len(self.input_names), ", ".join(self.input_names)))
        feed = dict(zip(self.input_names, args))
        for name, value in kwargs.items():
            if name in feed:
                raise ValueError("input %r given both by position and by name" % name)
            feed[name] = value
        for name, value in feed.items():
            if not isinstance(value, torch.Tensor):
                raise ValueError("input %r: a %s, not a torch.Tensor" % (name, type(value).__name__))
            if not value.is_contiguous():
                feed[name] = value.contiguous()
        device = next((t.device for t in feed.values() if t.is_cuda), torch.device("cpu"))
        stream = 0
        if device.type == "cuda":
            stream = torch.cuda.current_stream(device).cuda_stream or 1  # 1: cudaStreamLegacy

        def allocate(shape, dtype):
            return torch.empty(shape, dtype=torch_dtype(dtype), device=device)
        with torch.no_grad():
            outputs = self.session._run(None, feed, allocate, stream)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

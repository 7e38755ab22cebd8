#!/usr/bin/env python3
"""PyTorch peers for bench/gpu: the TransformerEncoder of
bench/export_transformer_encoder.py (2 layers, d_model 256, 8 heads, feed-forward 1024,
batch first, float32) timed on the GPU in eager mode (training mode with dropout 0, the
function the ONNX export computes; and eval mode under no_grad, PyTorch's fused
inference fast path) and under torch.compile (training mode, dropout 0; default and
reduce-overhead, which replays CUDA graphs), at the shapes given.

    python3 bench/gpu/torch_peer.py 8x64 32x128

Prints one line per (shape, variant): the median of 200 CUDA-event-timed runs after
20 warm-ups, each run on the same input (the activations are re-read from L2 just as
stitchopt bench's are).
"""
import sys
import time

import torch


def median_ms(function, warmup=20, iterations=200):
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        function()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2], times[len(times) // 10], times[(9 * len(times)) // 10]


def encoder():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                             dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).cuda()


def report(shape, variant, result):
    median, p10, p90 = result
    print(f"torch {shape} {variant}: median {median * 1000:.1f} us (p10 {p10 * 1000:.1f}, "
          f"p90 {p90 * 1000:.1f})", flush=True)


def main():
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 GEMMs, as stitchopt's cuBLASLt
    torch.backends.cudnn.allow_tf32 = False
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}", flush=True)
    for shape in sys.argv[1:] or ["8x64"]:
        batch, sequence = (int(v) for v in shape.split("x"))
        model = encoder()
        x = torch.randn(batch, sequence, 256, device="cuda")
        with torch.no_grad():
            model.train()
            report(shape, "eager (train mode, dropout 0)", median_ms(lambda: model(x)))
            model.eval()
            report(shape, "eager (eval, no_grad: fast path)", median_ms(lambda: model(x)))
            # Compiled in training mode with dropout 0: the function the ONNX export
            # computes, which Dynamo traces whole (eval mode's fast path is one opaque op).
            model.train()
            for mode in ["default", "reduce-overhead"]:
                torch._dynamo.reset()
                torch._dynamo.utils.counters.clear()
                compiled = torch.compile(model, mode=mode)
                begin = time.time()
                compiled(x)
                torch.cuda.synchronize()
                took = time.time() - begin
                stats = dict(torch._dynamo.utils.counters["stats"])
                breaks = sum(torch._dynamo.utils.counters["graph_break"].values())
                report(shape, f"torch.compile mode={mode} (compiled in {took:.0f} s, "
                       f"{stats.get('unique_graphs', '?')} graphs, {breaks} breaks)",
                       median_ms(lambda: compiled(x)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

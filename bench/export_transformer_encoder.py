#!/usr/bin/python3
"""Exports the stock torch.nn.TransformerEncoder of issue 14 (2 layers, d_model 256, 8
heads, feed-forward 1024, input [8, 64, 256]) with torch.onnx.export at opset 17, the
way a new user would, for `stitchopt` and `stitchopt profile` (docs/benchmarks.md).

Needs Debian's torch (apt-get install python3-torch python3-onnx; run with
/usr/bin/python3). Fixed seed: the export is reproducible.

    /usr/bin/python3 bench/export_transformer_encoder.py /tmp/encoder.onnx [--sequence-first]
        [--batch B] [--sequence S]

--sequence-first exports PyTorch's default layout instead (batch_first=False, input
[64, 8, 256]): its attention moves rows between [S, B, E] and [B, S, E] around the heads.
--batch and --sequence change the input's shape (default 8 and 64), not the weights:
bench/gpu/ times a larger one that fills the GPU.
"""
import argparse
import sys

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", nargs="?", default="encoder.onnx")
    parser.add_argument("--sequence-first", action="store_true")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--sequence", type=int, default=64)
    args = parser.parse_args()
    sequence_first, path = args.sequence_first, args.path
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                             dropout=0.0, batch_first=not sequence_first)
    # Training mode with dropout 0 computes the same function and keeps the export off
    # the fused inference fast path (aten::_transformer_encoder_layer_fwd), which has no
    # ONNX form.
    model = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).train()
    batch, sequence = args.batch, args.sequence
    x = torch.randn(sequence, batch, 256) if sequence_first else torch.randn(batch, sequence, 256)
    torch.onnx.export(model, (x,), path, opset_version=17, input_names=["x"], output_names=["y"])
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

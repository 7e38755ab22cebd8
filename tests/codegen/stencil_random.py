#!/usr/bin/env python3
"""Random stencils end to end: seeded random window geometries against the reference.

codegen.stencil_schedules pins chosen cases; this draws others from a fixed seed
(STITCH_STENCIL_SEED overrides it, STITCH_STENCIL_CASES the count, for a wider local
sweep): a depthwise Conv with a channel multiplier, a grouped Conv (2 to 16 channels
and 1 to 5 filters per group), a MaxPool or an AveragePool; 1-D or 2-D; kernel sizes,
strides, dilations (Conv and MaxPool: AveragePool has none at opset 17), asymmetric
pads, ceil_mode (never where its last window would start in the end padding: see
output_size) and count_include_pad drawn at random; a SiLU before and a ReLU after, or
not. Every case must generate a kernel holding the stencil, and that kernel, staged
in shared memory or not, must match the reference interpreter under `stitchopt run
--emulate` (model_outputs.py); with --nvcc every kernel also compiles with nvcc and
NVRTC. Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: stencil_random.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
"""
import os
import sys

import numpy as np
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_outputs import run_small_model_cases  # noqa: E402
from stencil_schedules import F, check, conv, graph_model, silu, weights  # noqa: E402

SEED = int(os.environ.get("STITCH_STENCIL_SEED", "20261127"))
COUNT = int(os.environ.get("STITCH_STENCIL_CASES", "14"))


def output_size(size, kernel, stride, dilation, pad_begin, pad_end, ceil):
    """The output size, or 0 where there is none or where ceil_mode's last window would
    start in the end padding: stitchopt drops that window, as PyTorch does
    (ir/core/window.cc), but the opset-17 formula and the onnx package's shape
    inference, which declares these models' output shapes, keep it (stitchopt then
    refuses the declared shape, exit 2)."""
    extent = (kernel - 1) * dilation + 1
    span = size + pad_begin + pad_end - extent
    if span < 0:
        return 0
    out = (span + (stride - 1 if ceil else 0)) // stride + 1
    if ceil and (out - 1) * stride >= size + pad_begin:
        return 0
    return out


def random_case(rng, index):
    """(name, model, expected) of one random stencil model."""
    kind = ["depthwise", "grouped", "maxpool", "avgpool"][index % 4]
    rank = 1 if rng.random() < 0.3 else 2
    batch = int(rng.integers(1, 3))
    if kind == "depthwise":
        groups, in_per_group, out_per_group = int(rng.integers(2, 9)), 1, int(rng.integers(1, 3))
    elif kind == "grouped":
        groups = int(rng.integers(2, 6))
        in_per_group = int(rng.choice([2, 3, 4, 8, 16]))
        out_per_group = int(rng.integers(1, 6))
    else:
        groups, in_per_group, out_per_group = int(rng.integers(1, 9)), 1, 1
    channels = groups * in_per_group
    while True:
        sizes = [int(rng.integers(8, 300))] if rank == 1 else [int(rng.integers(4, 25)) for _ in range(2)]
        kernels = [int(rng.choice([1, 2, 3, 5, 7] if rank == 2 else [2, 3, 5, 9, 31])) for _ in sizes]
        if kind in ("maxpool", "avgpool") and max(kernels) == 1:
            kernels[0] = 2
        strides = [int(rng.choice([1, 1, 2])) for _ in sizes]
        dilations = [1 if kind == "avgpool" else int(rng.choice([1, 1, 2])) for _ in sizes]
        pads = [int(rng.integers(0, k // 2 + 1)) for k in kernels for _ in range(2)]
        begins, ends = pads[0::2], pads[1::2]
        pads = begins + ends
        ceil = kind in ("maxpool", "avgpool") and bool(rng.random() < 0.4)
        outs = [output_size(s, k, st, d, b, e, ceil)
                for s, k, st, d, b, e in zip(sizes, kernels, strides, dilations, begins, ends)]
        if min(outs) >= 1:
            break
    name = f"random_{index}_{kind}_{rank}d"
    nodes, inits = [], []
    x = "x"
    if rng.random() < 0.5:
        nodes += silu("x", "a")
        x = "a"
    if kind in ("depthwise", "grouped"):
        filters = groups * out_per_group
        bias = rng.random() < 0.7
        inits += [weights("w", [filters, in_per_group] + kernels, index * 2 + 1)]
        if bias:
            inits.append(weights("b", [filters], index * 2 + 2))
        nodes.append(conv(x, "s", "w", "b" if bias else None, group=groups, kernel_shape=kernels,
                          strides=strides, dilations=dilations, pads=pads))
    elif kind == "maxpool":
        nodes.append(helper.make_node("MaxPool", [x], ["s"], name="s", kernel_shape=kernels,
                                      strides=strides, dilations=dilations, pads=pads,
                                      ceil_mode=int(ceil)))
    else:
        nodes.append(helper.make_node("AveragePool", [x], ["s"], name="s", kernel_shape=kernels,
                                      strides=strides, pads=pads, ceil_mode=int(ceil),
                                      count_include_pad=int(rng.random() < 0.5)))
    y = "s"
    if rng.random() < 0.5:
        nodes.append(helper.make_node("Relu", ["s"], ["y"], name="y"))
        y = "y"
    model = graph_model(name, [("x", F, [batch, channels] + sizes)], nodes, [(y, F)], inits)
    # The stencil must be generated; its composition and the kernel count are the
    # planner's to choose.
    return name, model, {"s"}, None, None


def cases():
    rng = np.random.default_rng(SEED)
    return [random_case(rng, index) for index in range(COUNT)]


if __name__ == "__main__":
    print(f"seed {SEED}, {COUNT} cases (STITCH_STENCIL_SEED, STITCH_STENCIL_CASES)")
    sys.exit(run_small_model_cases(cases(), check))

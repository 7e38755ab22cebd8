#!/usr/bin/env python3
"""Stencils end to end: depthwise and grouped convolutions and pooling as generated kernels.

A grouped Conv (at most 16 input channels per group), MaxPool and AveragePool are
stencils (ir/core/window.h): each output walks its window, and the planner fuses them
with their elementwise producers and consumers (docs/codegen.md, "Stencils"). This test
writes small ONNX models covering the window geometry ONNX allows (strides, asymmetric
pads, auto_pad, dilations, ceil_mode, count_include_pad, 1-D windows, channel
multipliers, float16) and the fusions the CNNs need (ReLU6 and HardSwish around a
depthwise conv, a squeeze-excitation block, a channels-last LayerNorm after a 7x7
depthwise conv, a pool after a conv), and for each:

  1. `stitchopt MODEL -o OUT` must put the named nodes in one generated kernel of the
     expected composition, and generate the expected number of kernels;
  2. `stitchopt run OUT --emulate` runs the emitted .cu against the CUDA emulation layer
     on seeded random inputs and compares every output with the reference
     interpreter: exit 0 and "all N outputs match" are required;
  3. with --nvcc, every emitted kernel also goes through compile_kernels.py (nvcc
     sm_80/sm_90 with warnings as errors, and NVRTC with --nvrtc-check).

Exit 0 when every case passes, 1 otherwise (one line per failure).
Usage: stencil_schedules.py --stitchopt PATH [--nvcc] [--nvrtc-check PATH] [--keep DIR]
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from model_outputs import run_small_model_cases  # noqa: E402
OPSET = 17
F = T.FLOAT


def weights(name, shape, seed, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) / 3).astype(dtype), name)


def graph_model(name, inputs, nodes, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, t, d) for n, t, d in inputs],
                              [helper.make_tensor_value_info(n, t, None) for n, t in outputs],
                              initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                          producer_name="tests/codegen/stencil_schedules.py")
    m.ir_version = 8
    m = onnx.shape_inference.infer_shapes(m)  # the outputs' shapes
    onnx.checker.check_model(m, full_check=True)
    return m


def conv(x, y, w, b=None, **attrs):
    return helper.make_node("Conv", [x, w] + ([b] if b else []), [y], name=y, **attrs)


def clip(x, y, low="zero", high="six"):
    return helper.make_node("Clip", [x, low, high], [y], name=y)


def hard_swish(x, y):
    return helper.make_node("HardSwish", [x], [y], name=y)


def silu(x, y):
    return [helper.make_node("Sigmoid", [x], [y + "_s"], name=y + "_sigmoid"),
            helper.make_node("Mul", [x, y + "_s"], [y], name=y)]


def scalar(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


RELU6 = [scalar("zero", 0.0), scalar("six", 6.0)]


def squeeze_excitation(name, x_shape, squeezed, seed):
    """EfficientNet's MBConv after the expand conv, on `x_shape` [N, C, H, W]: SiLU,
    depthwise 3x3, SiLU, the mean over each plane, two 1x1 convs over one pixel (C ->
    `squeezed` -> C) with a SiLU between, the sigmoid gate, the gated product."""
    c = x_shape[1]
    return graph_model(
        name, [("x", F, x_shape)],
        silu("x", "a") + [conv("a", "d", "w", "b", group=c, pads=[1, 1, 1, 1])] + silu("d", "s") +
        [helper.make_node("GlobalAveragePool", ["s"], ["p"], name="p"), conv("p", "q", "w1", "b1")] +
        silu("q", "qs") +
        [conv("qs", "e", "w2", "b2"), helper.make_node("Sigmoid", ["e"], ["gate"], name="gate"),
         helper.make_node("Mul", ["s", "gate"], ["y"], name="y")],
        [("y", F)],
        [weights("w", [c, 1, 3, 3], seed), weights("b", [c], seed + 1),
         weights("w1", [squeezed, c, 1, 1], seed + 2), weights("b1", [squeezed], seed + 3),
         weights("w2", [c, squeezed, 1, 1], seed + 4), weights("b2", [c], seed + 5)])


def single(name, x_shape, node, inits=(), dtype=F):
    return graph_model(name, [("x", dtype, x_shape)], [node], [("y", dtype)], inits)


# (name, model, nodes that must share one generated kernel, its composition, generated
# kernels in all)
CASES = [
    # MobileNetV2's depthwise stage: ReLU6 of the expand conv as a prologue, the
    # depthwise 3x3 with its folded BatchNorm bias, ReLU6 after it: one kernel.
    ("relu6_depthwise_relu6",
     graph_model("relu6_depthwise_relu6", [("x", F, [2, 8, 10, 12])],
                 [clip("x", "a"), conv("a", "d", "w", "b", group=8, pads=[1, 1, 1, 1]), clip("d", "y")],
                 [("y", F)], [weights("w", [8, 1, 3, 3], 1), weights("b", [8], 2)] + RELU6),
     {"a", "d", "y"}, "stencil", 1),
    # 5x5, stride 2, asymmetric pads, no bias.
    ("depthwise_stride2_pads",
     single("depthwise_stride2_pads", [1, 6, 13, 11],
            conv("x", "y", "w", group=6, kernel_shape=[5, 5], strides=[2, 2], pads=[2, 1, 1, 2]),
            [weights("w", [6, 1, 5, 5], 3)]),
     {"y"}, "stencil", 1),
    # A channel multiplier of 2 (12 filters over 6 groups), dilation 2.
    ("depthwise_multiplier_dilated",
     single("depthwise_multiplier_dilated", [2, 6, 9, 9],
            conv("x", "y", "w", "b", group=6, dilations=[2, 2], pads=[2, 2, 2, 2]),
            [weights("w", [12, 1, 3, 3], 4), weights("b", [12], 5)]),
     {"y"}, "stencil", 1),
    # SAME_UPPER on an odd size with stride 2.
    ("depthwise_same_upper",
     single("depthwise_same_upper", [1, 4, 9, 7],
            conv("x", "y", "w", group=4, auto_pad="SAME_UPPER", strides=[2, 2]),
            [weights("w", [4, 1, 3, 3], 6)]),
     {"y"}, "thread", 1),
    # ResNeXt/RegNet: 4 input channels per group (2 filters each), bias, ReLU; the
    # tile holds a group's 4 input planes for its 2 output planes.
    ("grouped_relu",
     graph_model("grouped_relu", [("x", F, [1, 16, 9, 9])],
                 [conv("x", "g", "w", "b", group=4, pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["g"], ["y"], name="y")],
                 [("y", F)], [weights("w", [8, 4, 3, 3], 7), weights("b", [8], 8)]),
     {"g", "y"}, "stencil", 1),
    # RegNet/ResNeXt at a larger plane: 4 channels and 4 filters per group, tiles of
    # [4 planes, 2 rows, 32 columns] (the last column tile partial), ReLU on both sides.
    ("grouped_row_tiles",
     graph_model("grouped_row_tiles", [("x", F, [1, 16, 40, 40])],
                 [helper.make_node("Relu", ["x"], ["a"], name="a"),
                  conv("a", "g", "w", "b", group=4, pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["g"], ["y"], name="y")],
                 [("y", F)], [weights("w", [16, 4, 3, 3], 31), weights("b", [16], 32)]),
     {"a", "g", "y"}, "stencil", 1),
    # 2 channels and 3 filters per group over small planes: 3 groups per tile (their 6
    # input and 9 output planes), the last of 4 tiles holding one group.
    ("grouped_uneven_planes",
     single("grouped_uneven_planes", [5, 4, 5, 5],
            conv("x", "y", "w", "b", group=2, pads=[1, 1, 1, 1]),
            [weights("w", [6, 2, 3, 3], 33), weights("b", [6], 34)]),
     {"y"}, "stencil", 1),
    # 16 channels per group (the stencil limit), stride 2, one output row per tile.
    ("grouped_16_stride2",
     single("grouped_16_stride2", [1, 64, 17, 17],
            conv("x", "y", "w", group=4, strides=[2, 2], pads=[1, 1, 1, 1]),
            [weights("w", [64, 16, 3, 3], 35)]),
     {"y"}, "stencil", 1),
    # A 1-D depthwise convolution: planes of 20 outputs, 6 planes per tile's 256.
    ("depthwise_1d",
     single("depthwise_1d", [2, 6, 20], conv("x", "y", "w", "b", group=6, pads=[2, 2]),
            [weights("w", [6, 1, 5], 9), weights("b", [6], 10)]),
     {"y"}, "stencil", 1),
    # A Conformer's conv module between its two pointwise convs: GLU over the channel
    # halves, the 1-D depthwise conv (kernel 31, its folded BatchNorm bias), SiLU;
    # planes of 300 frames in tiles of 256 (the second partial).
    ("conformer_glu_depthwise_silu",
     graph_model("conformer_glu_depthwise_silu", [("x", F, [2, 16, 300])],
                 [helper.make_node("Split", ["x", "halves"], ["u", "v"], name="split", axis=1),
                  helper.make_node("Sigmoid", ["v"], ["vs"], name="vs"),
                  helper.make_node("Mul", ["u", "vs"], ["g"], name="g"),
                  conv("g", "d", "w", "b", group=8, pads=[15, 15]),
                  *silu("d", "y")],
                 [("y", F)], [numpy_helper.from_array(np.array([8, 8], np.int64), "halves"),
                              weights("w", [8, 1, 31], 36), weights("b", [8], 37)]),
     {"vs", "g", "d", "y"}, "stencil", 1),
    # A 1-D max pool, stride 2 with a ceil_mode window clipped at the end.
    ("maxpool_1d_stride2",
     single("maxpool_1d_stride2", [3, 4, 41],
            helper.make_node("MaxPool", ["x"], ["y"], name="y", kernel_shape=[5], strides=[2],
                             pads=[2, 1], ceil_mode=1)),
     {"y"}, "stencil", 1),
    # float16 in and out, computed in float.
    ("depthwise_float16",
     single("depthwise_float16", [1, 8, 8, 8], conv("x", "y", "w", group=8, pads=[1, 1, 1, 1]),
            [weights("w", [8, 1, 3, 3], 11, np.float16)], T.FLOAT16),
     {"y"}, "stencil", 1),
    # ResNet's stem pool: 3x3, stride 2, pads 1; ceil_mode drops no window here but the
    # last windows are clipped by the end.
    ("maxpool_ceil",
     single("maxpool_ceil", [1, 4, 11, 11],
            helper.make_node("MaxPool", ["x"], ["y"], name="y", kernel_shape=[3, 3], strides=[2, 2],
                             pads=[1, 1, 1, 1], ceil_mode=1)),
     {"y"}, "thread", 1),
    ("maxpool_dilated",
     single("maxpool_dilated", [2, 3, 10, 9],
            helper.make_node("MaxPool", ["x"], ["y"], name="y", kernel_shape=[2, 2], dilations=[2, 2])),
     {"y"}, "stencil", 1),
    ("avgpool_include_pad",
     single("avgpool_include_pad", [1, 5, 9, 10],
            helper.make_node("AveragePool", ["x"], ["y"], name="y", kernel_shape=[3, 3], strides=[2, 2],
                             pads=[1, 1, 1, 1], count_include_pad=1)),
     {"y"}, "thread", 1),
    ("avgpool_ceil_exclude_pad",
     single("avgpool_ceil_exclude_pad", [1, 5, 10, 10],
            helper.make_node("AveragePool", ["x"], ["y"], name="y", kernel_shape=[3, 3], strides=[2, 2],
                             pads=[0, 0, 1, 1], ceil_mode=1)),
     {"y"}, "thread", 1),
    # MobileNetV3: HardSwish (decomposed into Add/Clip/Mul/Div or Min/Max) on both sides.
    ("hardswish_depthwise_hardswish",
     graph_model("hardswish_depthwise_hardswish", [("x", F, [1, 8, 12, 12])],
                 [hard_swish("x", "a"), conv("a", "d", "w", "b", group=8, kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
                  hard_swish("d", "y")],
                 [("y", F)], [weights("w", [8, 1, 5, 5], 12), weights("b", [8], 13)]),
     {"d"}, "stencil", 1),
    # Staged tiles over rows and columns (schedule.h 3c.): 70 columns in tiles of 32
    # (the last of 6), 21 rows in tiles of 8 (the last of 5); ReLU6 evaluated once per
    # staged element, the residual read at the output's index.
    ("depthwise_row_column_tiles",
     graph_model("depthwise_row_column_tiles", [("x", F, [1, 3, 21, 70])],
                 [clip("x", "a"), conv("a", "d", "w", "b", group=3, pads=[1, 1, 1, 1]),
                  helper.make_node("Add", ["d", "x"], ["y"], name="y")],
                 [("y", F)], [weights("w", [3, 1, 3, 3], 30), weights("b", [3], 31)] + RELU6),
     {"a", "d", "y"}, "stencil", 1),
    # ResNet's stem pool on an odd plane: [17, 19] outputs in tiles of 13 rows, the
    # padding's taps skipped (never the zeros the tile holds there).
    ("maxpool_stride2_tiles",
     single("maxpool_stride2_tiles", [2, 3, 33, 37],
            helper.make_node("MaxPool", ["x"], ["y"], name="y", kernel_shape=[3, 3], strides=[2, 2],
                             pads=[1, 1, 1, 1])),
     {"y"}, "stencil", 1),
    # 5x5 average without the padding in the count, over 2 x 5 tiles.
    ("avgpool_exclude_pad_tiles",
     single("avgpool_exclude_pad_tiles", [1, 2, 40, 40],
            helper.make_node("AveragePool", ["x"], ["y"], name="y", kernel_shape=[5, 5],
                             pads=[2, 2, 2, 2])),
     {"y"}, "stencil", 1),
    # A pool after a depthwise conv: the conv is computed once into the workspace (its
    # taps would walk the conv's window again), then the pool reads it after a barrier.
    ("depthwise_then_pool",
     graph_model("depthwise_then_pool", [("x", F, [1, 4, 12, 12])],
                 [conv("x", "d", "w", "b", group=4, pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", ["d"], ["r"], name="r"),
                  helper.make_node("MaxPool", ["r"], ["y"], name="y", kernel_shape=[2, 2], strides=[2, 2])],
                 [("y", F)], [weights("w", [4, 1, 3, 3], 14), weights("b", [4], 15)]),
     {"d", "y"}, "global", 1),
    # EfficientNet's MBConv after the expand conv: SiLU, depthwise 3x3, SiLU, squeeze
    # and excitation (global mean, two 1x1 convs over one pixel -> MatMuls, SiLU,
    # sigmoid gate), the gated product. Each tile holds whole 8x8 planes, so the
    # SiLU's stage sums them for the mean as it writes them, through shared memory
    # (schedule.h 4d.); the excitation's MatMuls need fewer threads than a block: the
    # last block to finish that stage runs them (4c.), with no grid barrier between
    # them, its arrival counted in the counter the launcher zeroes. The gated product
    # of 1024 elements runs there too, in 4 rounds of its threads: cheaper than the
    # grid barrier before it.
    ("squeeze_excitation", squeeze_excitation("squeeze_excitation", [1, 16, 8, 8], 4, 16),
     {"d", "y"}, "global", 1,
     ["of them on the last block to arrive, 0 grid barriers", "arrival[0] = atomicAdd(done, 1u);",
      "(zeroed by the launcher with the barrier's)", "plane_sums[threadIdx.x] = plane_sum;",
      "from its threads' registers"]),
    # EfficientNet's later MBConv at 4x4 pixels: 240 channels squeezed to 10, so the
    # first excitation MatMul takes 10 warps, more than a block's 8. Two rounds of the
    # last block's warps cost less than the grid barriers they save (4c.): the
    # excitation still runs on the last block, its warps striding over the outputs.
    ("squeeze_excitation_wide",
     squeeze_excitation("squeeze_excitation_wide", [1, 240, 4, 4], 10, 58),
     {"d", "y"}, "global", 1,
     ["run on the last block to finish stage 0 (its threads stride over their work)",
      "arrival[0] = atomicAdd(done, 1u);", "stage 1 in 2 rounds"]),
    # The same block at 4x4 pixels, two images: planes of 16 outputs, summed by
    # shuffles among their lanes (4d.), 16 planes to a tile.
    ("squeeze_excitation_small_planes",
     squeeze_excitation("squeeze_excitation_small_planes", [2, 24, 4, 4], 6, 42),
     {"d", "y"}, "global", 1,
     ["plane_sum += __shfl_xor_sync(0xffffffffu, plane_sum, offset);", "from its threads' registers"]),
    # At 32x32 pixels a tile holds a quarter of a plane: each tile writes its part's
    # sum, and the mean's stage (on the last block, with the excitation) adds the
    # four parts instead of reading the plane back (4d.).
    ("squeeze_excitation_large_planes",
     squeeze_excitation("squeeze_excitation_large_planes", [1, 8, 32, 32], 2, 52),
     {"d", "y"}, "global", 1,
     ["plane_partials[(tile_plane0 + q) * 4 + t % 4] = a;", "a += plane_partials[i * 4 + k];",
      "3 of them on the last block to arrive, 1 grid barrier"]),
    # A ReduceSum of 6x6 planes without keepdims, mixed across channels by a MatMul:
    # planes of 36 outputs, 7 to a tile, summed through shared memory a warp per plane
    # (4d.), the second tile holding only 3 of its 7 planes.
    ("squeeze_sum_odd_planes",
     graph_model("squeeze_sum_odd_planes", [("x", F, [1, 10, 6, 6])],
                 silu("x", "a") + [conv("a", "d", "w", "b", group=10, pads=[1, 1, 1, 1])] + silu("d", "s") +
                 [helper.make_node("ReduceSum", ["s", "axes"], ["r"], name="r", keepdims=0),
                  helper.make_node("MatMul", ["r", "mix"], ["m"], name="m"),
                  helper.make_node("Reshape", ["m", "pixel"], ["r4"], name="r4"),
                  helper.make_node("Sigmoid", ["r4"], ["gate"], name="gate"),
                  helper.make_node("Mul", ["s", "gate"], ["y"], name="y")],
                 [("y", F)],
                 [weights("w", [10, 1, 3, 3], 48), weights("b", [10], 49), weights("mix", [10, 10], 50),
                  numpy_helper.from_array(np.array([2, 3], dtype=np.int64), "axes"),
                  numpy_helper.from_array(np.array([1, 10, 1, 1], dtype=np.int64), "pixel")]),
     {"d", "y"}, "global", 1,
     ["a += plane_sums[q * 36 + e];", "if (lane == 0 && tile_plane0 + q < 10) {"]),
    # 1-D in the global composition: a grouped conv over time (4 channels and 4 filters
    # per group) with a SiLU and a squeeze-excitation over the sequence (the mean over
    # time, a 1x1 conv mixing the channels, the sigmoid gate): the SiLU's stage walks
    # the conv's one-row tiles, two to a sequence, each summing its part of each of its
    # group's 4 rows for the mean (4d.).
    ("grouped_1d_excitation",
     graph_model("grouped_1d_excitation", [("x", F, [2, 16, 90])],
                 silu("x", "a") + [conv("a", "d", "w", "b", group=4, pads=[2, 2])] + silu("d", "s") +
                 [helper.make_node("GlobalAveragePool", ["s"], ["p"], name="p"),
                  conv("p", "e", "w1", "b1"),
                  helper.make_node("Sigmoid", ["e"], ["gate"], name="gate"),
                  helper.make_node("Mul", ["s", "gate"], ["y"], name="y")],
                 [("y", F)], [weights("w", [16, 4, 5], 38), weights("b", [16], 39),
                              weights("w1", [16, 16, 1], 40), weights("b1", [16], 41)]),
     {"d", "y"}, "global", 1,
     ["for (index_t k = 0; k < 2; ++k) a += plane_partials[i * 2 + k];"]),
    # Without the channel mixing, the mean gates its own row: a warp per (n, channel)
    # row computes the conv's row, reading the group's input rows inline.
    ("grouped_1d_gated_by_mean",
     graph_model("grouped_1d_gated_by_mean", [("x", F, [2, 16, 90])],
                 silu("x", "a") + [conv("a", "d", "w", "b", group=4, pads=[2, 2])] + silu("d", "s") +
                 [helper.make_node("ReduceMean", ["s"], ["p"], name="p", axes=[2], keepdims=1),
                  helper.make_node("Sigmoid", ["p"], ["gate"], name="gate"),
                  helper.make_node("Mul", ["s", "gate"], ["y"], name="y")],
                 [("y", F)], [weights("w", [16, 4, 5], 38), weights("b", [16], 39)]),
     {"d", "y"}, "warp", 1),
    # The same block whose activated conv output is itself a graph output (MobileNetV3):
    # the mean reads it inline in the stage that writes it, so the conv is evaluated by
    # two loops and its tile is not staged (each would need its own), while the SiLU
    # block above stages it in the stage that materializes its activation.
    ("squeeze_output_read_inline",
     graph_model("squeeze_output_read_inline", [("x", F, [2, 64, 8, 8])],
                 [clip("x", "a"), conv("a", "d", "w", "b", group=64, pads=[1, 1, 1, 1]),
                  helper.make_node("HardSwish", ["d"], ["h"], name="h"),
                  helper.make_node("GlobalAveragePool", ["h"], ["p"], name="p"),
                  conv("p", "q", "w1", "b1")],
                 [("h", F), ("q", F)],
                 [weights("w", [64, 1, 3, 3], 34), weights("b", [64], 35),
                  weights("w1", [8, 64, 1, 1], 36), weights("b1", [8], 37)] + RELU6),
     {"d", "q"}, "global", 1),
    # A 3x3 depthwise conv, then NCHW -> NHWC and a LayerNorm over its 8 channels: the
    # conv is computed where the LayerNorm's 512 rows read it.
    ("channels_last_layernorm_3x3",
     graph_model("channels_last_layernorm_3x3", [("x", F, [2, 8, 16, 16])],
                 [conv("x", "d", "w", "b", group=8, pads=[1, 1, 1, 1]),
                  helper.make_node("Transpose", ["d"], ["t"], name="t", perm=[0, 2, 3, 1]),
                  helper.make_node("LayerNormalization", ["t", "gamma", "beta"], ["y"], name="y", axis=-1,
                                   epsilon=1e-6)],
                 [("y", F)],
                 [weights("w", [8, 1, 3, 3], 26), weights("b", [8], 27),
                  weights("gamma", [8], 28), weights("beta", [8], 29)]),
     {"d", "y"}, "warp", 1),
    # ConvNeXt: a 7x7 depthwise conv, then NCHW -> NHWC and a LayerNorm over 32
    # channels. Computed where the LayerNorm's 49 rows read it, each of a few hundred
    # lanes would walk 49 taps per element (the stencil load chain): the conv and the
    # Transpose are one kernel that stages the conv's input tile (several planes to a
    # block) and writes each output where the Transpose puts it; the LayerNorm is its
    # own kernel.
    ("channels_last_layernorm",
     graph_model("channels_last_layernorm", [("x", F, [1, 32, 7, 7])],
                 [conv("x", "d", "w", "b", group=32, kernel_shape=[7, 7], pads=[3, 3, 3, 3]),
                  helper.make_node("Transpose", ["d"], ["t"], name="t", perm=[0, 2, 3, 1]),
                  helper.make_node("LayerNormalization", ["t", "gamma", "beta"], ["y"], name="y", axis=-1,
                                   epsilon=1e-6)],
                 [("y", F)],
                 [weights("w", [32, 1, 7, 7], 22), weights("b", [32], 23),
                  weights("gamma", [32], 24), weights("beta", [32], 25)]),
     {"d", "t"}, "stencil", 2),
    # The same over a plane of [20, 40] (row and column tiles), batch 2, written to
    # channels-last for a consumer outside the group (the graph output).
    ("depthwise_to_channels_last",
     graph_model("depthwise_to_channels_last", [("x", F, [2, 6, 20, 40])],
                 [conv("x", "d", "w", "b", group=6, kernel_shape=[7, 7], pads=[3, 3, 3, 3]),
                  helper.make_node("Transpose", ["d"], ["y"], name="y", perm=[0, 2, 3, 1])],
                 [("y", F)], [weights("w", [6, 1, 7, 7], 32), weights("b", [6], 33)]),
     {"d", "y"}, "stencil", 1),
]


def generated_kernels(out):
    """(origin node names, codegen record) of every generated kernel in OUT/report.json."""
    import json
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    found = []
    for entry in report["groups"] + report.get("unfused", []):
        if not entry.get("codegen"):
            continue
        nodes = entry.get("nodes", [entry])
        found.append(({o for n in nodes for o in n.get("origin", [n["name"]])}, entry["codegen"]))
    return found


def check(name, expected, kernels, out):
    together, composition, count, *source = expected
    problems = []
    for text in (source[0] if source else []):
        files = [os.path.join(out, "kernels", f) for f in os.listdir(os.path.join(out, "kernels"))
                 if f.endswith(".cu")]
        if not any(text in open(f).read() for f in files):
            problems.append(f"{name}: no kernel source holds {text!r}")
    found = generated_kernels(out)
    holding = next(((names, k) for names, k in found if names & together), None)
    if holding is None:
        return [f"{name}: no generated kernel holds {sorted(together)}"], ""
    names, kernel = holding
    if not together <= names:
        problems.append(f"{name}: {sorted(together)} are not in one kernel: {kernel['kernel']} "
                        f"holds {sorted(names)}")
    if composition and kernel["composition"] != composition:
        problems.append(f"{name}: {kernel['kernel']} has composition {kernel['composition']}, "
                        f"expected {composition}")
    if count is not None and len(found) != count:
        problems.append(f"{name}: {len(found)} generated kernels, expected {count}")
    return problems, f"{len(found)} kernel(s), {kernel['composition']}"


if __name__ == "__main__":
    sys.exit(run_small_model_cases(CASES, check))

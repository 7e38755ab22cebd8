#!/usr/bin/env python3
"""Stencil tiles in shared memory (issue 17), against windows read from global memory.

Each model is compiled twice by the same binary, `stitchopt MODEL -o OUT` (stencils
that reuse their input stage it in shared memory: the "stencil" composition,
docs/codegen.md) and with `--no-stencil-tiles` (every tap read through global memory,
L1 and L2 serving the overlap), then profiled with `stitchopt profile OUT --emulate`
(docs/perf-model.md: estimates from the CUDA emulation's counters and the kernels'
SASS, not GPU timings). Printed per model, side by side from one run: the kernels,
how many are staged, the model's estimated time both ways and their ratio; then, for
every staged kernel, the same fused nodes' kernel in the other build: estimated time,
bound, L2 bytes, global load requests and the busiest warp's load chain. A staged
kernel is one of the stencil composition, or a global one whose stencil stage walks
tiles (its "why" says so).

Default models: ten stencil stages at ImageNet sizes, batch 8 (synthetic_models), the
CNN exports that tests/exports/check_exports.py writes (opset 17, static shapes, 64x64
images: launch-bound kernels) under --exports, and the bundled resnet.

Usage: stencil_tiles.py --stitchopt PATH [--exports DIR] [--models A.onnx,B.onnx]
                        [--keep DIR] [--json FILE]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CNNS = ["mobile_blocks", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "convnext",
        "mnasnet0_5", "regnet_y_400mf", "resnext50_32x4d"]


def synthetic_models(work):
    """Stencil stages at ImageNet sizes, batch 8 (where launch latency no longer hides
    the memory system): MobileNetV2's depthwise stages (ReLU6 of the expand conv,
    3x3 depthwise with its folded BatchNorm bias, ReLU6) at 112x112 and, with stride 2,
    at 56x56; a ConvNeXt 7x7 depthwise conv, alone and written channels-last (the
    Transpose before its LayerNorm); EfficientNet's MBConv after its expand conv (SiLU,
    3x3 depthwise, SiLU, squeeze-excitation, the gated product: one global kernel
    whose SiLU stage walks the conv's tiles); the grouped 3x3 convs (folded BatchNorm
    bias, ReLU) of ResNeXt-50 32x4d's first and third stages (4 and 16 channels per
    group) and RegNetY-400MF's second (8 per group); a Conformer's conv module between
    its pointwise convs (GLU, the 31-tap 1-D depthwise conv with its folded BatchNorm
    bias, SiLU; d_model 256 over 512 frames); ResNet's 3x3 stride-2 stem pool."""
    import numpy as np
    import onnx
    from onnx import TensorProto as T
    from onnx import helper, numpy_helper

    def write(name, shape, nodes, inits):
        graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", T.FLOAT, shape)],
                                  [helper.make_tensor_value_info("y", T.FLOAT, None)],
                                  initializer=inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        path = os.path.join(work, name + ".onnx")
        onnx.save(onnx.shape_inference.infer_shapes(model), path)
        return path

    def w(name, shape, seed):
        rng = np.random.default_rng(seed)
        return numpy_helper.from_array((rng.standard_normal(shape) / 3).astype(np.float32), name)

    bounds = [numpy_helper.from_array(np.array(0, np.float32), "zero"),
              numpy_helper.from_array(np.array(6, np.float32), "six")]

    def relu6_dw_relu6(name, shape, kernel, stride):
        c = shape[1]
        pad = kernel // 2
        return write(name, shape, [
            helper.make_node("Clip", ["x", "zero", "six"], ["a"], name="a"),
            helper.make_node("Conv", ["a", "w", "b"], ["d"], name="d", group=c,
                             kernel_shape=[kernel, kernel], strides=[stride, stride],
                             pads=[pad] * 4),
            helper.make_node("Clip", ["d", "zero", "six"], ["y"], name="y")],
            [w("w", [c, 1, kernel, kernel], 1), w("b", [c], 2)] + bounds)

    def grouped_relu(name, shape, groups, seed):
        c = shape[1]
        return write(name, shape, [
            helper.make_node("Conv", ["x", "w", "b"], ["d"], name="d", group=groups,
                             kernel_shape=[3, 3], pads=[1] * 4),
            helper.make_node("Relu", ["d"], ["y"], name="y")],
            [w("w", [c, c // groups, 3, 3], seed), w("b", [c], seed + 1)])

    return [
        relu6_dw_relu6("mbv2_dw3x3_96x112", [8, 96, 112, 112], 3, 1),
        relu6_dw_relu6("mbv2_dw3x3_s2_144x56", [8, 144, 56, 56], 3, 2),
        write("convnext_dw7x7_96x56", [8, 96, 56, 56],
              [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="d", group=96,
                                kernel_shape=[7, 7], pads=[3] * 4)],
              [w("w", [96, 1, 7, 7], 3), w("b", [96], 4)]),
        write("convnext_dw7x7_nhwc_96x56", [8, 96, 56, 56],
              [helper.make_node("Conv", ["x", "w", "b"], ["d"], name="d", group=96,
                                kernel_shape=[7, 7], pads=[3] * 4),
               helper.make_node("Transpose", ["d"], ["y"], name="y", perm=[0, 2, 3, 1])],
              [w("w", [96, 1, 7, 7], 3), w("b", [96], 4)]),
        write("effnet_mbconv_se_96x56", [8, 96, 56, 56],
              [helper.make_node("Sigmoid", ["x"], ["xs"], name="xs"),
               helper.make_node("Mul", ["x", "xs"], ["a"], name="a"),
               helper.make_node("Conv", ["a", "w", "b"], ["d"], name="d", group=96,
                                kernel_shape=[3, 3], pads=[1] * 4),
               helper.make_node("Sigmoid", ["d"], ["ds"], name="ds"),
               helper.make_node("Mul", ["d", "ds"], ["s"], name="s"),
               helper.make_node("GlobalAveragePool", ["s"], ["p"], name="p"),
               helper.make_node("Conv", ["p", "w1", "b1"], ["q"], name="q"),
               helper.make_node("Sigmoid", ["q"], ["qs"], name="qs"),
               helper.make_node("Mul", ["q", "qs"], ["r"], name="r"),
               helper.make_node("Conv", ["r", "w2", "b2"], ["e"], name="e"),
               helper.make_node("Sigmoid", ["e"], ["g"], name="g"),
               helper.make_node("Mul", ["s", "g"], ["y"], name="y")],
              [w("w", [96, 1, 3, 3], 5), w("b", [96], 6), w("w1", [24, 96, 1, 1], 7),
               w("b1", [24], 8), w("w2", [96, 24, 1, 1], 9), w("b2", [96], 10)]),
        grouped_relu("resnext_g32x4_3x3_128x56", [8, 128, 56, 56], 32, 11),
        grouped_relu("regnet_g13x8_3x3_104x28", [8, 104, 28, 28], 13, 13),
        grouped_relu("resnext_g32x16_3x3_512x14", [8, 512, 14, 14], 32, 15),
        write("conformer_glu_dw31_256x512", [8, 512, 512],
              [helper.make_node("Split", ["x", "halves"], ["u", "v"], name="split", axis=1),
               helper.make_node("Sigmoid", ["v"], ["vs"], name="vs"),
               helper.make_node("Mul", ["u", "vs"], ["g"], name="g"),
               helper.make_node("Conv", ["g", "w", "b"], ["d"], name="d", group=256,
                                kernel_shape=[31], pads=[15, 15]),
               helper.make_node("Sigmoid", ["d"], ["ds"], name="ds"),
               helper.make_node("Mul", ["d", "ds"], ["y"], name="y")],
              [numpy_helper.from_array(np.array([256, 256], np.int64), "halves"),
               w("w", [256, 1, 31], 17), w("b", [256], 18)]),
        write("resnet_stem_pool_64x112", [8, 64, 112, 112],
              [helper.make_node("MaxPool", ["x"], ["y"], name="y", kernel_shape=[3, 3],
                                strides=[2, 2], pads=[1] * 4)], []),
    ]


def nvdisasm_flags():
    found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages",
                                          "nvidia", "cu*", "bin", "nvdisasm")))
    return ["--nvdisasm", found[-1]] if found else []


def build(stitchopt, model, out, flags):
    subprocess.run([stitchopt, model, "-o", out, "-q", "--force", *flags], check=True)
    subprocess.run([stitchopt, "profile", out, "--emulate", *nvdisasm_flags()], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    # Fused node names of each generated kernel, to find the same group in the other
    # build, and its composition (the profile calls a single node's kernel "single op").
    nodes_of = {}
    for entry in report["groups"] + report.get("unfused", []):
        codegen = entry.get("codegen")
        if codegen:
            nodes = entry.get("nodes", [entry])
            staged = (codegen["composition"] == "stencil"
                      or "input tile staged in shared memory" in codegen.get("why", ""))
            nodes_of.setdefault(codegen["kernel"], (frozenset(n["name"] for n in nodes),
                                                    codegen["composition"], staged))
    return profile, nodes_of


def kernel_rows(profile, nodes_of):
    rows = {}
    for k in profile["kernels"]:
        if k.get("kind") != "kernel" or k["kernel"] not in nodes_of:
            continue
        nodes, composition, staged = nodes_of[k["kernel"]]
        rows[nodes] = dict(k, composition=composition, staged=staged)
    return rows


def describe(k):
    g = k["global"]
    return (f"{k['estimated_us']:7.2f} us {k['bound']:8s} L2 {k['l2_bytes'] / 1e3:8.1f} kB "
            f"loads {g['load_requests']:7d} chain {g['load_chain']:5d}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--exports", default=str(ROOT / "build" / "exports" / "models"))
    parser.add_argument("--models", default="")
    parser.add_argument("--keep", default="")
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as temporary:
        work = args.keep or temporary
        os.makedirs(work, exist_ok=True)
        models = [m for m in args.models.split(",") if m]
        if not models:
            models = synthetic_models(work)
            models += [m for m in (os.path.join(args.exports, f"{name}_op17_static.onnx")
                                   for name in CNNS) if os.path.exists(m)]
            models.append(str(ROOT / "models" / "resnet.onnx"))
        for model in models:
            name = Path(model).stem
            staged, staged_nodes = build(args.stitchopt, model, os.path.join(work, name), [])
            plain, plain_nodes = build(args.stitchopt, model, os.path.join(work, name + "_plain"),
                                       ["--no-stencil-tiles"])
            a, b = kernel_rows(staged, staged_nodes), kernel_rows(plain, plain_nodes)
            tiles = {nodes: k for nodes, k in a.items() if k["staged"]}
            ta, tb = staged["total_estimated_us"], plain["total_estimated_us"]
            print(f"{name}: {len(a)} kernels, {len(tiles)} staged; estimated {ta:.1f} us, "
                  f"--no-stencil-tiles {tb:.1f} us ({len(b)} kernels): {tb / ta:.2f}x")
            same = 0
            for nodes, k in sorted(tiles.items(), key=lambda item: -item[1]["estimated_us"]):
                other = b.get(nodes)
                print(f"  {k['kernel'][:40]:40s} staged {describe(k)}")
                if other is not None:
                    same += 1
                    print(f"  {'':40s} global {describe(other)}  "
                          f"{other['estimated_us'] / k['estimated_us']:.2f}x")
            results.append({"model": name, "kernels": len(a), "staged": len(tiles),
                            "estimated_us": ta, "no_stencil_tiles_us": tb,
                            "staged_us": sum(k["estimated_us"] for k in tiles.values()),
                            "same_groups_global_us": sum(b[n]["estimated_us"] for n in tiles if n in b),
                            "same_groups_staged_us": sum(k["estimated_us"] for n, k in tiles.items()
                                                         if n in b),
                            "same_groups": same})
            sys.stdout.flush()
    print()
    print("| model | kernels | staged | estimated (us) | --no-stencil-tiles (us) | ratio | "
          "staged kernels: staged / global (us) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(f"| {r['model']} | {r['kernels']} | {r['staged']} | {r['estimated_us']:.1f} | "
              f"{r['no_stencil_tiles_us']:.1f} | {r['no_stencil_tiles_us'] / r['estimated_us']:.2f}x | "
              f"{r['same_groups_staged_us']:.1f} / {r['same_groups_global_us']:.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Exports small PyTorch models that compute shapes, masks and indices at run time, as
users' torch.onnx.export output does (issue 15), for tests/exports/check_exports.py.

Runs under Debian's /usr/bin/python3 with python3-torch and python3-torchvision
(scripts/setup.sh installs them), not the test venv. Weights are random with fixed
seeds and the export is deterministic, so a file is the same byte for byte on every
run of the same torch version. Each model is written at opset 14 and 17 (the CNNs
other than ConvNeXt at 17 only), with static shapes and with dynamic axes (compiled
with --input-shape), as
OUT/<name>_op<opset>_<static|dynamic>.onnx, plus OUT/manifest.json listing each file
with its inputs' static shapes.

    /usr/bin/python3 tests/exports/export_torch.py OUT_DIR [--only name,name]
"""
import argparse
import importlib
import json
import math
import os
import sys
import warnings
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")


class PositionIds(nn.Module):
    """Token + position embeddings with positions from torch.arange(x.size(1))."""

    def __init__(self):
        super().__init__()
        self.tokens = nn.Embedding(100, 32)
        self.positions = nn.Embedding(64, 32)
        self.norm = nn.LayerNorm(32)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        return self.norm(self.tokens(ids) + self.positions(positions))


def attention(q, k, v, heads, mask=None):
    b, l, d = q.shape
    q = q.view(b, l, heads, d // heads).transpose(1, 2)
    k = k.view(b, k.size(1), heads, d // heads).transpose(1, 2)
    v = v.view(b, v.size(1), heads, d // heads).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d // heads)
    if mask is not None:
        scores = scores + mask
    out = scores.softmax(-1) @ v
    return out.transpose(1, 2).reshape(b, l, d)


class CausalSelfAttention(nn.Module):
    """A causal mask from torch.triu(torch.ones(L, L)) at run time."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        length = x.size(1)
        mask = torch.triu(torch.ones(length, length, device=x.device), diagonal=1) * -1e4
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.proj(attention(q, k, v, self.heads, mask))


class Gpt2Block(nn.Module):
    """A Hugging Face-style GPT-2 block in plain torch: pre-LN, causal attention, tanh GELU."""

    def __init__(self, d=32):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class BertBlock(nn.Module):
    """A BERT layer in plain torch with a padding mask from the input ids (ids == 0)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.embed = nn.Embedding(100, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln1 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)
        self.ln2 = nn.LayerNorm(d)
        self.heads = heads

    def forward(self, ids):
        x = self.embed(ids)
        padding = (ids == 0).to(x.dtype)[:, None, None, :] * -1e4
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        x = self.ln1(x + self.proj(attention(q, k, v, self.heads, padding)))
        return self.ln2(x + self.out(F.gelu(self.fc(x))))


class ComputedPad(nn.Module):
    """F.pad to a multiple of 8 with sizes computed from the input, then a reduction."""

    def forward(self, x):
        pad = (8 - x.size(-1) % 8) % 8
        y = F.pad(x, (0, pad))
        return y.view(y.size(0), -1, 8).sum(-1).relu()


class RollWindows(nn.Module):
    """torch.roll by half a window, window partition and merge with computed sizes."""

    def __init__(self, window=4, d=16):
        super().__init__()
        self.window = window
        self.norm = nn.LayerNorm(d)
        self.mix = nn.Linear(d, d)

    def forward(self, x):  # [B, H, W, C]
        b, h, w, c = x.shape
        s = self.window
        x = torch.roll(self.norm(x), shifts=(-(s // 2), -(s // 2)), dims=(1, 2))
        windows = x.view(b, h // s, s, w // s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, s * s, c)
        windows = windows + self.mix(windows).softmax(1)
        x = windows.view(b, h // s, w // s, s, s, c).permute(0, 1, 3, 2, 4, 5).reshape(b, h, w, c)
        return torch.roll(x, shifts=(s // 2, s // 2), dims=(1, 2))


class RelativePositionBias(nn.Module):
    """Window attention with a relative-position-bias table gathered by an index buffer."""

    def __init__(self, window=4, d=16, heads=2):
        super().__init__()
        self.window, self.heads = window, heads
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij"))
        flat = coords.flatten(1)
        relative = (flat[:, :, None] - flat[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("index", relative[..., 0] * (2 * window - 1) + relative[..., 1])
        self.qkv = nn.Linear(d, 3 * d)

    def forward(self, x):  # [windows, N, C]
        n = x.size(1)
        bias = self.table[self.index.view(-1)].view(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        b, l, d = q.shape
        q = q.view(b, l, self.heads, -1).transpose(1, 2)
        k = k.view(b, l, self.heads, -1).transpose(1, 2)
        v = v.view(b, l, self.heads, -1).transpose(1, 2)
        scores = q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5 + bias
        return (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, l, d)


class Gru2(nn.Module):
    """A two-layer GRU and a head on its last step."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, x):
        out, _ = self.gru(x)
        return self.head(out[:, -1]).softmax(-1)


def swin_tiny():
    """torchvision's Swin transformer (shifted windows, masks built at run time) at
    reduced width and depth."""
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=24, depths=[2, 2, 2], num_heads=[1, 2, 4],
                           window_size=[7, 7], num_classes=10)


def mnasnet():
    import torchvision
    return torchvision.models.mnasnet0_5(weights=None, num_classes=10)


def regnet():
    import torchvision
    return torchvision.models.regnet_y_400mf(weights=None, num_classes=10)


def torchvision_module(name):
    # torchvision.models.<name> is shadowed by the builder function of the same name.
    return importlib.import_module("torchvision.models." + name)


def narrow_conv(block, factor, image_channels=3):
    """`block` (a conv + BN + ReLU module) with in and out channels divided by
    `factor`, except the image's channels: a whole network built from it is
    `factor` times narrower with the same structure (every channel count of
    GoogLeNet and Inception v3 divides by 4)."""
    class Narrow(block):
        def __init__(self, in_channels, out_channels, **kwargs):
            if in_channels != image_channels:
                in_channels //= factor
            super().__init__(in_channels, out_channels // factor, **kwargs)
    return Narrow


def googlenet():
    """torchvision's GoogLeNet, 4x narrower (no auxiliary heads in eval)."""
    g = torchvision_module("googlenet")
    conv = narrow_conv(g.BasicConv2d, 4)
    model = g.GoogLeNet(num_classes=10, aux_logits=False, init_weights=True,
                        blocks=[conv, partial(g.Inception, conv_block=conv), g.InceptionAux])
    model.fc = nn.Linear(1024 // 4, 10)
    return model


def inception_v3():
    """torchvision's Inception v3, 4x narrower, at its smallest input (75x75)."""
    i = torchvision_module("inception")
    conv = narrow_conv(i.BasicConv2d, 4)
    blocks = [partial(b, conv_block=conv)
              for b in (i.InceptionA, i.InceptionB, i.InceptionC, i.InceptionD, i.InceptionE)]
    model = i.Inception3(num_classes=10, aux_logits=False, init_weights=True,
                         inception_blocks=[conv] + blocks + [i.InceptionAux])
    model.fc = nn.Linear(2048 // 4, 10)
    return model


def densenet121():
    """torchvision's DenseNet-121 block structure (6, 12, 24, 16) at growth rate 8."""
    return torchvision_module("densenet").DenseNet(growth_rate=8, block_config=(6, 12, 24, 16),
                                                   num_init_features=16, num_classes=10)


def resnext50():
    """torchvision's ResNeXt-50 layout (3, 4, 6, 3 grouped bottlenecks of 4 channels
    per group), 4x narrower: 8 groups instead of 32 and no 4x expansion."""
    r = torchvision_module("resnet")

    class NarrowBottleneck(r.Bottleneck):
        expansion = 1
    return r.ResNet(NarrowBottleneck, [3, 4, 6, 3], groups=8, width_per_group=4, num_classes=10)


def mobilenet_v2():
    """torchvision's MobileNetV2 at half width: ReLU6 around every depthwise conv,
    residual inverted bottlenecks."""
    import torchvision
    return torchvision.models.mobilenet_v2(weights=None, width_mult=0.5, num_classes=10)


def mobilenet_v3_small():
    """torchvision's MobileNetV3-small: HardSwish, ReLU, squeeze-excitation gated by
    Hardsigmoid, depthwise 3x3 and 5x5 convs."""
    import torchvision
    return torchvision.models.mobilenet_v3_small(weights=None, num_classes=10)


def efficientnet_b0():
    """torchvision's EfficientNet-B0 block structure (MBConv: SiLU, depthwise 3x3 and
    5x5, squeeze-excitation with SiLU and a sigmoid gate) at half width and depth."""
    e = torchvision_module("efficientnet")
    setting, last_channel = e._efficientnet_conf("efficientnet_b0", width_mult=0.5, depth_mult=0.5)
    return e.EfficientNet(setting, dropout=0.2, last_channel=last_channel, num_classes=10)


def convnext_small_width():
    """torchvision's ConvNeXt (7x7 depthwise conv, channels-last LayerNorm, Linear,
    GELU, layer scale, residual; LayerNorm2d + 2x2 conv downsampling) at widths 32/64,
    two blocks per stage."""
    c = torchvision_module("convnext")
    return c.ConvNeXt([c.CNBlockConfig(32, 64, 2), c.CNBlockConfig(64, None, 2)], num_classes=10)


class MobileBlocks(nn.Module):
    """The activations and blocks of the mobile CNNs in one small network: ReLU6,
    HardSwish and SiLU after depthwise and grouped convs, a squeeze-excitation gate,
    residual adds, a max pool and an average pool."""

    def __init__(self, c=16):
        super().__init__()

        def bn_conv(cin, cout, k, groups=1, stride=1):
            return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
                                 nn.BatchNorm2d(cout))
        self.stem = bn_conv(3, c, 3, stride=2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.expand = bn_conv(c, 4 * c, 1)
        self.depthwise = bn_conv(4 * c, 4 * c, 3, groups=4 * c)
        self.squeeze = nn.Conv2d(4 * c, c // 2, 1)
        self.excite = nn.Conv2d(c // 2, 4 * c, 1)
        self.project = bn_conv(4 * c, c, 1)
        self.grouped = bn_conv(c, c, 3, groups=4)
        self.depthwise5 = bn_conv(c, c, 5, groups=c)
        self.avg = nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.head = nn.Linear(c, 10)
        for m in self.modules():  # non-trivial BatchNorm statistics to fold
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.data.uniform_(0.5, 1.5)
                m.bias.data.uniform_(-0.5, 0.5)

    def forward(self, x):
        x = self.pool(F.relu6(self.stem(x)))
        h = F.relu6(self.expand(x))
        h = F.hardswish(self.depthwise(h))
        gate = torch.sigmoid(self.excite(F.silu(self.squeeze(h.mean((2, 3), keepdim=True)))))
        x = x + self.project(h * gate)
        x = F.silu(self.grouped(x)) + x
        x = F.hardswish(self.depthwise5(x))
        x = self.avg(x)
        return self.head(x.mean((2, 3)))


# name -> (constructor, inputs as (name, shape, dtype), dynamic axes per input[, opsets:
# 14 and 17 when not given])
MODELS = {
    "position_ids": (PositionIds, [("ids", [2, 16], "int64")], {"ids": {0: "batch", 1: "seq"}}),
    "gpt2_block": (Gpt2Block, [("x", [2, 16, 32], "float32")], {"x": {0: "batch", 1: "seq"}}),
    "bert_block": (BertBlock, [("ids", [2, 16], "int64")], {"ids": {0: "batch", 1: "seq"}}),
    "computed_pad": (ComputedPad, [("x", [2, 4, 29], "float32")], {"x": {0: "batch"}}),
    "roll_windows": (RollWindows, [("x", [1, 8, 8, 16], "float32")], {"x": {0: "batch"}}),
    "relative_position_bias": (RelativePositionBias, [("x", [4, 16, 16], "float32")],
                               {"x": {0: "windows"}}),
    "gru2": (Gru2, [("x", [2, 12, 16], "float32")], {"x": {0: "batch"}}),
    "swin_tiny": (swin_tiny, [("x", [1, 3, 56, 56], "float32")], {"x": {0: "batch"}}),
    # The CNNs at opset 17 only: their opset 14 exports differ in nothing these tests
    # look at (no op of theirs changed between the two), and CI time is bounded;
    # ConvNeXt at both, whose LayerNorm opset 14 spells out.
    "mnasnet0_5": (mnasnet, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}, (17,)),
    "regnet_y_400mf": (regnet, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}, (17,)),
    "densenet121": (densenet121, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}, (17,)),
    "googlenet": (googlenet, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}, (17,)),
    "inception_v3": (inception_v3, [("x", [1, 3, 75, 75], "float32")], {"x": {0: "batch"}},
                     (17,)),
    "resnext50_32x4d": (resnext50, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}},
                        (17,)),
    "mobile_blocks": (MobileBlocks, [("x", [2, 3, 32, 32], "float32")], {"x": {0: "batch"}}, (17,)),
    "mobilenet_v2": (mobilenet_v2, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}, (17,)),
    "mobilenet_v3_small": (mobilenet_v3_small, [("x", [1, 3, 64, 64], "float32")],
                           {"x": {0: "batch"}}, (17,)),
    "efficientnet_b0": (efficientnet_b0, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}},
                        (17,)),
    "convnext": (convnext_small_width, [("x", [1, 3, 64, 64], "float32")], {"x": {0: "batch"}}),
}


def example(shape, dtype, generator):
    if dtype == "int64":
        return torch.randint(0, 100, shape, generator=generator)
    return torch.randn(shape, generator=generator)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--only", help="comma-separated model names")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    only = set(args.only.split(",")) if args.only else None
    manifest = {"torch": torch.__version__, "models": []}
    for name, (make, inputs, dynamic, *rest) in MODELS.items():
        if only and name not in only:
            continue
        opsets = rest[0] if rest else (14, 17)
        torch.manual_seed(0)
        model = make().eval()
        generator = torch.Generator().manual_seed(1)
        examples = tuple(example(shape, dtype, generator) for _, shape, dtype in inputs)
        for opset in opsets:
            for kind in ("static", "dynamic"):
                file = f"{name}_op{opset}_{kind}.onnx"
                torch.onnx.export(model, examples, os.path.join(args.out_dir, file),
                                  opset_version=opset,
                                  input_names=[n for n, _, _ in inputs],
                                  dynamic_axes=dynamic if kind == "dynamic" else None,
                                  do_constant_folding=True)
                manifest["models"].append({
                    "name": name, "file": file, "opset": opset, "dynamic": kind == "dynamic",
                    "dynamic_axes": sorted({axis for axes in dynamic.values()
                                            for axis in axes.values()}),
                    "inputs": [{"name": n, "shape": s, "dtype": d} for n, s, d in inputs]})
                print(f"exported {file}", file=sys.stderr)
    with open(os.path.join(args.out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

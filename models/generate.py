#!/usr/bin/env python3
"""Generates the bundled test models of stitchopt and models/manifest.json.

Every model is built with onnx.helper / onnx.numpy_helper (no PyTorch or
TensorFlow), shaped the way real exporters write these networks: torch-style
node names ("/encoder/layer.0/attention/MatMul"), Constant nodes for scalars and
axes, Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains, Identity of tied
weights, decomposed LayerNorm/GELU where exporters decompose them. Weights come
from fixed numpy seeds, so two runs write the same bytes (checked by
`generate.py --check-deterministic`).

After saving, each model is checked with onnx.checker.check_model(full_check=True)
and run in onnxruntime on random inputs at the manifest's shapes; outputs must be
finite.

Usage: generate.py [--out DIR] [--only NAME ...] [--check-deterministic]
"""

import argparse
import hashlib
import json
import math
import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

NP_TO_ONNX = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}
ONNX_TO_NAME = {TensorProto.FLOAT: "float32", TensorProto.INT64: "int64",
                TensorProto.BOOL: "bool"}
PRODUCER = "stitchopt models/generate.py"
F32 = np.float32


class Builder:
    """Accumulates one graph with exporter-style naming."""

    def __init__(self, name, opset, seed):
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.input_specs = []
        self.outputs = []
        self.used_names = set()

    # -- names ---------------------------------------------------------------
    def fresh(self, base):
        name, i = base, 0
        while name in self.used_names:
            i += 1
            name = f"{base}_{i}"
        self.used_names.add(name)
        return name

    # -- graph interface -----------------------------------------------------
    def input(self, name, dtype, shape, feed_shape=None, value_range=None):
        """Graph input. shape may hold strings (dim_param); feed_shape is then
        the concrete shape the manifest feeds and passes via --input-shape."""
        elem = NP_TO_ONNX[np.dtype(dtype)]
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        feed = list(feed_shape if feed_shape is not None else shape)
        spec = {"name": name, "dtype": ONNX_TO_NAME[elem],
                "declared_shape": list(shape), "shape": feed}
        if value_range is not None:
            spec["range"] = list(value_range)  # [low, high) for integer inputs
        self.input_specs.append(spec)
        self.used_names.add(name)
        return name

    def output(self, name, dtype, shape=None):
        """Graph output; shape None = take it from ONNX shape inference."""
        self.outputs.append((name, NP_TO_ONNX[np.dtype(dtype)], shape))

    def init(self, name, array):
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        self.used_names.add(name)
        return name

    def weight(self, name, shape, fan_in=None, std=None):
        if std is None:
            std = 1.0 / math.sqrt(fan_in if fan_in is not None else shape[0])
        return self.init(name, (self.rng.standard_normal(shape) * std).astype(F32))

    def bias(self, name, n, std=0.02):
        return self.init(name, (self.rng.standard_normal(n) * std).astype(F32))

    def op(self, op_type, inputs, scope="", n_out=1, out=None, **attrs):
        """Adds a node named "<scope>/<OpType>[_k]" with outputs
        "<node>_output_<i>" (torch.onnx style); out= names them explicitly."""
        node_name = self.fresh(f"{scope}/{op_type}")
        if out is None:
            outs = [f"{node_name}_output_{i}" for i in range(n_out)]
        else:
            outs = [out] if isinstance(out, str) else list(out)
        self.used_names.update(outs)
        self.nodes.append(helper.make_node(op_type, list(inputs), outs,
                                           name=node_name, **attrs))
        return outs[0] if len(outs) == 1 else outs

    def const(self, value, scope="", dtype=F32):
        """Constant node (exporters emit these for scalars, axes and shapes)."""
        arr = np.asarray(value, dtype=dtype)
        return self.op("Constant", [], scope=scope,
                       value=numpy_helper.from_array(arr, ""))

    def axes(self, axes_list, scope=""):
        return self.const(axes_list, scope, np.int64)

    # -- opset-dependent forms --------------------------------------------------
    def unsqueeze(self, x, axes, scope=""):
        if self.opset >= 13:
            return self.op("Unsqueeze", [x, self.axes(axes, scope)], scope)
        return self.op("Unsqueeze", [x], scope, axes=axes)

    def squeeze(self, x, axes, scope=""):
        if self.opset >= 13:
            return self.op("Squeeze", [x, self.axes(axes, scope)], scope)
        return self.op("Squeeze", [x], scope, axes=axes)

    def reduce(self, op_type, x, axes, keepdims, scope=""):
        # ReduceSum takes axes as an input from opset 13, the others from 18.
        axes_as_input = self.opset >= (13 if op_type == "ReduceSum" else 18)
        if axes_as_input:
            return self.op(op_type, [x, self.axes(axes, scope)], scope,
                           keepdims=keepdims)
        return self.op(op_type, [x], scope, axes=axes, keepdims=keepdims)

    def linear(self, x, w, b, scope):
        return self.op("Add", [self.op("MatMul", [x, w], scope), b], scope)

    # -- model ----------------------------------------------------------------
    def build(self, doc):
        outputs = []
        inferred = None
        for name, elem, shape in self.outputs:
            if shape is None:
                if inferred is None:
                    inferred = self._infer_output_types()
                shape = inferred[name]
            outputs.append(helper.make_tensor_value_info(name, elem, shape))
        graph = helper.make_graph(self.nodes, self.name, self.inputs, outputs,
                                  self.initializers)
        return self._model(graph, doc)

    def _model(self, graph, doc):
        opset_ids = [helper.make_opsetid("", self.opset)]
        model = helper.make_model(
            graph, opset_imports=opset_ids, producer_name=PRODUCER,
            producer_version="1", doc_string=doc,
            ir_version=helper.find_min_ir_version_for(opset_ids))
        return model

    def _infer_output_types(self):
        outs = [helper.make_tensor_value_info(n, e, None) for n, e, _ in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, self.inputs, outs,
                                  self.initializers)
        inferred = onnx.shape_inference.infer_shapes(self._model(graph, ""),
                                                     strict_mode=True)
        shapes = {}
        for vi in list(inferred.graph.value_info) + list(inferred.graph.output):
            t = vi.type.tensor_type
            if not t.HasField("shape"):
                continue
            dims = []
            for d in t.shape.dim:
                if d.HasField("dim_value"):
                    dims.append(d.dim_value)
                elif d.HasField("dim_param"):
                    dims.append(d.dim_param)
                else:
                    dims = None
                    break
            if dims is not None:
                shapes[vi.name] = dims
        for name, _, _ in self.outputs:
            if name not in shapes:
                raise RuntimeError(f"{self.name}: shape inference gave no full "
                                   f"shape for output {name}; declare it")
        return shapes


# ---------------------------------------------------------------------------
# Shared pieces


def layer_norm_decomposed(b, x, gamma, beta, scope, eps=1e-12):
    """torch.onnx's LayerNorm at opset < 17."""
    mean = b.reduce("ReduceMean", x, [-1], 1, scope)
    d = b.op("Sub", [x, mean], scope)
    var = b.reduce("ReduceMean", b.op("Pow", [d, b.const(2.0, scope)], scope),
                   [-1], 1, scope)
    std = b.op("Sqrt", [b.op("Add", [var, b.const(eps, scope)], scope)], scope)
    y = b.op("Div", [d, std], scope)
    return b.op("Add", [b.op("Mul", [y, gamma], scope), beta], scope)


def layer_norm(b, x, gamma, beta, scope, eps=1e-5):
    return b.op("LayerNormalization", [x, gamma, beta], scope, axis=-1,
                epsilon=eps)


def gelu_erf(b, x, scope):
    """x * 0.5 * (1 + erf(x / sqrt(2))) as torch.onnx writes it."""
    e = b.op("Erf", [b.op("Div", [x, b.const(1.4142135381698608, scope)], scope)],
             scope)
    t = b.op("Mul", [x, b.op("Add", [e, b.const(1.0, scope)], scope)], scope)
    return b.op("Mul", [t, b.const(0.5, scope)], scope)


def gelu_tanh(b, x, scope):
    """GPT-2's gelu_new: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3)))."""
    half = b.op("Mul", [b.const(0.5, scope), x], scope)
    cube = b.op("Pow", [x, b.const(3.0, scope)], scope)
    inner = b.op("Add", [x, b.op("Mul", [b.const(0.044715, scope), cube], scope)],
                 scope)
    th = b.op("Tanh", [b.op("Mul", [b.const(0.7978845608028654, scope), inner],
                            scope)], scope)
    return b.op("Mul", [half, b.op("Add", [b.const(1.0, scope), th], scope)], scope)


def dim_of(b, x, index, scope):
    """Shape -> Gather(index) -> Unsqueeze([0]): a 1-element int64 dim."""
    shape = b.op("Shape", [x], scope)
    d = b.op("Gather", [shape, b.const(index, scope, np.int64)], scope, axis=0)
    return b.unsqueeze(d, [0], scope)


def dynamic_reshape(b, x, shape_src, lead_dims, tail, scope):
    """Reshape x to [shape_src.dims[lead_dims]..., *tail] via a Concat of
    Shape/Gather/Unsqueeze pieces, the way exporters build dynamic shapes."""
    parts = [dim_of(b, shape_src, i, scope) for i in lead_dims]
    parts += [b.const([t], scope, np.int64) for t in tail]
    shape = b.op("Concat", parts, scope, axis=0)
    return b.op("Reshape", [x, shape], scope)


# ---------------------------------------------------------------------------
# Models


def make_mlp():
    b = Builder("mlp", 13, seed=101)
    x = b.input("input", F32, [32, 784])
    h = x
    dims = [784, 512, 256, 10]
    for i in range(3):
        w = b.weight(f"layers.{i}.weight", [dims[i + 1], dims[i]], fan_in=dims[i])
        bias = b.bias(f"layers.{i}.bias", dims[i + 1])
        scope = f"/layers.{i}"
        if i < 2:
            h = b.op("Gemm", [h, w, bias], scope, transB=1, alpha=1.0, beta=1.0)
            h = b.op("Relu", [h], f"/act{i}")
        else:
            h = b.op("Gemm", [h, w, bias], scope, out="logits", transB=1,
                     alpha=1.0, beta=1.0)
    b.op("Softmax", [h], "/softmax", out="probs", axis=-1)
    b.output("logits", F32, [32, 10])
    b.output("probs", F32, [32, 10])
    return b, dict(
        description="Multi-layer perceptron 784-512-256-10: Gemm(transB)+Relu, "
                    "Softmax head. Weights stored as external data.",
        workload="FusionStitching: perceptron / MLP",
        external_data=True)


def make_logistic_regression():
    b = Builder("logistic_regression", 11, seed=102)
    x = b.input("features", F32, [256, 100])
    w = b.weight("linear.weight", [100, 10])
    bias = b.bias("linear.bias", 10)
    y = b.linear(x, w, bias, "/linear")
    b.op("Sigmoid", [y], "/sigmoid", out="probs")
    b.output("probs", F32, [256, 10])
    return b, dict(
        description="Multi-label logistic regression: MatMul + Add + Sigmoid "
                    "(opset 11).",
        workload="FusionStitching: logistic regression (LR)")


def make_vae():
    b = Builder("vae", 18, seed=103)
    x = b.input("x", F32, [32, 784])
    eps = b.input("eps", F32, [32, 16])
    h = b.op("Relu", [b.linear(x, b.weight("enc.fc1.weight", [784, 128]),
                               b.bias("enc.fc1.bias", 128), "/enc/fc1")], "/enc")
    mu = b.linear(h, b.weight("enc.mu.weight", [128, 16]), b.bias("enc.mu.bias", 16),
                  "/enc/mu")
    logvar = b.linear(h, b.weight("enc.logvar.weight", [128, 16], std=0.05),
                      b.bias("enc.logvar.bias", 16), "/enc/logvar")
    # Reparameterization: z = mu + eps * exp(0.5 * logvar)
    std = b.op("Exp", [b.op("Mul", [logvar, b.const(0.5, "/reparam")], "/reparam")],
               "/reparam")
    z = b.op("Add", [mu, b.op("Mul", [eps, std], "/reparam")], "/reparam")
    hd = b.op("Relu", [b.linear(z, b.weight("dec.fc1.weight", [16, 128]),
                                b.bias("dec.fc1.bias", 128), "/dec/fc1")], "/dec")
    logits = b.linear(hd, b.weight("dec.fc2.weight", [128, 784]),
                      b.bias("dec.fc2.bias", 784), "/dec/fc2")
    recon = b.op("Sigmoid", [logits], "/dec", out="reconstruction")
    # KL = mean_batch(-0.5 * sum(1 + logvar - mu^2 - exp(logvar)))
    s = "/kl"
    t = b.op("Add", [b.const(1.0, s), logvar], s)
    t = b.op("Sub", [t, b.op("Pow", [mu, b.const(2.0, s)], s)], s)
    t = b.op("Sub", [t, b.op("Exp", [logvar], s)], s)
    kl_row = b.op("Mul", [b.reduce("ReduceSum", t, [1], 0, s), b.const(-0.5, s)], s)
    kl = b.reduce("ReduceMean", kl_row, [0], 0, s)
    kl = b.op("Identity", [kl], s, out="kl")
    # Binary cross-entropy reconstruction term, summed per row, batch mean.
    s = "/bce"
    e = b.const(1e-7, s)
    one = b.const(1.0, s)
    l1 = b.op("Mul", [x, b.op("Log", [b.op("Add", [recon, e], s)], s)], s)
    l0 = b.op("Mul", [b.op("Sub", [one, x], s),
                      b.op("Log", [b.op("Add", [b.op("Sub", [one, recon], s), e], s)],
                           s)], s)
    row = b.reduce("ReduceSum", b.op("Add", [l1, l0], s), [1], 0, s)
    bce = b.op("Neg", [b.reduce("ReduceMean", row, [0], 0, s)], s)
    b.op("Add", [bce, kl], "/loss", out="loss")
    b.output("reconstruction", F32, [32, 784])
    b.output("kl", F32, [])
    b.output("loss", F32, [])
    return b, dict(
        description="Variational autoencoder 784-128-16: reparameterization "
                    "(Exp/Mul/Add), KL term and BCE with ReduceSum/ReduceMean "
                    "taking axes as inputs (opset 18 form).",
        workload="FusionStitching: VAE")


def make_word2vec():
    b = Builder("word2vec", 13, seed=104)
    vocab, dim, batch, neg = 2000, 64, 64, 5
    center = b.input("center", np.int64, [batch], value_range=[0, vocab])
    context = b.input("context", np.int64, [batch], value_range=[0, vocab])
    negs = b.input("negatives", np.int64, [batch, neg], value_range=[0, vocab])
    emb_in = b.weight("in_embed.weight", [vocab, dim], std=0.3)
    emb_out = b.weight("out_embed.weight", [vocab, dim], std=0.3)
    c = b.op("Gather", [emb_in, center], "/in_embed", axis=0)
    p = b.op("Gather", [emb_out, context], "/out_embed", axis=0)
    n = b.op("Gather", [emb_out, negs], "/out_embed", axis=0)
    s = "/pos"
    pos = b.reduce("ReduceSum", b.op("Mul", [c, p], s), [1], 0, s)
    pos = b.op("Log", [b.op("Sigmoid", [pos], s)], s)
    s = "/neg"
    cu = b.unsqueeze(c, [1], s)
    ns = b.reduce("ReduceSum", b.op("Mul", [n, cu], s), [2], 0, s)
    ns = b.op("Log", [b.op("Sigmoid", [b.op("Neg", [ns], s)], s)], s)
    ns = b.reduce("ReduceSum", ns, [1], 0, s)
    s = "/loss"
    loss = b.reduce("ReduceMean", b.op("Add", [pos, ns], s), [0], 0, s)
    b.op("Neg", [loss], s, out="loss")
    s = "/predict"
    logits = b.op("MatMul", [c, b.op("Transpose", [emb_out], s, perm=[1, 0])], s)
    b.op("Softmax", [logits], s, out="probs", axis=-1)
    b.op("LogSoftmax", [logits], s, out="log_probs", axis=-1)
    b.output("loss", F32, [])
    b.output("probs", F32, [batch, vocab])
    b.output("log_probs", F32, [batch, vocab])
    return b, dict(
        description="Skip-gram word2vec with negative sampling: Gather "
                    "embeddings, Mul+ReduceSum+Sigmoid+Log scores, and a full "
                    "MatMul+Softmax/LogSoftmax prediction head over vocab 2000.",
        workload="FusionStitching: word2vec (W2V)")


def make_rnn_unrolled():
    b = Builder("rnn_unrolled", 15, seed=105)
    batch, steps, inp, hid = 4, 16, 32, 64
    x = b.input("x", F32, [batch, steps, inp])
    h = b.input("h0", F32, [batch, hid])
    w = {g: b.weight(f"cell.weight_ih_{g}", [inp, hid]) for g in "zrn"}
    u = {g: b.weight(f"cell.weight_hh_{g}", [hid, hid]) for g in "zrn"}
    bias = {g: b.bias(f"cell.bias_{g}", hid) for g in "zrn"}
    bias_hn = b.bias("cell.bias_hn", hid)
    one = b.init("one", np.array(1.0, dtype=F32))
    outs = []
    for t in range(steps):
        s = f"/step.{t}"
        xt = b.op("Slice", [x, b.const([t], s, np.int64), b.const([t + 1], s, np.int64),
                            b.const([1], s, np.int64)], s)
        xt = b.squeeze(xt, [1], s)
        z = b.op("Sigmoid", [b.op("Add", [b.op("Add", [b.op("MatMul", [xt, w["z"]], s),
                                                       b.op("MatMul", [h, u["z"]], s)], s),
                                          bias["z"]], s)], s)
        r = b.op("Sigmoid", [b.op("Add", [b.op("Add", [b.op("MatMul", [xt, w["r"]], s),
                                                       b.op("MatMul", [h, u["r"]], s)], s),
                                          bias["r"]], s)], s)
        hn = b.op("Add", [b.op("MatMul", [h, u["n"]], s), bias_hn], s)
        n = b.op("Tanh", [b.op("Add", [b.linear(xt, w["n"], bias["n"], s),
                                       b.op("Mul", [r, hn], s)], s)], s)
        h_new = b.op("Add", [b.op("Mul", [b.op("Sub", [one, z], s), n], s),
                             b.op("Mul", [z, h], s)], s,
                     out="h_n" if t == steps - 1 else None)
        h = h_new
        outs.append(b.unsqueeze(h, [1], s))
    b.op("Concat", outs, "/stack", out="outputs", axis=1)
    b.output("outputs", F32, [batch, steps, hid])
    b.output("h_n", F32, [batch, hid])
    return b, dict(
        description="GRU-style recurrent cell unrolled over 16 timesteps into "
                    "primitive ops (Slice/Squeeze/MatMul/Add/Sigmoid/Tanh/Sub/Mul "
                    "per step): hundreds of tiny kernels.",
        workload="FusionStitching: RNN")


def make_lstm():
    b = Builder("lstm", 14, seed=106)
    seq, batch, inp, hid, classes = 16, 4, 32, 64, 10
    x = b.input("x", F32, [seq, batch, inp])
    w = b.weight("lstm.W", [1, 4 * hid, inp], std=1 / math.sqrt(inp))
    r = b.weight("lstm.R", [1, 4 * hid, hid], std=1 / math.sqrt(hid))
    bb = b.weight("lstm.B", [1, 8 * hid], std=0.05)
    y, yh, _yc = b.op("LSTM", [x, w, r, bb], "/lstm", n_out=3, hidden_size=hid,
                      direction="forward", layout=0)
    y = b.op("Identity", [y], "/lstm", out="y")
    last = b.squeeze(yh, [0], "/head")
    logits = b.linear(last, b.weight("fc.weight", [hid, classes]),
                      b.bias("fc.bias", classes), "/fc")
    b.op("LogSoftmax", [logits], "/head", out="log_probs", axis=-1)
    b.output("y", F32, [seq, 1, batch, hid])
    b.output("log_probs", F32, [batch, classes])
    return b, dict(
        description="Single-layer LSTM (the ONNX LSTM op, hidden 64) over 16 "
                    "steps, classifier head with LogSoftmax.",
        workload="FusionStitching: LSTM")


def make_bert():
    b = Builder("bert", 14, seed=107)
    vocab, hid, heads, ffn, max_pos, layers = 2000, 64, 4, 256, 128, 2
    hd = hid // heads
    dyn = ["batch_size", "sequence_length"]
    feed = [2, 16]
    ids = b.input("input_ids", np.int64, dyn, feed, [0, vocab])
    tt = b.input("token_type_ids", np.int64, dyn, feed, [0, 2])
    mask = b.input("attention_mask", np.int64, dyn, feed, [0, 2])

    s = "/embeddings"
    word = b.weight("embeddings.word_embeddings.weight", [vocab, hid], std=0.5)
    word = b.op("Identity", [word], s)  # tied weight, as exporters write it
    pos_table = b.weight("embeddings.position_embeddings.weight", [max_pos, hid], std=0.5)
    type_table = b.weight("embeddings.token_type_embeddings.weight", [2, hid], std=0.5)
    pos_ids = b.init("embeddings.position_ids",
                     np.arange(max_pos, dtype=np.int64).reshape(1, max_pos))
    seq_len = dim_of(b, ids, 1, s)
    pos_ids = b.op("Slice", [pos_ids, b.const([0], s, np.int64), seq_len,
                             b.const([1], s, np.int64), b.const([1], s, np.int64)], s)
    e = b.op("Add", [b.op("Gather", [word, ids], s, axis=0),
                     b.op("Gather", [type_table, tt], s, axis=0)], s)
    e = b.op("Add", [e, b.op("Gather", [pos_table, pos_ids], s, axis=0)], s)
    x = layer_norm_decomposed(b, e, b.init("embeddings.LayerNorm.weight", np.ones(hid, F32)),
                              b.init("embeddings.LayerNorm.bias", np.zeros(hid, F32)),
                              s + "/LayerNorm")

    s = "/extended_mask"
    m = b.unsqueeze(b.unsqueeze(mask, [1], s), [2], s)
    m = b.op("Cast", [m], s, to=TensorProto.FLOAT)
    m = b.op("Mul", [b.op("Sub", [b.const(1.0, s), m], s),
                     b.const(-3.4028234663852886e38, s)], s)

    for layer in range(layers):
        p = f"encoder.layer.{layer}"
        s = f"/encoder/layer.{layer}/attention/self"

        def proj(name, src, scope, n_in=hid, n_out=hid, pfx=p):
            return b.linear(src, b.weight(f"{pfx}.{name}.weight", [n_in, n_out]),
                            b.bias(f"{pfx}.{name}.bias", n_out), scope)

        def heads_of(t, perm):
            r = dynamic_reshape(b, t, x, [0, 1], [heads, hd], s)
            return b.op("Transpose", [r], s, perm=perm)

        q = heads_of(proj("attention.self.query", x, s + "/query"), [0, 2, 1, 3])
        k = heads_of(proj("attention.self.key", x, s + "/key"), [0, 2, 3, 1])
        v = heads_of(proj("attention.self.value", x, s + "/value"), [0, 2, 1, 3])
        scores = b.op("Div", [b.op("MatMul", [q, k], s), b.const(math.sqrt(hd), s)], s)
        scores = b.op("Add", [scores, m], s)
        probs = b.op("Softmax", [scores], s, axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], s)], s, perm=[0, 2, 1, 3])
        ctx = dynamic_reshape(b, ctx, x, [0, 1], [hid], s)
        so = f"/encoder/layer.{layer}/attention/output"
        a = b.op("Add", [proj("attention.output.dense", ctx, so + "/dense"), x], so)
        a = layer_norm_decomposed(
            b, a, b.init(f"{p}.attention.output.LayerNorm.weight", np.ones(hid, F32)),
            b.init(f"{p}.attention.output.LayerNorm.bias", np.zeros(hid, F32)),
            so + "/LayerNorm")
        si = f"/encoder/layer.{layer}/intermediate"
        f = gelu_erf(b, proj("intermediate.dense", a, si + "/dense", hid, ffn),
                     si + "/intermediate_act_fn")
        sout = f"/encoder/layer.{layer}/output"
        o = b.op("Add", [proj("output.dense", f, sout + "/dense", ffn, hid), a], sout)
        x = layer_norm_decomposed(
            b, o, b.init(f"{p}.output.LayerNorm.weight", np.ones(hid, F32)),
            b.init(f"{p}.output.LayerNorm.bias", np.zeros(hid, F32)),
            sout + "/LayerNorm")

    x = b.op("Identity", [x], "/encoder", out="last_hidden_state")
    s = "/pooler"
    first = b.op("Gather", [x, b.const(0, s, np.int64)], s, axis=1)
    pooled = b.op("Gemm", [first, b.weight("pooler.dense.weight", [hid, hid]),
                           b.bias("pooler.dense.bias", hid)], s + "/dense",
                  alpha=1.0, beta=1.0, transB=1)
    b.op("Tanh", [pooled], s + "/activation", out="pooler_output")
    b.output("last_hidden_state", F32, ["batch_size", "sequence_length", hid])
    b.output("pooler_output", F32, ["batch_size", hid])
    return b, dict(
        description="BERT encoder, 2 layers, hidden 64, 4 heads, vocab 2000: "
                    "Gather embeddings, attention (MatMul/Reshape/Transpose/"
                    "Softmax, scale, additive mask from a Cast int64 mask), "
                    "decomposed LayerNorm, erf-GELU, residuals, pooler. Exporter "
                    "noise: Shape->Gather->Unsqueeze->Concat->Reshape chains, "
                    "Identity, Constant nodes. Dynamic batch and sequence dims.",
        workload="AStitch / Apollo / FusionStitching: BERT")


def make_gpt2_block():
    b = Builder("gpt2_block", 17, seed=108)
    vocab, hid, heads, ffn, max_pos, seq, layers = 2000, 64, 4, 256, 128, 32, 2
    hd = hid // heads
    ids = b.input("input_ids", np.int64, [1, seq], value_range=[0, vocab])
    amask = b.input("attention_mask", np.bool_, [1, seq])
    wte = b.weight("transformer.wte.weight", [vocab, hid], std=0.5)
    wpe = b.weight("transformer.wpe.weight", [max_pos, hid], std=0.2)
    s = "/transformer"
    n = b.op("Gather", [b.op("Shape", [ids], s), b.const(1, s, np.int64)], s, axis=0)
    pos = b.op("Range", [b.const(0, s, np.int64), n, b.const(1, s, np.int64)], s)
    pos = b.unsqueeze(pos, [0], s)
    x = b.op("Add", [b.op("Gather", [wte, ids], s + "/wte", axis=0),
                     b.op("Gather", [wpe, pos], s + "/wpe", axis=0)], s)
    # Causal mask: Trilu of ones, AND the padding mask.
    s = "/transformer/mask"
    causal = b.op("Trilu", [b.init("causal_ones", np.ones((seq, seq), F32))], s, upper=0)
    causal = b.op("Cast", [causal], s, to=TensorProto.BOOL)
    pad = b.unsqueeze(amask, [1, 2], s)
    allowed = b.op("And", [causal, pad], s)
    neg = b.const(np.finfo(np.float32).min, s)
    for layer in range(layers):
        p = f"transformer.h.{layer}"
        s = f"/transformer/h.{layer}"
        ln1 = layer_norm(b, x, b.init(f"{p}.ln_1.weight", np.ones(hid, F32)),
                         b.init(f"{p}.ln_1.bias", np.zeros(hid, F32)), s + "/ln_1")
        sa = s + "/attn"
        qkv = b.linear(ln1, b.weight(f"{p}.attn.c_attn.weight", [hid, 3 * hid]),
                       b.bias(f"{p}.attn.c_attn.bias", 3 * hid), sa + "/c_attn")
        q, k, v = b.op("Split", [qkv, b.const([hid] * 3, sa, np.int64)], sa,
                       n_out=3, axis=2)
        shape4 = b.const([1, seq, heads, hd], sa, np.int64)
        q = b.op("Transpose", [b.op("Reshape", [q, shape4], sa)], sa, perm=[0, 2, 1, 3])
        k = b.op("Transpose", [b.op("Reshape", [k, shape4], sa)], sa, perm=[0, 2, 3, 1])
        v = b.op("Transpose", [b.op("Reshape", [v, shape4], sa)], sa, perm=[0, 2, 1, 3])
        w = b.op("Div", [b.op("MatMul", [q, k], sa), b.const(math.sqrt(hd), sa)], sa)
        w = b.op("Where", [allowed, w, neg], sa)
        w = b.op("Softmax", [w], sa, axis=-1)
        a = b.op("Transpose", [b.op("MatMul", [w, v], sa)], sa, perm=[0, 2, 1, 3])
        a = b.op("Reshape", [a, b.const([1, seq, hid], sa, np.int64)], sa)
        a = b.linear(a, b.weight(f"{p}.attn.c_proj.weight", [hid, hid]),
                     b.bias(f"{p}.attn.c_proj.bias", hid), sa + "/c_proj")
        x = b.op("Add", [a, x], s)
        ln2 = layer_norm(b, x, b.init(f"{p}.ln_2.weight", np.ones(hid, F32)),
                         b.init(f"{p}.ln_2.bias", np.zeros(hid, F32)), s + "/ln_2")
        sm = s + "/mlp"
        f = b.linear(ln2, b.weight(f"{p}.mlp.c_fc.weight", [hid, ffn]),
                     b.bias(f"{p}.mlp.c_fc.bias", ffn), sm + "/c_fc")
        f = gelu_tanh(b, f, sm + "/act")
        f = b.linear(f, b.weight(f"{p}.mlp.c_proj.weight", [ffn, hid]),
                     b.bias(f"{p}.mlp.c_proj.bias", hid), sm + "/c_proj")
        x = b.op("Add", [x, f], s)
    x = layer_norm(b, x, b.init("transformer.ln_f.weight", np.ones(hid, F32)),
                   b.init("transformer.ln_f.bias", np.zeros(hid, F32)), "/transformer/ln_f")
    lm = b.op("Transpose", [wte], "/lm_head", perm=[1, 0])
    b.op("MatMul", [x, lm], "/lm_head", out="logits")
    b.output("logits", F32, [1, seq, vocab])
    return b, dict(
        description="GPT-2 style decoder, 2 blocks, hidden 64, 4 heads, vocab "
                    "2000, sequence 32: Range position ids, causal mask from "
                    "Trilu AND a bool padding mask, Where, Softmax, "
                    "LayerNormalization, tanh-GELU written as Mul/Pow/Tanh/Add, "
                    "tied lm_head.",
        workload="AStitch / Apollo: Transformer decoder (GPT-2 block)")


def make_vit():
    b = Builder("vit", 18, seed=109)
    img, patch, hid, heads, ffn, layers, classes = 32, 8, 64, 4, 256, 2, 10
    hd = hid // heads
    n_patch = (img // patch) ** 2
    tokens = n_patch + 1
    x = b.input("pixel_values", F32, [1, 3, img, img])
    s = "/embeddings/patch_embeddings"
    pe = b.op("Conv", [x, b.weight("embeddings.patch_embeddings.projection.weight",
                                   [hid, 3, patch, patch], fan_in=3 * patch * patch),
                       b.bias("embeddings.patch_embeddings.projection.bias", hid)],
              s + "/projection", kernel_shape=[patch, patch], strides=[patch, patch],
              pads=[0, 0, 0, 0], dilations=[1, 1], group=1)
    pe = b.op("Reshape", [pe, b.const([1, hid, n_patch], s, np.int64)], s)
    pe = b.op("Transpose", [pe], s, perm=[0, 2, 1])
    s = "/embeddings"
    cls = b.weight("embeddings.cls_token", [1, 1, hid], std=0.02)
    h = b.op("Concat", [cls, pe], s, axis=1)
    h = b.op("Add", [h, b.weight("embeddings.position_embeddings", [1, tokens, hid],
                                 std=0.02)], s)
    for layer in range(layers):
        p = f"encoder.layer.{layer}"
        s = f"/encoder/layer.{layer}"
        ln = layer_norm(b, h, b.init(f"{p}.layernorm_before.weight", np.ones(hid, F32)),
                        b.init(f"{p}.layernorm_before.bias", np.zeros(hid, F32)),
                        s + "/layernorm_before", eps=1e-12)
        sa = s + "/attention/attention"
        shape4 = b.const([1, tokens, heads, hd], sa, np.int64)

        def heads_of(name, perm):
            t = b.linear(ln, b.weight(f"{p}.attention.attention.{name}.weight", [hid, hid]),
                         b.bias(f"{p}.attention.attention.{name}.bias", hid),
                         f"{sa}/{name}")
            return b.op("Transpose", [b.op("Reshape", [t, shape4], sa)], sa, perm=perm)

        q = heads_of("query", [0, 2, 1, 3])
        k = heads_of("key", [0, 2, 3, 1])
        v = heads_of("value", [0, 2, 1, 3])
        w = b.op("Div", [b.op("MatMul", [q, k], sa), b.const(math.sqrt(hd), sa)], sa)
        w = b.op("Softmax", [w], sa, axis=-1)
        c = b.op("Transpose", [b.op("MatMul", [w, v], sa)], sa, perm=[0, 2, 1, 3])
        c = b.op("Reshape", [c, b.const([1, tokens, hid], sa, np.int64)], sa)
        c = b.linear(c, b.weight(f"{p}.attention.output.dense.weight", [hid, hid]),
                     b.bias(f"{p}.attention.output.dense.bias", hid),
                     s + "/attention/output/dense")
        h = b.op("Add", [c, h], s)
        ln = layer_norm(b, h, b.init(f"{p}.layernorm_after.weight", np.ones(hid, F32)),
                        b.init(f"{p}.layernorm_after.bias", np.zeros(hid, F32)),
                        s + "/layernorm_after", eps=1e-12)
        f = b.linear(ln, b.weight(f"{p}.intermediate.dense.weight", [hid, ffn]),
                     b.bias(f"{p}.intermediate.dense.bias", ffn),
                     s + "/intermediate/dense")
        f = gelu_erf(b, f, s + "/intermediate/intermediate_act_fn")
        f = b.linear(f, b.weight(f"{p}.output.dense.weight", [ffn, hid]),
                     b.bias(f"{p}.output.dense.bias", hid), s + "/output/dense")
        h = b.op("Add", [f, h], s + "/output")
    h = layer_norm(b, h, b.init("layernorm.weight", np.ones(hid, F32)),
                   b.init("layernorm.bias", np.zeros(hid, F32)), "/layernorm", eps=1e-12)
    cls_out = b.op("Gather", [h, b.const(0, "/classifier", np.int64)], "/classifier", axis=1)
    b.op("Gemm", [cls_out, b.weight("classifier.weight", [classes, hid], fan_in=hid),
                  b.bias("classifier.bias", classes)], "/classifier", out="logits",
         alpha=1.0, beta=1.0, transB=1)
    b.output("logits", F32, [1, classes])
    return b, dict(
        description="Small ViT: 8x8 patch embedding by Conv, Reshape/Transpose, "
                    "class-token Concat, position Add, 2 encoder layers with "
                    "LayerNormalization, attention, erf-GELU; Gemm classifier.",
        workload="Apollo: ViT")


def make_resnet():
    b = Builder("resnet", 21, seed=110)
    x = b.input("input", F32, [1, 3, 32, 32])

    def conv_bn(src, name, c_in, c_out, k, stride, relu):
        s = f"/{name}"
        w = b.weight(f"{name}.conv.weight", [c_out, c_in, k, k], fan_in=c_in * k * k)
        y = b.op("Conv", [src, w], s + "/conv", kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4, dilations=[1, 1], group=1)
        y = b.op("BatchNormalization",
                 [y, b.init(f"{name}.bn.weight", (1 + 0.1 * b.rng.standard_normal(c_out)).astype(F32)),
                  b.init(f"{name}.bn.bias", (0.1 * b.rng.standard_normal(c_out)).astype(F32)),
                  b.init(f"{name}.bn.running_mean", (0.1 * b.rng.standard_normal(c_out)).astype(F32)),
                  b.init(f"{name}.bn.running_var", (1 + 0.1 * b.rng.random(c_out)).astype(F32))],
                 s + "/bn", epsilon=1e-5, momentum=0.9)
        return b.op("Relu", [y], s) if relu else y

    h = conv_bn(x, "stem", 3, 16, 3, 1, True)
    h = b.op("MaxPool", [h], "/maxpool", kernel_shape=[2, 2], strides=[2, 2],
             pads=[0, 0, 0, 0], ceil_mode=0)
    # Basic block 1 (identity shortcut).
    y = conv_bn(h, "layer1.0.a", 16, 16, 3, 1, True)
    y = conv_bn(y, "layer1.0.b", 16, 16, 3, 1, False)
    h = b.op("Relu", [b.op("Add", [y, h], "/layer1.0")], "/layer1.0")
    # Basic block 2 (stride 2, projection shortcut).
    y = conv_bn(h, "layer2.0.a", 16, 32, 3, 2, True)
    y = conv_bn(y, "layer2.0.b", 32, 32, 3, 1, False)
    sc = conv_bn(h, "layer2.0.downsample", 16, 32, 1, 2, False)
    h = b.op("Relu", [b.op("Add", [y, sc], "/layer2.0")], "/layer2.0")
    h = b.op("GlobalAveragePool", [h], "/avgpool")
    h = b.op("Flatten", [h], "/flatten", axis=1)
    b.op("Gemm", [h, b.weight("fc.weight", [10, 32], fan_in=32), b.bias("fc.bias", 10)],
         "/fc", out="logits", alpha=1.0, beta=1.0, transB=1)
    b.output("logits", F32, [1, 10])
    return b, dict(
        description="Small ResNet: 6 Conv + BatchNormalization (inference form), "
                    "Relu, MaxPool, two basic blocks with residual Add (one "
                    "projection shortcut), GlobalAveragePool, Flatten, Gemm. "
                    "Opset 21.",
        workload="FusionStitching / Apollo: ResNet")


def make_recommender():
    b = Builder("recommender", 19, seed=111)
    rows, dim, n_users, n_items, batch, cand, tower = 750000, 32, 1000, 1000, 64, 30000, 16
    users = b.input("user_ids", np.int64, [rows], value_range=[0, n_users])
    items = b.input("item_ids", np.int64, [rows], value_range=[0, n_items])
    query = b.input("user_query", F32, [batch, tower])
    s = "/interaction"
    ue = b.op("Gather", [b.weight("user_embedding.weight", [n_users, dim], std=0.3), users],
              s, axis=0)
    ie = b.op("Gather", [b.weight("item_embedding.weight", [n_items, dim], std=0.3), items],
              s, axis=0)
    dot = b.reduce("ReduceSum", b.op("Mul", [ue, ie], s), [1], 0, s)  # <750000,32> rows
    dot = b.op("Add", [dot, b.init("global_bias", np.array(0.1, F32))], s)
    b.op("Sigmoid", [dot], s, out="click_prob")
    s = "/retrieval"
    logits = b.op("MatMul", [query, b.weight("item_tower.weight", [tower, cand])], s)
    logits = b.op("Add", [logits, b.bias("item_tower.bias", cand)], s)
    b.op("Softmax", [logits], s, out="item_probs", axis=-1)  # <64,30000>
    b.output("click_prob", F32, [rows])
    b.output("item_probs", F32, [batch, cand])
    return b, dict(
        description="Recommender with irregular shapes: embedding-interaction "
                    "row reduction ReduceSum over a <750000,32> tensor (Gather, "
                    "Mul, ReduceSum, Sigmoid) and a Softmax over <64,30000> "
                    "retrieval logits.",
        workload="AStitch: irregular-shape reductions (<750000,32> row "
                 "reduction, <64,30000> softmax)")


def make_mlp_train():
    b = Builder("mlp_train", 13, seed=112)
    batch, dims, lr = 256, [784, 256, 128, 10], 0.05
    x = b.input("input", F32, [batch, dims[0]])
    targets = b.input("targets", F32, [batch, dims[-1]])
    params = []
    for i in range(3):
        params.append((b.input(f"layers.{i}.weight", F32, [dims[i + 1], dims[i]]),
                       b.input(f"layers.{i}.bias", F32, [dims[i + 1]])))
    # Forward: Gemm(transB) + Relu, log-softmax cross entropy (a scalar mean).
    zs, acts = [], [x]
    for i, (w, bias) in enumerate(params):
        z = b.op("Gemm", [acts[-1], w, bias], f"/layers.{i}", transB=1, alpha=1.0, beta=1.0)
        zs.append(z)
        if i < 2:
            acts.append(b.op("Relu", [z], f"/act{i}"))
    logp = b.op("LogSoftmax", [zs[-1]], "/loss", axis=1)
    picked = b.reduce("ReduceSum", b.op("Mul", [targets, logp], "/loss"), [1], 0, "/loss")
    b.op("Neg", [b.reduce("ReduceMean", picked, [0], 0, "/loss")], "/loss", out="loss")
    # Backward: d(loss)/d(logits) = (softmax - targets) / batch; per layer the weight
    # gradient is dz^T a (Gemm transA), the bias gradient the column sum of dz, and
    # the input gradient dz W, masked by the ReLU.
    s = "/backward"
    dz = b.op("Div", [b.op("Sub", [b.op("Exp", [logp], s), targets], s),
                      b.const(float(batch), s)], s)
    grads = [None] * 3
    for i in (2, 1, 0):
        w = params[i][0]
        scope = f"{s}/layers.{i}"
        dw = b.op("Gemm", [dz, acts[i]], scope, transA=1, alpha=1.0)
        db = b.reduce("ReduceSum", dz, [0], 0, scope)
        grads[i] = (dw, db)
        if i > 0:
            da = b.op("MatMul", [dz, w], scope)
            mask = b.op("Greater", [zs[i - 1], b.const(0.0, scope)], f"{s}/act{i - 1}")
            dz = b.op("Where", [mask, da, b.const(0.0, scope)], f"{s}/act{i - 1}")
    # SGD: p - lr * dp for every parameter.
    for i, ((w, bias), (dw, db)) in enumerate(zip(params, grads)):
        for p, dp in ((w, dw), (bias, db)):
            step = b.op("Mul", [dp, b.const(lr, "/sgd")], "/sgd")
            b.op("Sub", [p, step], "/sgd", out=f"{p}.updated")
    b.output("loss", F32, [])
    for i in range(3):
        b.output(f"layers.{i}.weight.updated", F32, [dims[i + 1], dims[i]])
        b.output(f"layers.{i}.bias.updated", F32, [dims[i + 1]])
    return b, dict(
        description="One SGD training step of an MLP 784-256-128-10 at batch 256, "
                    "parameters as inputs: forward (Gemm(transB)+Relu), log-softmax "
                    "cross entropy (a scalar ReduceMean), backward (weight gradients "
                    "as Gemm(transA), bias gradients as column ReduceSums over the "
                    "batch, ReLU masks as Where), and the SGD update of every "
                    "parameter.",
        workload="FusionStitching: perceptron training (column and scalar "
                 "reductions, one update per parameter)")


MODELS = [
    ("mlp", make_mlp),
    ("mlp_train", make_mlp_train),
    ("logistic_regression", make_logistic_regression),
    ("vae", make_vae),
    ("word2vec", make_word2vec),
    ("rnn_unrolled", make_rnn_unrolled),
    ("lstm", make_lstm),
    ("bert", make_bert),
    ("gpt2_block", make_gpt2_block),
    ("vit", make_vit),
    ("resnet", make_resnet),
    ("recommender", make_recommender),
]


# ---------------------------------------------------------------------------
# Saving and checking


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def random_feed(spec, rng):
    """Random input for one manifest input spec (same rules as the harness)."""
    shape = tuple(spec["shape"])
    if spec["dtype"] == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    if spec["dtype"] == "int64":
        lo, hi = spec["range"]
        return rng.integers(lo, hi, size=shape, dtype=np.int64)
    if spec["dtype"] == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raise ValueError(f"unsupported dtype {spec['dtype']}")


def save(model, out_dir, name, external):
    path = os.path.join(out_dir, f"{name}.onnx")
    data_name = f"{name}.onnx.data"
    data_path = os.path.join(out_dir, data_name)
    if os.path.exists(data_path):
        os.remove(data_path)  # onnx appends to an existing external-data file
    if external:
        onnx.save_model(model, path, save_as_external_data=True,
                        all_tensors_to_one_file=True, location=data_name,
                        size_threshold=1024, convert_attribute=False)
        return path, [data_name]
    onnx.save_model(model, path)
    return path, []


def verify(path, entry):
    import onnxruntime as ort
    onnx.checker.check_model(path, full_check=True)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {spec["name"]: random_feed(spec, rng) for spec in entry["inputs"]}
    results = sess.run(None, feeds)
    for out, value in zip(sess.get_outputs(), results):
        expect = next(o for o in entry["outputs"] if o["name"] == out.name)
        if list(value.shape) != expect["shape"]:
            raise RuntimeError(f"{path}: output {out.name} has shape "
                               f"{list(value.shape)}, manifest says {expect['shape']}")
        if not np.all(np.isfinite(value)):
            raise RuntimeError(f"{path}: output {out.name} is not finite")


def generate(out_dir, only, check):
    manifest = {"schema": "stitchopt.models/1",
                "generator": "models/generate.py",
                "models": []}
    for name, fn in MODELS:
        if only and name not in only:
            continue
        builder, meta = fn()
        model = builder.build(meta["description"])
        path, data_files = save(model, out_dir, name, meta.get("external_data", False))
        dynamic = [s["name"] for s in builder.input_specs
                   if any(not isinstance(d, int) for d in s["declared_shape"])]
        flags = [f"{s['name']}={','.join(str(d) for d in s['shape'])}"
                 for s in builder.input_specs if s["name"] in dynamic]
        dim_values = {}
        for s in builder.input_specs:
            for d, v in zip(s["declared_shape"], s["shape"]):
                if not isinstance(d, int):
                    dim_values[d] = v
        outputs = []
        for vi in model.graph.output:
            dims = [d.dim_value if d.HasField("dim_value") else dim_values[d.dim_param]
                    for d in vi.type.tensor_type.shape.dim]
            outputs.append({"name": vi.name,
                            "dtype": ONNX_TO_NAME[vi.type.tensor_type.elem_type],
                            "shape": dims})
        op_counts = {}
        for node in model.graph.node:
            op_counts[node.op_type] = op_counts.get(node.op_type, 0) + 1
        size = os.path.getsize(path) + sum(
            os.path.getsize(os.path.join(out_dir, f)) for f in data_files)
        entry = {
            "name": name,
            "file": os.path.basename(path),
            "external_data": data_files,
            "description": meta["description"],
            "workload": meta["workload"],
            "opset": builder.opset,
            "ir_version": model.ir_version,
            "node_count": len(model.graph.node),
            "op_types": dict(sorted(op_counts.items())),
            "size_bytes": size,
            "sha256": sha256_of(path),
            "dynamic_inputs": dynamic,
            "input_shape_flags": flags,
            "inputs": builder.input_specs,
            "outputs": outputs,
        }
        if check:
            verify(path, entry)
        manifest["models"].append(entry)
        print(f"{name:20s} opset {builder.opset:2d}  {entry['node_count']:4d} nodes  "
              f"{size / 1024:8.1f} KiB", flush=True)
    if not only:
        with open(os.path.join(out_dir, "manifest.json"), "w") as f:
            json.dump(manifest, f, indent=2)
            f.write("\n")
    return manifest


def tree_digest(directory):
    return {f: sha256_of(os.path.join(directory, f))
            for f in sorted(os.listdir(directory))}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=here, help="output directory (default: models/)")
    ap.add_argument("--only", nargs="*", default=[],
                    help="generate only these models (manifest not rewritten)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the checker and onnxruntime runs")
    ap.add_argument("--check-deterministic", action="store_true",
                    help="generate twice into temporary directories and compare bytes")
    args = ap.parse_args()
    names = {n for n, _ in MODELS}
    unknown = [n for n in args.only if n not in names]
    if unknown:
        ap.error(f"unknown model(s) {unknown}; known: {sorted(names)}")
    if args.check_deterministic:
        with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b:
            generate(a, args.only, False)
            generate(b, args.only, False)
            da, db = tree_digest(a), tree_digest(b)
            if da != db:
                diff = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
                print(f"NOT deterministic: {diff}", file=sys.stderr)
                return 1
            print(f"deterministic: {len(da)} files identical across two runs")
        return 0
    os.makedirs(args.out, exist_ok=True)
    generate(args.out, args.only, not args.no_verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())

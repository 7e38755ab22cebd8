#!/usr/bin/env python3
"""Writes the broken-model corpus into tests/corpus/.

Each file is named after its fault; the script also writes
tests/corpus/README.md and the machine-readable tests/corpus/corpus.json. The models are built with
onnx.helper and serialized directly, never passed through the checker: they are
broken on purpose. Output is deterministic (fixed seeds, no timestamps).

Usage: make_corpus.py [--out DIR]
"""

import argparse
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8, name="g"):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                          producer_name="stitchopt tests/corpus/make_corpus.py",
                          producer_version="1")
    m.ir_version = ir_version
    return m


def vi(name, elem=F, shape=(2, 3)):
    return helper.make_tensor_value_info(name, elem, list(shape) if shape is not None else None)


def valid_model():
    """A small valid model: y = Relu(x + b)."""
    b = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "b")
    return model([helper.make_node("Add", ["x", "b"], ["s"], name="add"),
                  helper.make_node("Relu", ["s"], ["y"], name="relu")],
                 [vi("x")], [vi("y")], [b])


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                 [vi("x")], [vi("y")], **kw)


def parses(data):
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
        return True
    except Exception:  # protobuf raises DecodeError (type differs by backend)
        return False


# Every entry: file, fault, what a reader must do (expected exit code of
# `stitchopt FILE -o OUT` and what the message should name).
ENTRIES = []


def entry(file, fault, expect, exit_code=2):
    ENTRIES.append({"file": file, "fault": fault, "expect": expect,
                    "exit_code": exit_code})


def build(out):
    def write(file, data):
        with open(os.path.join(out, file), "wb") as f:
            f.write(data if isinstance(data, bytes) else data.SerializeToString())

    rng = np.random.default_rng(20240601)

    # Not parseable as a ModelProto.
    data = rng.integers(0, 256, size=512, dtype=np.uint8).tobytes()
    assert not parses(data), "random bytes happen to parse; change the seed"
    write("random_bytes.onnx", data)
    entry("random_bytes.onnx", "512 random bytes, not a protobuf",
          "reject: cannot parse the file as an ONNX ModelProto")

    full = valid_model().SerializeToString()
    half = full[: len(full) // 2]
    assert not parses(half), "truncated model still parses"
    write("truncated.onnx", half)
    entry("truncated.onnx", "a valid model cut to its first half",
          "reject: cannot parse (truncated protobuf)")

    write("empty.onnx", b"")
    entry("empty.onnx", "zero-byte file (parses as an empty ModelProto)",
          "reject: no graph / ir_version 0 / no opset import")

    write("no_graph.onnx", _no_graph())
    entry("no_graph.onnx", "ModelProto with ir_version and opset but no graph field",
          "reject: model has no graph")

    # Graph structure.
    write("cycle.onnx", model(
        [helper.make_node("Add", ["x", "b_out"], ["a_out"], name="node_a"),
         helper.make_node("Relu", ["a_out"], ["b_out"], name="node_b")],
        [vi("x")], [vi("b_out")]))
    entry("cycle.onnx", "node_a (Add) and node_b (Relu) consume each other's output",
          "reject: graph has a cycle, naming node_a / node_b")

    write("undefined_value.onnx", model(
        [helper.make_node("Add", ["x", "ghost"], ["y"], name="add_ghost")],
        [vi("x")], [vi("y")]))
    entry("undefined_value.onnx", "add_ghost (Add) reads value 'ghost' that nothing produces",
          "reject: undefined value 'ghost' used by add_ghost (Add)")

    write("duplicate_output.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu_1"),
         helper.make_node("Neg", ["x"], ["y"], name="neg_2")],
        [vi("x")], [vi("y")]))
    entry("duplicate_output.onnx", "relu_1 (Relu) and neg_2 (Neg) both produce 'y'",
          "reject: value 'y' defined twice (SSA violation)")

    write("output_not_produced.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x")], [vi("y"), vi("z")]))
    entry("output_not_produced.onnx", "graph output 'z' is produced by no node",
          "reject: graph output 'z' is never produced")

    write("input_initializer_clash.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x")], [vi("y")],
        [numpy_helper.from_array(np.ones((2, 3), np.float32), "y")]))
    entry("input_initializer_clash.onnx", "initializer named 'y' is also a node output",
          "reject: value 'y' defined twice (initializer and relu (Relu))")

    # Types and shapes.
    write("wrong_dtype.onnx", model(
        [helper.make_node("Add", ["x", "n"], ["y"], name="add_mixed")],
        [vi("x"), vi("n", TensorProto.INT64)], [vi("y")]))
    entry("wrong_dtype.onnx", "add_mixed (Add) of float32 'x' and int64 'n'",
          "reject: type mismatch at add_mixed (Add): float32 vs int64")

    write("shape_mismatch.onnx", model(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul_bad")],
        [vi("x", F, (2, 3)), vi("w", F, (4, 5))], [vi("y", F, (2, 5))]))
    entry("shape_mismatch.onnx", "matmul_bad (MatMul) of [2,3] by [4,5]",
          "reject: incompatible shapes at matmul_bad (MatMul): 3 vs 4")

    write("unknown_dtype.onnx", model(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")],
        [vi("x", 99)], [vi("y", 99)]))
    entry("unknown_dtype.onnx", "input 'x' has tensor elem_type 99",
          "reject: unknown/unsupported data type 99 for 'x'")

    bad_init = onnx.TensorProto()
    bad_init.name = "b"
    bad_init.data_type = F
    bad_init.dims.extend([2, 3])
    bad_init.raw_data = b"\0" * 8  # 2 floats, 6 declared
    write("initializer_size_mismatch.onnx", model(
        [helper.make_node("Add", ["x", "b"], ["y"], name="add")],
        [vi("x")], [vi("y")], [bad_init]))
    entry("initializer_size_mismatch.onnx",
          "initializer 'b' declares dims [2,3] float32 (24 bytes) but holds 8 bytes",
          "reject: initializer 'b' data size 8 != 24 expected")

    sym = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", F, ("batch", "seq"))], [vi("y", F, ("batch", "seq"))])
    write("symbolic_dims.onnx", sym)
    entry("symbolic_dims.onnx", "valid model whose input 'x' has dims [batch, seq]",
          "without --input-shape: exit 2 naming 'x' and the --input-shape flag; "
          "with --input-shape x=2,8: exit 0")

    # Versions.
    write("ir_version.onnx", relu_model(ir_version=99))
    entry("ir_version.onnx", "ir_version 99", "reject: unsupported IR version 99")

    write("opset_too_new.onnx", relu_model(opset=22))
    entry("opset_too_new.onnx", "default-domain opset 22",
          "reject: opset 22 unsupported (7 to 21 are read)")

    write("opset_too_old.onnx", relu_model(opset=6, ir_version=3))
    entry("opset_too_old.onnx", "default-domain opset 6",
          "reject: opset 6 unsupported (7 to 21 are read)")

    write("unknown_op.onnx", model(
        [helper.make_node("FrobnicateTensor", ["x"], ["y"], name="frob")],
        [vi("x")], [vi("y")]))
    entry("unknown_op.onnx", "frob (FrobnicateTensor) is no ONNX operator",
          "reject: an unknown op of the default domain is a bad model, as for the ONNX "
          "checker and onnxruntime (ops of other domains are Opaque and pass through)")

    # External data.
    def external_init(location):
        t = onnx.TensorProto()
        t.name = "w"
        t.data_type = F
        t.dims.extend([2, 3])
        t.data_location = onnx.TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", "0"), ("length", "24")):
            e = t.external_data.add()
            e.key, e.value = k, v
        return t

    write("missing_external_data.onnx", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x")], [vi("y")], [external_init("missing_weights.bin")]))
    entry("missing_external_data.onnx",
          "initializer 'w' points at external file missing_weights.bin, not shipped",
          "reject: cannot read external data missing_weights.bin for 'w'")

    write("external_data_escape.onnx", model(
        [helper.make_node("Add", ["x", "w"], ["y"], name="add")],
        [vi("x")], [vi("y")], [external_init("../../../../etc/passwd")]))
    entry("external_data_escape.onnx",
          "external data location '../../../../etc/passwd' leaves the model directory",
          "reject: external data path escapes the model directory")


def _no_graph():
    m = onnx.ModelProto()
    m.ir_version = 8
    m.opset_import.extend([helper.make_opsetid("", 17)])
    return m


README_HEAD = """# Broken-model corpus

Deliberately broken (or edge-case) ONNX files for the importer's error paths.
They are generated by `make_corpus.py` with onnx.helper / raw protobuf and are
never passed through the ONNX checker while being written; the script is
deterministic (fixed seed), so regenerating them gives the same bytes. It also
writes this README and `corpus.json`:

    .venv/bin/python tests/corpus/make_corpus.py

`corpus.json` holds the same table in machine-readable form (file, fault,
expected exit code of `stitchopt FILE -o OUT`, and what the error message
should say). Exit code 2 means "bad input" (see DESIGN.md, cli/). Every message
should name the file and, where there is one, the node as `name (OpType)` or
the value by name.

| File | Fault | Exit | Expected behaviour |
|---|---|---|---|
"""

README_TAIL = """
Notes from checking each file against onnx 1.17 and onnxruntime 1.20.1:

- `empty.onnx` parses as an empty ModelProto: rejection must come from
  validation (ir_version 0, no opset import, no graph), not from the parser.
- `initializer_size_mismatch.onnx` passes `onnx.checker` but onnxruntime fails
  to load it; the importer must check raw_data length against dims x dtype.
- `opset_too_old.onnx` passes the checker and onnxruntime runs it with a
  warning; it is rejected by stitchopt's own policy (opsets 7 to 21).
- `opset_too_new.onnx` passes onnx 1.17's checker (it knows opset 22) but
  onnxruntime 1.20 refuses it.
- `external_data_escape.onnx` is loaded by onnxruntime (it follows the path);
  the ONNX checker rejects it and so must stitchopt: external data must stay
  inside the model's directory.
- `symbolic_dims.onnx` is a valid model: it fails only without
  `--input-shape x=2,8`, and the message must name the missing flag.
- `unknown_op.onnx`: default-domain ops must exist in ONNX at the model's opset;
  ops the registry does not know but ONNX does, and ops of other domains, are
  Opaque and pass through.
"""


def write_readme(out):
    rows = "".join(f"| `{e['file']}` | {e['fault']} | {e['exit_code']} | {e['expect']} |\n"
                   for e in ENTRIES)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(README_HEAD + rows + README_TAIL)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    build(args.out)
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump({"schema": "stitchopt.corpus/1", "entries": ENTRIES}, f, indent=2)
        f.write("\n")
    write_readme(args.out)
    for e in ENTRIES:
        print(f"{e['file']:32s} {e['fault']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Real PyTorch exports through stitchopt (issue 15; tests/exports/export_torch.py).

Exports the corpus with Debian's /usr/bin/python3 (python3-torch, python3-torchvision)
into --work (reused while the exporter and torch are unchanged), then for every file:
  - `stitchopt FILE -o OUT` (with --input-shape for dynamic-axes exports) exits 0 and,
    after simplification, no node output has an unknown type
    (report.json simplify.unknown_types == 0);
  - ONNX Runtime runs OUT/model.fused.onnx and the original on the same random inputs
    and agrees within 1e-5 (max |a-b| / max |b|);
  - `stitchopt run OUT --emulate` runs every generated kernel and matches the reference
    interpreter (exit 0), or --cpu when --no-emulate; an export whose kernels/ is byte
    for byte that of an export already run so, on the same input shapes and dtypes (the
    static and dynamic exports of a CNN, often its opset 14 and 17 ones too), is not
    run again: the table names the one that ran its kernels;
  - the Python package (--package, BUILD/python) runs OUT through
    stitchopt.InferenceSession on the same inputs and agrees within 1e-5 with ONNX
    Runtime on the export with its graph optimizations off (ORT_DISABLE_ALL: ONNX
    Runtime 1.20's Pad + AveragePool fusion drops the padded zeros from the average,
    microsoft/onnxruntime#22177, fixed in 1.21 by #23190, so its optimized graph is
    no reference for inception_v3): on the emulated kernels for the export that ran them (their library is built
    by then), on the reference backend for an export whose kernels and feeds are byte
    for byte one that did (issue 38);
  - stitchopt launches fewer kernels than ONNX Runtime's optimized graph has work
    nodes (views, constants and shape queries excluded), and its rewritten model moves
    no more global memory than ONNX Runtime's ORT_ENABLE_EXTENDED graph (every work
    node reads its inputs and writes its outputs once; bench/ort_peer.py; ORT's side
    counted on the static export and reused for its dynamic twin);
  - no generated kernel is a standalone activation (Clip, HardSwish, HardSigmoid,
    SiLU's Sigmoid and Mul: only such elementwise ops) reading a library call's output:
    the activation belongs in the call's epilogue or its consumer's kernel (issue 17);
  - a dynamic-axes export compiled without --input-shape exits 2 with the message
    that names each of its dynamic axes once (symbolic dims, ir/shapes/symbolic_dims.h);
  - every model's opset 17 static export compiles at --precision tf32, bf16 and fp16
    (issue 39, docs/precision.md) and report.json's precision section measured every
    output within the precision's default gate, with no inf/NaN; the exports of
    PRECISION_EMULATED also run their kernels in the CUDA emulation at each precision
    (`stitchopt run --emulate`, within the same tolerance), unless --no-emulate.
Prints a table (nodes, kernels original / host shape ops / fused, ORT work nodes,
compile seconds); exit 1 with one line per failure.

    .venv/bin/python tests/exports/check_exports.py --stitchopt build/bin/stitchopt
        --work build/exports --package build/python [--only name,name] [--no-emulate]
    .venv/bin/python tests/exports/check_exports.py --work build/exports --export-only
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.join(HERE, "export_torch.py")
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
from ort_peer import (bytes_moved, extended_graph, fix_input_shapes,  # noqa: E402
                      measured_bytes, session, value_bytes, work_nodes)

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402

# The ops of an activation kernel (ReLU6, HardSwish and HardSigmoid opened, SiLU), and
# those that make it one.
ACTIVATION_OPS = {"Clip", "HardSwish", "HardSigmoid", "Sigmoid", "Mul", "Div", "Add", "Min",
                  "Max", "Relu", "Constant"}
ACTIVATION_MARKS = {"Clip", "HardSwish", "HardSigmoid", "Sigmoid"}
LIBRARY_OPS = {"Conv", "MatMul", "Gemm"}
# --precision over the corpus: the modes and their default gates (ir::precision_tolerance),
# and the exports whose kernels also run in the emulation at each mode (an attention
# block of each kind and a depthwise CNN: CI's time allows a few).
PRECISION_GATES = {"tf32": 5e-3, "bf16": 5e-2, "fp16": 1e-2}
PRECISION_EMULATED = {"bert_block", "gpt2_block", "mobile_blocks"}


def standalone_activations(fused):
    """The generated kernels of the rewritten model that only apply an activation to a
    library call's output: [(kernel, library node)]."""
    bodies = {f.name: [n.op_type for n in f.node] for f in fused.functions}
    producer = {out: node for node in fused.graph.node for out in node.output}

    def ops_of(node):
        return bodies.get(node.op_type, []) if node.domain == "stitchopt" else [node.op_type]

    def is_library(node):
        if node.domain == "stitchopt":
            return any(a.name == "category" and a.s == b"library" for a in node.attribute)
        return node.domain == "" and node.op_type in LIBRARY_OPS
    found = []
    for node in fused.graph.node:
        ops = set(ops_of(node))
        if is_library(node) or not ops & ACTIVATION_MARKS or not ops <= ACTIVATION_OPS:
            continue
        for name in node.input:
            source = producer.get(name)
            if source is not None and is_library(source):
                found.append((node.name or node.op_type, source.name or source.op_type))
    return found


def export(work, only):
    """The corpus in work/models, exported unless the stamp says it is current."""
    with open(EXPORTER, "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest() + (only or "")
    models = os.path.join(work, "models")
    stamp_path = os.path.join(models, "stamp")
    if os.path.exists(stamp_path) and open(stamp_path).read() == stamp:
        return models
    command = ["/usr/bin/python3", EXPORTER, models] + (["--only", only] if only else [])
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        print(result.stdout + result.stderr)
        print("exporting failed: scripts/setup.sh installs python3-torch and python3-torchvision")
        sys.exit(1)
    with open(stamp_path, "w") as f:
        f.write(stamp)
    return models


def random_feeds(entry, seed=0):
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in entry["inputs"]:
        if spec["dtype"] == "int64":
            feeds[spec["name"]] = rng.integers(0, 100, spec["shape"]).astype(np.int64)
        else:
            feeds[spec["name"]] = rng.standard_normal(spec["shape"]).astype(np.float32)
    return feeds


def kernels_digest(out, entry):
    """sha256 of OUT/kernels (every .cu, .cuh, .h and kernels.json, by name) and of the
    export's input shapes and dtypes: equal digests run the same kernels on the same
    feeds."""
    digest = hashlib.sha256(json.dumps([(spec["name"], spec["shape"], spec.get("dtype"))
                                        for spec in entry["inputs"]]).encode())
    kernels = os.path.join(out, "kernels")
    for name in sorted(os.listdir(kernels)) if os.path.isdir(kernels) else []:
        if name.endswith((".cu", ".cuh", ".h", ".json")):
            digest.update(name.encode() + b"\0")
            with open(os.path.join(kernels, name), "rb") as f:
                digest.update(hashlib.sha256(f.read()).digest())
    return digest.hexdigest()


def relative_error(got, want):
    """max |got - want| / max |want| (the 1e-5 comparisons with ONNX Runtime)."""
    return float(np.max(np.abs(got.astype(np.float64) - want))) / max(
        float(np.max(np.abs(want))), 1e-30)


def refusal_failures(plain, entry):
    """A dynamic-axes export compiled without --input-shape: exit 2 with the message
    that names each dynamic axis once; one line per failure."""
    refused = subprocess.run(plain, capture_output=True, text=True)
    message = refused.stderr.strip()
    named = all(message.count(f"{axis} (") == 1 for axis in entry["dynamic_axes"])
    if refused.returncode != 2 or "graph inputs have symbolic dims" not in message or not named:
        return [f"{entry['file']}: without --input-shape: exit {refused.returncode}, {message}"]
    return []


def api_failures(stitchopt, file, out, feeds, backend):
    """OUT through stitchopt.InferenceSession on `backend` against ONNX Runtime on the
    export (OUT/fixed.onnx) with its graph optimizations off: one line per failure."""
    exact_options = ort.SessionOptions()
    exact_options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    exact = ort.InferenceSession(os.path.join(out, "fixed.onnx"), exact_options,
                                 providers=["CPUExecutionProvider"]).run(None, feeds)
    try:
        api = stitchopt.InferenceSession(out, backend=backend).run(None, feeds)
    except (ValueError, RuntimeError) as error:
        return [f"{file}: stitchopt.InferenceSession ({backend}): {error}"]
    if len(api) != len(exact):
        return [f"{file}: InferenceSession gave {len(api)} outputs, ONNX Runtime {len(exact)}"]
    failures = []
    for index, (a, b) in enumerate(zip(api, exact)):
        error = relative_error(a, b)
        if not error <= 1e-5:
            failures.append(f"{file}: output {index} through InferenceSession ({backend}) "
                            f"differs from ONNX Runtime: {error:.3g}")
    return failures


def precision_failures(stitchopt, entry, path, work, emulate, row):
    """`entry` (a static export) compiled at each of PRECISION_GATES: its report's
    measured error within the gate, and its kernels emulated for PRECISION_EMULATED;
    fills `row` (mode -> worst output's max_rel_error) and returns one line per failure."""
    failures = []
    for mode, gate in PRECISION_GATES.items():
        out = os.path.join(work, "precision", f"{entry['file'][:-5]}_{mode}")
        compiled = subprocess.run([stitchopt, path, "-o", out, "-q", "--force", "--precision",
                                   mode], capture_output=True, text=True)
        if compiled.returncode != 0:
            failures.append(f"{entry['file']} --precision {mode}: exit {compiled.returncode}: "
                            f"{compiled.stderr.strip()[-800:]}")
            continue
        with open(os.path.join(out, "report.json")) as f:
            precision = json.load(f).get("precision", {})
        outputs = precision.get("outputs", [])
        if not precision.get("measured") or not precision.get("passed") or not outputs:
            failures.append(f"{entry['file']} --precision {mode}: report.json precision "
                            f"not measured or not passed: {json.dumps(precision)[:400]}")
            continue
        worst = max(output["max_rel_error"] for output in outputs)
        row[mode] = worst
        for output in outputs:
            if output["nonfinite"] != 0 or not output["max_rel_error"] <= gate:
                failures.append(f"{entry['file']} --precision {mode}: output {output['name']} "
                                f"max_rel_error {output['max_rel_error']:.3g} (gate {gate}), "
                                f"{output['nonfinite']} inf/NaN")
        if emulate and entry["name"] in PRECISION_EMULATED:
            run = subprocess.run([stitchopt, "run", out, "--emulate"], capture_output=True,
                                 text=True)
            if run.returncode != 0 or "outputs match the reference interpreter" not in run.stdout:
                failures.append(f"{entry['file']} --precision {mode}: run --emulate exit "
                                f"{run.returncode}:\n{(run.stdout + run.stderr)[-1500:]}")
            row["emulated"] = True
    return failures


def precision_pass(args, manifest, models):
    """Every model's opset 17 static export at each of PRECISION_GATES
    (precision_failures); prints the table of the worst errors; the failures."""
    failures, rows = [], []
    for entry in manifest["models"]:
        if entry["dynamic"] or entry["opset"] != 17:
            continue
        row = {"file": entry["file"]}
        failures += precision_failures(args.stitchopt, entry, os.path.join(models, entry["file"]),
                                       args.work, not args.no_emulate, row)
        rows.append(row)
    print("\n| export | tf32 max rel error | bf16 | fp16 | kernels emulated |")
    print("| --- | ---: | ---: | ---: | --- |")
    for row in rows:
        cells = " | ".join(f"{row[m]:.2e}" if m in row else "-" for m in PRECISION_GATES)
        print(f"| {row['file']} | {cells} | {'yes' if row.get('emulated') else 'no'} |")
    return failures


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", help="required unless --export-only")
    parser.add_argument("--work", required=True)
    parser.add_argument("--only", help="comma-separated model names")
    parser.add_argument("--no-emulate", action="store_true")
    parser.add_argument("--package", help="BUILD/python, the build tree's stitchopt package "
                        "(required unless --export-only)")
    parser.add_argument("--export-only", action="store_true",
                        help="export the corpus into WORK/models (unless current) and stop")
    args = parser.parse_args()
    if not args.export_only and not (args.package and args.stitchopt):
        parser.error("--stitchopt and --package are required")
    return args


def main():
    args = parse_args()
    os.makedirs(args.work, exist_ok=True)
    models = export(args.work, args.only)
    if args.export_only:
        return 0
    sys.path.insert(0, args.package)
    import stitchopt
    with open(os.path.join(models, "manifest.json")) as f:
        manifest = json.load(f)
    failures = []
    rows = []
    emulated = {}  # kernels_digest -> the export whose run checked those kernels
    peer_bytes = {}  # (model, opset) -> ONNX Runtime's bytes on the static export
    mode = "--cpu" if args.no_emulate else "--emulate"
    for entry in manifest["models"]:
        file = entry["file"]
        path = os.path.join(models, file)
        out = os.path.join(args.work, "out", file[:-5])
        plain = [args.stitchopt, path, "-o", out, "-q", "--force"]
        command = list(plain)
        if entry["dynamic"]:
            for spec in entry["inputs"]:
                command += ["--input-shape", f"{spec['name']}={','.join(map(str, spec['shape']))}"]
            failures += refusal_failures(plain, entry)
        start = time.monotonic()
        compiled = subprocess.run(command, capture_output=True, text=True)
        seconds = time.monotonic() - start
        if compiled.returncode != 0:
            failures.append(f"{file}: stitchopt exit {compiled.returncode}: {compiled.stderr.strip()}")
            continue
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        simplify = report["simplify"]
        if simplify["unknown_types"] != 0:
            roots = ", ".join(f"{r['node']} ({r['op']})" for r in simplify["unknown_type_roots"][:5])
            failures.append(f"{file}: {simplify['unknown_types']} unknown types after "
                            f"simplification, starting at {roots}")
        feeds = random_feeds(entry)
        shapes = {spec["name"]: spec["shape"] for spec in entry["inputs"]}
        optimized = os.path.join(out, "ort_optimized.onnx")
        reference = session(fix_input_shapes(path, shapes, os.path.join(out, "fixed.onnx")),
                            optimized)
        expected = reference.run(None, feeds)
        got = session(os.path.join(out, "model.fused.onnx")).run(None, feeds)
        for index, (a, b) in enumerate(zip(got, expected)):
            error = relative_error(a, b)
            if not error <= 1e-5:
                failures.append(f"{file}: output {index} differs from ONNX Runtime: {error:.3g}")
        digest = kernels_digest(out, entry)
        ran = emulated.get(digest)
        if ran is None:
            run = subprocess.run([args.stitchopt, "run", out, mode], capture_output=True,
                                 text=True)
            if run.returncode != 0 or "outputs match the reference interpreter" not in run.stdout:
                failures.append(f"{file}: run {mode} exit {run.returncode}:\n"
                                f"{(run.stdout + run.stderr)[-1500:]}")
            emulated[digest] = ran = "this one"
        backend = "emulated" if ran == "this one" and not args.no_emulate else "reference"
        failures += api_failures(stitchopt, file, out, feeds, backend)
        ort_work = work_nodes(optimized)
        kernels = report["kernels"]
        if kernels["fused"] >= ort_work:
            failures.append(f"{file}: {kernels['fused']} kernels, ONNX Runtime's optimized graph "
                            f"has {ort_work} work nodes")
        fused = onnx.load(os.path.join(out, "model.fused.onnx"))
        ours, unknown = bytes_moved(fused.graph, value_bytes(fused))
        # ONNX Runtime's traffic at these static shapes: counted on the static export, and
        # taken from it for the dynamic one of the same model and opset (the same graph
        # once the shapes are fixed; it saves an ORT session and run per file in CI).
        sibling = (entry["name"], entry["opset"])
        if entry["dynamic"] and sibling in peer_bytes:
            peers, peer_unknown = peer_bytes[sibling], set()
        else:
            fixed = os.path.join(out, "fixed.onnx")
            peer_graph = onnx.load(extended_graph(fixed, os.path.join(out, "ort_extended.onnx")))
            sizes = value_bytes(onnx.load(fixed))
            sizes.update(value_bytes(peer_graph))
            peers, peer_unknown = bytes_moved(peer_graph.graph, sizes)
            if peer_unknown:  # values ORT's rewrites created: their bytes from a run
                sizes.update(measured_bytes(peer_graph, peer_unknown, feeds))
                peers, peer_unknown = bytes_moved(peer_graph.graph, sizes)
            if not entry["dynamic"]:
                peer_bytes[sibling] = peers
        if unknown or peer_unknown:
            failures.append(f"{file}: bytes of {sorted(unknown | peer_unknown)[:5]} unknown")
        elif ours > peers:
            failures.append(f"{file}: moves {ours} bytes, ONNX Runtime's graph {peers}")
        for kernel, library in standalone_activations(fused):
            failures.append(f"{file}: {kernel} is a standalone activation after library call "
                            f"{library}")
        rows.append((file, simplify["nodes_before"], kernels["original"],
                     kernels.get("host_shape_ops", "-"), kernels["fused"], ort_work, seconds,
                     ran, ours / max(peers, 1)))
        if ran == "this one":
            emulated[digest] = file
    print("| model | nodes | kernels original | host shape ops | fused | ORT work nodes | "
          f"bytes / ORT's | compile s | kernels run {mode} by |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]} | {row[3]} | {row[4]} | {row[5]} | {row[8]:.2f} "
              f"| {row[6]:.2f} | {row[7]} |")
    failures += precision_pass(args, manifest, models)
    for failure in failures:
        print("FAIL " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

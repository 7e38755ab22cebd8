#!/usr/bin/env python3
"""Estimated time and measured error of every --precision, side by side (issue 39).

For each model (the bundled models of models/manifest.json, the PyTorch export corpus
of tests/exports/export_torch.py with --exports, and with --encoders the stock
torch.nn.TransformerEncoder at the GEMM-bound size of issue 39: batch 32, sequence 256,
both layouts, exported by bench/export_transformer_encoder.py) and each precision
(fp32, tf32, fp32x3, bf16, fp16): compiles it, and prints from one run the planner's
estimate of the whole model (report.json modeled.time_after_us: every kernel and
library call with its launch), with --emulate the emulated profile's total
(`stitchopt profile OUT --emulate`, profile.json total_estimated_us), each as a ratio
to fp32's, and the worst output error the compile measured against float32
(report.json precision: max |a - b| / max |float32|).

    bench/precision_estimates.py --stitchopt build/bin/stitchopt [--models mlp,vit]
        [--exports DIR] [--encoders] [--emulate] [--io-precision reduced] [--json F]

--io-precision reduced compiles bf16 and fp16 with their graph inputs and outputs in
the reduced type (the caller feeds and reads half the bytes; fp32's row is unchanged).

Estimates need no GPU (docs/cost-model.md, "Precision"; the tensor-core peaks are the
datasheets'); bench/gpu/ measures.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRECISIONS = ["fp32", "tf32", "fp32x3", "bf16", "fp16"]


def bundled(names):
    with open(ROOT / "models" / "manifest.json") as f:
        entries = json.load(f)["models"]
    return [(e["name"], str(ROOT / "models" / e["file"]), e["input_shape_flags"])
            for e in entries if not names or e["name"] in names]


def exports(directory, names):
    with open(Path(directory) / "manifest.json") as f:
        manifest = json.load(f)
    models = []
    for entry in manifest["models"] if isinstance(manifest, dict) else manifest:
        name = Path(entry["file"]).stem
        if names and name not in names:
            continue
        flags = [f"{i['name']}={','.join(map(str, i['shape']))}"
                 for i in entry.get("inputs", []) if "dynamic" in name]
        models.append((name, str(Path(directory) / entry["file"]), flags))
    return models


def encoders(work):
    models = []
    for layout, extra in (("batch_first", []), ("sequence_first", ["--sequence-first"])):
        path = Path(work) / f"encoder_b32_s256_{layout}.onnx"
        subprocess.run(["/usr/bin/python3", str(ROOT / "bench" / "export_transformer_encoder.py"),
                        str(path), "--batch", "32", "--sequence", "256"] + extra,
                       check=True, capture_output=True, text=True, timeout=600)
        models.append((f"encoder_b32_s256_{layout}", str(path), []))
    return models


def run_one(stitchopt, path, flags, precision, out, emulate, io_precision="keep"):
    command = [stitchopt, path, "-o", str(out), "-q", "--precision", precision,
               "--max-rel-error", "1"]
    if precision in ("bf16", "fp16"):
        command += ["--io-precision", io_precision]
    for flag in flags:
        command += ["--input-shape", flag]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[:300]}
    report = json.loads((out / "report.json").read_text())
    section = report["precision"]
    errors = [o["max_rel_error"] for o in section["outputs"] if o["max_rel_error"] is not None]
    row = {"modeled_us": report["modeled"]["time_after_us"] if report["modeled"] else None,
           "kernels": report["kernels"].get("fused"),
           "max_rel_error": max(errors) if errors else None,
           "nonfinite": sum(o["nonfinite"] or 0 for o in section["outputs"])}
    if emulate:
        proc = subprocess.run([stitchopt, "profile", str(out), "--emulate"],
                              capture_output=True, text=True, timeout=3600)
        row["emulated_us"] = (json.loads((out / "profile.json").read_text())["total_estimated_us"]
                              if proc.returncode == 0 else None)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stitchopt", default=str(ROOT / "build" / "bin" / "stitchopt"))
    parser.add_argument("--models", default="", help="comma-separated names (default: all)")
    parser.add_argument("--exports", help="a directory export_torch.py wrote")
    parser.add_argument("--encoders", action="store_true")
    parser.add_argument("--no-bundled", action="store_true")
    parser.add_argument("--emulate", action="store_true")
    parser.add_argument("--io-precision", default="keep", choices=["keep", "reduced"])
    parser.add_argument("--json")
    args = parser.parse_args()
    names = set(filter(None, args.models.split(",")))
    with tempfile.TemporaryDirectory(prefix="stitch-precision-bench-") as work:
        return run(args, names, Path(work))


def run(args, names, work):
    """Compiles and estimates every model at every precision in `work`."""
    models = [] if args.no_bundled else bundled(names)
    if args.exports:
        models += exports(args.exports, names)
    if args.encoders:
        models += encoders(work)
    results = {}
    column = "emulated_us" if args.emulate else "modeled_us"
    print(f"{'model':34} " + " ".join(f"{p:>21}" for p in PRECISIONS))
    print(f"{'':34} " + " ".join(f"{'us  x fp32   err':>21}" for p in PRECISIONS))
    for name, path, flags in models:
        rows = {}
        for precision in PRECISIONS:
            rows[precision] = run_one(args.stitchopt, path, flags, precision,
                                      work / f"{name}_{precision}", args.emulate,
                                      args.io_precision)
        results[name] = rows
        base = rows["fp32"].get(column)
        cells = []
        for precision in PRECISIONS:
            row = rows[precision]
            if "error" in row or row.get(column) is None:
                cells.append(f"{'failed':>21}")
                continue
            ratio = f"{row[column] / base:.2f}x" if base else "-"
            error = f"{row['max_rel_error']:.0e}" if row["max_rel_error"] is not None else "-"
            if row["nonfinite"]:
                error = "NaN!"
            cells.append(f"{row[column]:9.1f} {ratio:>5} {error:>5}")
        print(f"{name[:34]:34} " + " ".join(cells), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""--precision on the bundled models (issue 39, docs/precision.md).

For each model of models/manifest.json (or those named with --model) and each precision
(step 2 on EMULATED_MODELS only, to keep CI's time: the emulation compiles every
kernel):
  1. `stitchopt MODEL -o OUT --precision P` compiles, and report.json's "precision"
     section measured every output against the float32 model within the precision's
     gate (tf32 5e-3, fp32x3 1e-5, bf16 5e-2, fp16 1e-2), with no inf/NaN;
  2. `stitchopt run OUT --cpu --emulate` runs the generated kernels in the CUDA
     emulation and every output matches the reference interpreter's evaluation of
     OUT's model within the same tolerance: under tf32/fp32x3 that is the float32
     products (the tiled MatMul's mma.sync m16n8k8 emulated with TF32 rounding, library
     calls at the precision's products); under bf16/fp16 it is the rewritten model,
     whose every stored value the interpreter rounds as the kernels do.
Then: a gate below the measured error exits 3 and names the output; fp16's range rule
keeps a value that would overflow float16 in float32 and says so; the fp32 default
writes no "stitchopt.precision" metadata (fp32 outputs are what they were); and, when
nvcc is found, the tensor-core kernels compile for sm_80 and sm_90 (compile_kernels.py).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_outputs import (SOURCE_DIR, Failure, compile_kernel_dirs, input_shape_flags,  # noqa: E402
                           manifest_entries)

GATES = {"tf32": 5e-3, "fp32x3": 1e-5, "bf16": 5e-2, "fp16": 1e-2}
EMULATED_MODELS = {"mlp", "rnn_unrolled", "gpt2_block", "vit", "resnet"}


def stitchopt(args, *arguments, timeout=600):
    """`stitchopt ARGUMENTS...` (a compile, or `run OUT --cpu --emulate`)."""
    return subprocess.run([args.stitchopt, *arguments], capture_output=True, text=True,
                          timeout=timeout)


def emulate(args, out):
    """`stitchopt run OUT --cpu --emulate`: the generated kernels in the CUDA emulation
    against the reference interpreter."""
    return stitchopt(args, "run", out, "--cpu", "--emulate", timeout=900)


def odd_shapes(args, work, check, mma_dirs):
    """A batched MatMul whose m, n and k fit no tensor-core piece ([3, 20, 10] x [10, 12],
    a bias and ReLU after it): the tiles pad rows to 16, columns to 8 and k to 16 with
    zeros, and the emulated kernel (m16n8k8 TF32 for tf32/fp32x3, m16n8k16 for
    bf16/fp16) still matches the reference within each precision's gate."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(5)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
         helper.make_node("Add", ["m", "b"], ["a"], name="bias"),
         helper.make_node("Relu", ["a"], ["y"], name="relu")],
        "odd_gemm",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 20, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 20, 12])],
        [numpy_helper.from_array(rng.uniform(-1, 1, (10, 12)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.uniform(-1, 1, (12,)).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = os.path.join(work, "odd_gemm.onnx")
    onnx.save(model, path)
    for precision, instruction in (("tf32", "stitch_mma_m16n8k8_tf32(acc"),
                                   ("fp32x3", "stitch_mma_m16n8k8_tf32(acc"),
                                   ("bf16", "stitch_mma_m16n8k16_bf16(acc"),
                                   ("fp16", "stitch_mma_m16n8k16_f16(acc")):
        gate = GATES[precision]
        out = os.path.join(work, f"odd_gemm_{precision}")
        proc = stitchopt(args, path, "-o", out, "--precision", precision, "-q")
        check(f"odd_gemm {precision}: compiles", proc.returncode == 0, proc.stderr)
        if proc.returncode != 0:
            continue
        kernels = os.path.join(out, "kernels")
        sources = "".join(open(os.path.join(kernels, n)).read()
                          for n in os.listdir(kernels) if n.endswith(".cu"))
        check(f"odd_gemm {precision}: the MatMul runs on tensor cores in padded tiles",
              instruction in sources and "% 16 < 10" in sources, sources[:3000])
        mma_dirs.append(kernels)
        proc = emulate(args, out)
        check(f"odd_gemm {precision}: emulated kernel matches float32 within {gate:g}",
              proc.returncode == 0, proc.stdout + proc.stderr)


def float16_overflow(args, work, check):
    """y = (x * 3000) * 30 + 1: the product reaches 9e4 on the calibration inputs, past
    float16's 65504. fp16 keeps it (and the scaled x, 3000 < 65504 / 4, is converted)
    float32 by the range rule, names it in report.json, and the output is right; bf16,
    with float32's range, converts both."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "a"], ["scaled"], name="scale"),
         helper.make_node("Mul", ["scaled", "b"], ["big"], name="overflow"),
         helper.make_node("Add", ["big", "one"], ["y"], name="shift")],
        "float16_overflow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
        [numpy_helper.from_array(np.array(3000, np.float32), "a"),
         numpy_helper.from_array(np.array(30, np.float32), "b"),
         numpy_helper.from_array(np.array(1, np.float32), "one")])
    path = os.path.join(work, "float16_overflow.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    for precision in ("fp16", "bf16"):
        out = os.path.join(work, f"overflow_{precision}")
        proc = stitchopt(args, path, "-o", out, "--precision", precision, "-q")
        check(f"float16_overflow {precision}: compiles", proc.returncode == 0, proc.stderr)
        if proc.returncode != 0:
            continue
        with open(os.path.join(out, "report.json")) as f:
            section = json.load(f)["precision"]
        kept = {k["values"]: k["why"] for k in section["kept_float32"]}
        if precision == "fp16":
            check("fp16: the overflowing product is kept float32 and reported",
                  "big" in kept and "would overflow" in kept["big"] and "scaled" not in kept and
                  section["passed"] and section["outputs"][0]["nonfinite"] == 0,
                  json.dumps(section, indent=1))
        else:
            check("bf16: nothing kept for range", "big" not in kept and section["passed"],
                  json.dumps(section, indent=1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", default=os.path.join(SOURCE_DIR, "models"))
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--nvcc", action="store_true",
                        help="compile the tensor-core kernels with compile_kernels.py")
    parser.add_argument("--nvrtc-check", help="stitch_nvrtc_check, passed to compile_kernels.py")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="stitch-precision-")
    failures = []
    mma_dirs = []

    def check(label, ok, detail=""):
        print(f"{'ok  ' if ok else 'FAIL'} {label}")
        if not ok:
            failures.append(f"{label}: {detail}")

    for entry in manifest_entries(args.models, args.model):
        for precision, gate in GATES.items():
            label = f"{entry['name']} {precision}"
            out = os.path.join(work, f"{entry['name']}_{precision}")
            proc = stitchopt(args, os.path.join(args.models, entry["file"]), "-o", out,
                             "--precision", precision, "-q", *input_shape_flags(entry, {}))
            check(f"{label}: compiles", proc.returncode == 0, proc.stderr.strip())
            if proc.returncode != 0:
                continue
            with open(os.path.join(out, "report.json")) as f:
                section = json.load(f)["precision"]
            worst = max((o["max_rel_error"] for o in section["outputs"]), default=0)
            check(f"{label}: report measured every output, worst {worst:.2e} <= {gate:g}",
                  section["mode"] == precision and section["measured"] and section["passed"] and
                  section["max_rel_error_gate"] == gate and worst <= gate and
                  all(o["nonfinite"] == 0 and o["cosine"] > 0.999 for o in section["outputs"]),
                  json.dumps(section, indent=1))
            kernels = os.path.join(out, "kernels")
            if os.path.isdir(kernels) and any(
                    re.search(r"stitch_mma_m16n8k(8_tf32|16_bf16|16_f16)\(acc",
                              open(os.path.join(kernels, n)).read())
                    for n in os.listdir(kernels) if n.endswith(".cu")):
                mma_dirs.append(kernels)
            if entry["name"] not in EMULATED_MODELS:
                continue
            proc = emulate(args, out)
            text = proc.stdout + proc.stderr
            check(f"{label}: emulated kernels match the reference within {gate:g}",
                  proc.returncode == 0 and "outputs match the reference" in text, text[-3000:])
            if entry["name"] == "vit" and precision == "tf32":
                gated = stitchopt(args, os.path.join(args.models, entry["file"]), "-o",
                                  out + "_gated", "--precision", "tf32", "--max-rel-error", "1e-6",
                                  "-q")
                check("vit tf32 --max-rel-error 1e-6: exit 3 naming the output",
                      gated.returncode == 3 and "output \"logits\" differs from float32 by" in
                      gated.stderr and "above --max-rel-error 1e-06" in gated.stderr,
                      f"exit {gated.returncode}: {gated.stderr}")
    check("the tiled MatMul composition ran on tensor cores in some model", bool(mma_dirs))
    odd_shapes(args, work, check, mma_dirs)
    float16_overflow(args, work, check)
    fp32 = os.path.join(work, "mlp_fp32")
    proc = stitchopt(args, os.path.join(args.models, "mlp.onnx"), "-o", fp32, "-q")
    with open(os.path.join(fp32, "model.fused.onnx"), "rb") as f:
        check("fp32 (the default) writes no stitchopt.precision metadata",
              proc.returncode == 0 and b"stitchopt.precision" not in f.read())
    if args.nvcc and mma_dirs:
        # One kernel directory per precision (the odd shapes' four, and a model's).
        compile_kernel_dirs([d for d in mma_dirs if "odd_gemm" in d] + mma_dirs[:1],
                            args.nvrtc_check, failures)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")
    for failure in failures:
        print(f"\nFAIL {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as error:
        print(f"FAIL {error}")
        sys.exit(1)

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
keeps a value that would overflow float16 in float32 and says so, and so one whose
values all lie below float16's normal numbers; --inputs samples calibrate and measure
(and a wrong one is refused); --io-precision reduced gives the graph's float32 inputs
and outputs the reduced type; the fp32 default
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


def compiled_sources(args, check, label, path, out, *flags):
    """`stitchopt PATH -o OUT -q FLAGS...`, checked; every .cu of OUT/kernels as one
    string, or None when the compile failed."""
    proc = stitchopt(args, path, "-o", out, "-q", *flags)
    check(f"{label}: compiles", proc.returncode == 0, proc.stderr)
    if proc.returncode != 0:
        return None
    kernels = os.path.join(out, "kernels")
    return "".join(open(os.path.join(kernels, n)).read()
                   for n in os.listdir(kernels) if n.endswith(".cu"))


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
        sources = compiled_sources(args, check, f"odd_gemm {precision}", path, out,
                                   "--precision", precision)
        if sources is None:
            continue
        kernels = os.path.join(out, "kernels")
        check(f"odd_gemm {precision}: the MatMul runs on tensor cores in padded tiles",
              instruction in sources and "% 16 < 10" in sources, sources[:3000])
        mma_dirs.append(kernels)
        proc = emulate(args, out)
        check(f"odd_gemm {precision}: emulated kernel matches float32 within {gate:g}",
              proc.returncode == 0, proc.stdout + proc.stderr)


def stage_gemms(args, work, check, mma_dirs):
    """A GRU step's gates (x [20, 36] and h [20, 60] each times two weights, sigmoid and
    tanh, their product times [60, 44]) for an H100 MIG 1g slice (16 SMs: the h100
    profile with sm_count 16): the planner puts the four gate MatMuls in one kernel's
    stage, 1200 outputs each, more than a warp per output fits in the slice's wave, and
    at each tensor-core precision each runs a warp per 16 x 8 piece on mma.sync (20
    rows leave a partial piece, k 36 a partial step: zeros); the emulated kernels match
    within the gate."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(9)

    def weight(name, shape):
        return numpy_helper.from_array(rng.uniform(-0.5, 0.5, shape).astype(np.float32), name)
    nodes = []
    for gate, activation in (("z", "Sigmoid"), ("n", "Tanh")):
        nodes += [helper.make_node("MatMul", ["x", f"w{gate}"], [f"x{gate}"]),
                  helper.make_node("MatMul", ["h", f"u{gate}"], [f"h{gate}"]),
                  helper.make_node("Add", [f"x{gate}", f"h{gate}"], [f"s{gate}"]),
                  helper.make_node(activation, [f"s{gate}"], [gate])]
    nodes += [helper.make_node("Mul", ["z", "n"], ["zn"]),
              helper.make_node("MatMul", ["zn", "wo"], ["y"])]
    graph = helper.make_graph(
        nodes, "stage_gemms",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [20, 36]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [20, 60])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [20, 44])],
        [weight("wz", (36, 60)), weight("uz", (60, 60)), weight("wn", (36, 60)),
         weight("un", (60, 60)), weight("wo", (60, 44))])
    path = os.path.join(work, "stage_gemms.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    h100 = os.path.join(work, "stage_gemms_h100")
    proc = stitchopt(args, path, "-o", h100, "-q", "--no-codegen")
    check("stage_gemms: compiles for the h100 profile", proc.returncode == 0, proc.stderr)
    if proc.returncode != 0:
        return
    with open(os.path.join(h100, "device.json")) as f:
        profile = json.load(f)
    profile.update(name="h100-mig-1g", sm_count=16, note="an H100 MIG 1g slice: 16 SMs")
    device = os.path.join(work, "h100_mig_1g.json")
    with open(device, "w") as f:
        json.dump(profile, f)
    for precision, instruction in (("tf32", "stitch_mma_m16n8k8_tf32(acc"),
                                   ("fp32x3", "stitch_mma_m16n8k8_tf32(acc, a_small"),
                                   ("bf16", "stitch_mma_m16n8k16_bf16(acc"),
                                   ("fp16", "stitch_mma_m16n8k16_f16(acc")):
        out = os.path.join(work, f"stage_gemms_{precision}")
        sources = compiled_sources(args, check, f"stage_gemms {precision}", path, out,
                                   "--precision", precision, "--device", device)
        if sources is None:
            continue
        kernels = os.path.join(out, "kernels")
        check(f"stage_gemms {precision}: the four gate MatMuls a warp per tensor-core piece",
              sources.count("a warp per 16 x 8 piece") == 4 and instruction in sources,
              sources[:4000])
        mma_dirs.append(kernels)
        proc = emulate(args, out)
        check(f"stage_gemms {precision}: emulated kernels match within {GATES[precision]:g}",
              proc.returncode == 0 and "outputs match the reference" in proc.stdout,
              proc.stdout + proc.stderr)


def elementwise_model(work, name, nodes, scalars):
    """WORK/NAME.onnx: `nodes` from x to y (float32 [64, 64]) with `scalars` (name ->
    value) as float32 initializers; its path."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])],
        [numpy_helper.from_array(np.array(v, np.float32), k) for k, v in scalars.items()])
    path = os.path.join(work, f"{name}.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def float16_overflow(args, work, check):
    """y = (x * 3000) * 30 + 1: the product reaches 9e4 on the calibration inputs, past
    float16's 65504. fp16 keeps it (and the scaled x, 3000 < 65504 / 4, is converted)
    float32 by the range rule, names it in report.json, and the output is right; bf16,
    with float32's range, converts both."""
    from onnx import helper
    path = elementwise_model(work, "float16_overflow", [
        helper.make_node("Mul", ["x", "a"], ["scaled"], name="scale"),
        helper.make_node("Mul", ["scaled", "b"], ["big"], name="overflow"),
        helper.make_node("Add", ["big", "one"], ["y"], name="shift")],
        {"a": 3000, "b": 30, "one": 1})
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
    user_inputs(args, work, check, path)


def user_inputs(args, work, check, path):
    """--inputs: the calibration and the check run on the user's samples. On x in [-1, 1)
    the scaled x (max 3000) is converted under fp16; a second sample with |x| up to 10
    makes it 30000, past 65504 / 4, so with both samples it is kept float32 and the
    report names both files. A sample of the wrong shape exits 2 naming the input, and
    --inputs without --precision exits 2."""
    import numpy as np
    rng = np.random.default_rng(7)
    small = os.path.join(work, "x_small.npz")
    large = os.path.join(work, "x_large.npz")
    wrong = os.path.join(work, "x_wrong.npz")
    np.savez(small, x=rng.uniform(-1, 1, (64, 64)).astype(np.float32))
    np.savez(large, x=rng.uniform(-10, 10, (64, 64)).astype(np.float32))
    np.savez(wrong, x=np.zeros((64, 32), np.float32))
    out = os.path.join(work, "inputs_fp16")
    proc = stitchopt(args, path, "-o", out, "--precision", "fp16", "-q", "--inputs", small,
                     "--inputs", large, "--max-rel-error", "1")
    section = {}
    if proc.returncode == 0:
        with open(os.path.join(out, "report.json")) as f:
            section = json.load(f)["precision"]
    kept = {k["values"]: k["why"] for k in section.get("kept_float32", [])}
    check("--inputs: both samples calibrate (the scaled x kept for range) and are named",
          proc.returncode == 0 and "scaled" in kept and "max |x| = 2.9" in kept["scaled"]
          and section["inputs"] == f"--inputs (2 samples): {small}, {large}"
          and section["measured"], proc.stderr + json.dumps(section, indent=1))
    proc = stitchopt(args, path, "-o", out + "_wrong", "--precision", "bf16", "-q", "--inputs",
                     wrong)
    check("--inputs of the wrong shape: exit 2 naming the input and both shapes",
          proc.returncode == 2 and f'{wrong}: input "x" is float32[64,32]; the model takes '
          "float32[64,64]" in proc.stderr, f"exit {proc.returncode}: {proc.stderr}")
    proc = stitchopt(args, path, "-o", out + "_fp32", "-q", "--inputs", small)
    check("--inputs without --precision: exit 2", proc.returncode == 2 and
          "--precision fp32 (the default) measures nothing" in proc.stderr, proc.stderr)


def reduced_io(args, work, check):
    """--io-precision reduced on mlp (fp16) and gpt2_block (bf16): model.fused.onnx's
    float32 inputs and outputs take the reduced type (gpt2_block's int64 ids and mask
    keep theirs), the error stays within the gate, the emulated kernels match, and no
    more kernels run than with the types kept (the edge Casts fuse away or vanish);
    with --precision tf32 it exits 2."""
    import onnx
    reduced_type = {"fp16": onnx.TensorProto.FLOAT16, "bf16": onnx.TensorProto.BFLOAT16}
    for name, precision in (("mlp", "fp16"), ("gpt2_block", "bf16")):
        model = os.path.join(args.models, f"{name}.onnx")
        out = os.path.join(work, f"{name}_{precision}_io")
        proc = stitchopt(args, model, "-o", out, "--precision", precision, "--io-precision",
                         "reduced", "-q")
        check(f"{name} {precision} --io-precision reduced: compiles", proc.returncode == 0,
              proc.stderr)
        if proc.returncode != 0:
            continue
        fused = onnx.load(os.path.join(out, "model.fused.onnx"))
        original = onnx.load(model)
        types = [v.type.tensor_type.elem_type for v in list(fused.graph.input) +
                 list(fused.graph.output)]
        wanted = [reduced_type[precision] if v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
                  else v.type.tensor_type.elem_type
                  for v in list(original.graph.input) + list(original.graph.output)
                  if v.name not in {i.name for i in original.graph.initializer}]
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        keep_out = os.path.join(work, f"{name}_{precision}")
        kept_kernels = None
        if os.path.exists(os.path.join(keep_out, "report.json")):
            with open(os.path.join(keep_out, "report.json")) as f:
                kept_kernels = json.load(f)["kernels"]["fused"]
        section = report["precision"]
        check(f"{name} {precision} --io-precision reduced: interface {types}, error within "
              f"the gate, {report['kernels']['fused']} kernels (types kept: {kept_kernels})",
              types == wanted and section["passed"] and "--io-precision reduced" in
              section["products"] and (kept_kernels is None or
                                       report["kernels"]["fused"] <= kept_kernels),
              f"wanted {wanted}; " + json.dumps(section, indent=1)[:2000])
        proc = emulate(args, out)
        text = proc.stdout + proc.stderr
        check(f"{name} {precision} --io-precision reduced: emulated kernels match",
              proc.returncode == 0 and "outputs match the reference" in text, text[-3000:])
    proc = stitchopt(args, os.path.join(args.models, "mlp.onnx"), "-o",
                     os.path.join(work, "io_tf32"), "--precision", "tf32", "--io-precision",
                     "reduced", "-q")
    check("--io-precision reduced with tf32: exit 2", proc.returncode == 2 and
          "give --precision bf16 or fp16" in proc.stderr, proc.stderr)


def float16_underflow(args, work, check):
    """y = x * 1e-6 + x: the product's largest value, 1e-6, is below float16's normal
    numbers (6.1e-5): fp16 keeps it float32 by the underflow rule, names it, and the
    output is right; bf16 converts it."""
    from onnx import helper
    path = elementwise_model(work, "float16_underflow", [
        helper.make_node("Mul", ["x", "a"], ["tiny"], name="shrink"),
        helper.make_node("Relu", ["tiny"], ["kept"], name="relu"),
        helper.make_node("Mul", ["kept", "b"], ["y"], name="grow")],
        {"a": 1e-6, "b": 1e6})
    for precision in ("fp16", "bf16"):
        out = os.path.join(work, f"underflow_{precision}")
        proc = stitchopt(args, path, "-o", out, "--precision", precision, "-q")
        section = {}
        if proc.returncode == 0:
            with open(os.path.join(out, "report.json")) as f:
                section = json.load(f)["precision"]
        kept = {k["values"]: k["why"] for k in section.get("kept_float32", [])}
        underflow = "tiny" in kept and "flush to zero" in kept["tiny"]
        check(f"float16_underflow {precision}: " +
              ("the tiny values kept float32 and reported" if precision == "fp16"
               else "nothing kept for range"),
              proc.returncode == 0 and section["passed"] and
              underflow == (precision == "fp16"), proc.stderr + json.dumps(section, indent=1))


def nvcc_dirs(mma_dirs):
    """The kernel directories nvcc compiles: the odd shapes' four, the stage GEMMs' tf32
    and bf16 ones, and the first model's."""
    picked = ("odd_gemm", "stage_gemms_tf32", "stage_gemms_bf16")
    return [d for d in mma_dirs if any(name in d for name in picked)] + mma_dirs[:1]


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
    stage_gemms(args, work, check, mma_dirs)
    float16_overflow(args, work, check)
    float16_underflow(args, work, check)
    reduced_io(args, work, check)
    fp32 = os.path.join(work, "mlp_fp32")
    proc = stitchopt(args, os.path.join(args.models, "mlp.onnx"), "-o", fp32, "-q")
    with open(os.path.join(fp32, "model.fused.onnx"), "rb") as f:
        check("fp32 (the default) writes no stitchopt.precision metadata",
              proc.returncode == 0 and b"stitchopt.precision" not in f.read())
    if args.nvcc and mma_dirs:
        # One kernel directory per precision (the odd shapes' four, the stage GEMMs' tf32 and
        # bf16 ones, and a model's).
        compile_kernel_dirs(nvcc_dirs(mma_dirs), args.nvrtc_check, failures)
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

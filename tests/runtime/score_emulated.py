"""End-to-end test of `stitchopt --score emulated` (driver/candidate_timer.h,
fusion/planner.h's timing rounds, docs/cost-model.md "Scoring by the emulated
profile") on a small attention block written here with onnx.helper:
  scores = MatMul(q, Transpose(k)) * scale + mask; p = Softmax(scores); o = MatMul(p, v),
  then a Transpose and a residual Add, at batch x heads = 8, 64 tokens, head size 32.

Checks:
  - compile exits 0; report.json's "scoring" says "emulated" with rounds and timed
    candidates; the probe outputs are under OUT/score/N/ and the directory stays an
    earlier stitchopt output (recompiling into it works);
  - every timed group saves time by its own figures (fused < unfused); every rejected
    candidate does not (fused >= unfused) and the nodes it held that stayed alone say
    so in their reason; no group with a GEMM inside is planned untimed;
  - the rewritten model still computes the original's outputs (ONNX Runtime, both);
  - `stitchopt profile --emulate` estimates the emulated-scored plan no slower than the
    analytic plan of the same model (the emulated score only drops fusions it finds
    slower, and times the alternatives it keeps).
Exit 0 when every check passes; one line per failure otherwise.
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_harness import Harness, venv_nvdisasm  # noqa: E402

BH, T, D = 8, 64, 32


def attention_model(path):
    rng = np.random.default_rng(7)
    mask = (rng.random((1, T, T)) < 0.1).astype(np.float32) * -1e4
    nodes = [
        helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1], name="k_t"),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="qk"),
        helper.make_node("Mul", ["s", "scale"], ["ss"], name="scale_mul"),
        helper.make_node("Add", ["ss", "mask"], ["sm"], name="mask_add"),
        helper.make_node("Softmax", ["sm"], ["p"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["p", "v"], ["o"], name="pv"),
        helper.make_node("Transpose", ["o"], ["ot"], perm=[1, 0, 2], name="o_t"),
        helper.make_node("Add", ["ot", "r"], ["y"], name="residual"),
    ]
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [BH, T, D]),
         helper.make_tensor_value_info("k", TensorProto.FLOAT, [BH, T, D]),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [BH, T, D]),
         helper.make_tensor_value_info("r", TensorProto.FLOAT, [T, BH, D])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [T, BH, D])],
        [helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / np.sqrt(D)]),
         onnx.numpy_helper.from_array(mask, "mask")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def run_onnx(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    args = parser.parse_args()
    harness = Harness(args.stitchopt)
    failures, stitchopt, check = harness.failures, harness.stitchopt, harness.check
    nvdisasm = venv_nvdisasm()
    disassembler = ["--nvdisasm", nvdisasm] if nvdisasm else []

    with tempfile.TemporaryDirectory() as work:
        model = os.path.join(work, "attention.onnx")
        attention_model(model)
        emulated = os.path.join(work, "emulated")
        analytic = os.path.join(work, "analytic")
        stitchopt(model, "-o", emulated, "-q", "--score", "emulated", *disassembler)
        stitchopt(model, "-o", analytic, "-q")
        if failures:
            print("\n".join(failures))
            return 1
        with open(os.path.join(emulated, "report.json")) as f:
            report = json.load(f)
        scoring = report["scoring"]
        check(scoring["method"] == "emulated", f"scoring.method is {scoring['method']}")
        check(scoring["rounds"] >= 1 and scoring["timed_candidates"] >= 1,
              f"nothing was timed: {scoring}")
        check(os.path.isdir(os.path.join(emulated, "score", "0", "kernels")),
              "no probe output under OUT/score/0/kernels")
        for group in report["groups"]:
            timing = group["timing"]
            names = [n["name"] for n in group["nodes"]]
            if group["category"] == "gemm":
                check(timing is not None, f"GEMM group {names} was planned untimed")
            if timing is not None:
                check(timing["method"] == "emulated" and timing["fused_us"] > 0,
                      f"group {names}: timing {timing}")
                check(timing["fused_us"] < timing["unfused_us"],
                      f"group {names} is planned but estimated slower fused: {timing}")
                check(abs(group["score_us"] - timing["saved_us"]) < 1e-6,
                      f"group {names}: score {group['score_us']} is not the time saved {timing}")
        grouped = {n["name"] for g in report["groups"] for n in g["nodes"]}
        reasons = {u["name"]: u["reason"] for u in report["unfused"]}
        for rejected in scoring["rejected"]:
            check(rejected["fused_us"] >= rejected["unfused_us"],
                  f"rejected candidate {rejected['nodes']} saves time: {rejected}")
            alone = [n for n in rejected["nodes"] if n not in grouped and n in reasons]
            check(any("estimated slower fused" in reasons[n] for n in alone) or not alone,
                  f"nodes of rejected {rejected['nodes']} do not say why: "
                  f"{[reasons[n] for n in alone]}")
        print(f"emulated scoring: {scoring['rounds']} rounds, {scoring['timed_candidates']} "
              f"timed, {len(scoring['rejected'])} rejected, {scoring['untimable']} "
              f"untimable; groups: " +
              "; ".join(f"{g['category']}:{(g['codegen'] or {}).get('composition')}"
                        f"[{len(g['nodes'])}]" for g in report["groups"]))

        # The rewritten model computes what the original does.
        rng = np.random.default_rng(0)
        feeds = {name: rng.standard_normal(shape).astype(np.float32)
                 for name, shape in [("q", (BH, T, D)), ("k", (BH, T, D)), ("v", (BH, T, D)),
                                     ("r", (T, BH, D))]}
        expected = run_onnx(model, feeds)[0]
        got = run_onnx(os.path.join(emulated, "model.fused.onnx"), feeds)[0]
        check(np.allclose(expected, got, rtol=1e-4, atol=1e-5),
              f"model.fused.onnx differs: max |diff| {np.max(np.abs(expected - got))}")

        # The emulated plan is no slower than the analytic one, by the profile.
        totals = {}
        for name, out in [("emulated", emulated), ("analytic", analytic)]:
            stitchopt("profile", out, "--emulate", *disassembler)
            path = os.path.join(out, "profile.json")
            if os.path.exists(path):
                with open(path) as f:
                    totals[name] = json.load(f)["total_estimated_us"]
        if len(totals) == 2:
            print(f"profile --emulate: emulated-scored plan {totals['emulated']:.2f} us, "
                  f"analytic plan {totals['analytic']:.2f} us")
            check(totals["emulated"] <= totals["analytic"] * 1.001,
                  f"the emulated-scored plan is estimated slower: {totals}")
        # Recompiling into the output (score/ included) is allowed.
        stitchopt(model, "-o", emulated, "-q")

    return harness.finish("score_emulated")


if __name__ == "__main__":
    sys.exit(main())

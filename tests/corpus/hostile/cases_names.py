"""Hostile names (issue 12 #1, #9): node and value names that would be code, comment
ends, line continuations, trigraphs, NUL, terminal escapes or bytes that are not
UTF-8. The generated sources must hold none of them raw and must compile; the JSON,
DOT and the run must work."""
import json
import os
import shutil
import subprocess

import numpy as np

from onnx import helper

from case import Case, Step
from models import F, constant, make, vi

# A placeholder of the same length stands in for the non-UTF-8 name while protobuf
# serializes the model (Python refuses such strings); the bytes are swapped after.
NOT_UTF8 = b"n6\xff\xfe\xc0\xaf"
PLACEHOLDER = b"n6_ABC"
assert len(NOT_UTF8) == len(PLACEHOLDER)

NAMES = [
    "n1\n#error injected by a name",
    "n2*/ int injected2; /*",
    "n3 ends in a backslash\\",
    "n4??/",
    "n5\x00after a NUL",
    PLACEHOLDER.decode(),
    "n7\x1b]0;title\x07",
    "n8\"quoted\"",
]
RAW_NAMES = [name.encode() for name in NAMES[:5]] + [NOT_UTF8] + [name.encode() for name in NAMES[6:]]


def hostile_model():
    v = [f"{name} value" for name in NAMES]
    nodes = [
        helper.make_node("Add", ["x", "bias"], [v[0]], name=NAMES[0]),
        helper.make_node("Relu", [v[0]], [v[1]], name=NAMES[1]),
        helper.make_node("ReduceMax", [v[1]], [v[2]], name=NAMES[2], axes=[1], keepdims=1),
        helper.make_node("Sub", [v[1], v[2]], [v[3]], name=NAMES[3]),
        helper.make_node("Exp", [v[3]], [v[4]], name=NAMES[4]),
        helper.make_node("ReduceSum", [v[4], "axes"], [v[5]], name=NAMES[5], keepdims=1),
        helper.make_node("Div", [v[4], v[5]], [v[6]], name=NAMES[6]),
        helper.make_node("Mul", [v[6], v[6]], ["y\n#error output"], name=NAMES[7]),
    ]
    return make(nodes, [vi("x", F, [64, 96])], [vi("y\n#error output", F, [64, 96])],
                [constant("bias", np.linspace(-1, 1, 96, dtype=np.float32)),
                 constant("axes", np.array([1], dtype=np.int64))])


def write_hostile(model_dir):
    data = hostile_model().SerializeToString()
    assert PLACEHOLDER in data
    path = model_dir / "model.onnx"
    path.write_bytes(data.replace(PLACEHOLDER, NOT_UTF8))
    return path


def sources_are_inert(work, _):
    kernels = work / "out" / "kernels"
    sources = sorted(kernels.glob("*.cu")) + [kernels / "kernels.h"]
    if len(sources) < 2:
        return f"expected generated kernels, found {[p.name for p in sources]}"
    for path in sources:
        text = path.read_bytes()
        stray = [b for b in set(text) if b != 0x0A and not 0x20 <= b <= 0x7E]
        if stray:
            return f"{path.name} holds bytes that are not printable ASCII: {sorted(stray)}"
        for raw in RAW_NAMES:
            # Names of printable ASCII may show unchanged; the lines below catch
            # the ones that would end a comment or a line.
            if any(not 0x20 <= b <= 0x7E for b in raw) and raw in text:
                return f"{path.name} holds the raw name {raw!r}"
        for line in text.split(b"\n"):
            if line.lstrip().startswith(b"#error") or line.endswith(b"\\"):
                return f"{path.name}: a name became a line of its own: {line!r}"
        if b"*/" in text or b"??" in text:
            return f"{path.name} holds */ or ??"
    nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                    if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
    if nvcc:
        for path in sorted(kernels.glob("*.cu")):
            result = subprocess.run([nvcc, "-std=c++17", "-arch=sm_90", "-c", str(path), "-o",
                                     os.devnull, "-Werror", "all-warnings", f"-I{kernels}"],
                                    capture_output=True, text=True, timeout=300)
            if result.returncode != 0:
                return f"nvcc rejects {path.name}: {result.stderr[-600:]}"
    return None


def outputs_are_well_formed(work, _):
    out = work / "out"
    for name in ("report.json", "kernels/kernels.json"):
        try:
            json.loads((out / name).read_bytes().decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as error:
            return f"{name} is not valid UTF-8 JSON: {error}"
    report = json.loads((out / "report.json").read_text())
    names = {group_node["name"] for group in report["groups"] for group_node in group["nodes"]}
    names |= {node["name"] for node in report["unfused"]}
    if "n6\\xff\\xfe\\xc0\\xaf" not in names:
        return f"the non-UTF-8 name is not written as \\xNN in report.json: {sorted(names)}"
    if shutil.which("dot") and not (out / "plan.svg").exists():
        return "Graphviz did not draw plan.svg from plan.dot"
    return None


CASES = [
    Case("hostile_names", "issue 12 #1 and #9: names become code in .cu comments; JSON "
         "exception on names that are not UTF-8", write_hostile,
         [Step(["{model}", "-o", "{out}"], check=sources_are_inert),
          Step(["run", "{out}", "--emulate"], message=("all 1 outputs match",),
               check=outputs_are_well_formed)]),
]

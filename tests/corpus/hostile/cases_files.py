"""Hostile output directories and external data (issue 12 #2, #3, #13): stitchopt
never deletes what it did not write and reads nothing outside the model's directory."""
import os
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from case import Case, Step
from models import F, make, relu_model, vi, writer

REFUSED = "is not empty and is not an earlier stitchopt output"


def external_model(location, size=6):
    """y = x + w with w (f32[size]) in external file `location`."""
    w = TensorProto()
    w.name, w.data_type = "w", TensorProto.FLOAT
    w.dims.append(size)
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", str(4 * size))):
        entry = w.external_data.add()
        entry.key, entry.value = key, value
    return make([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                [vi("x", F, [size])], [vi("y", F, [size])], [w])


def with_external(location, prepare):
    """A Case.write: the model with external data at `location`, after prepare(model_dir)."""
    def write(model_dir: Path) -> Path:
        prepare(model_dir)
        path = model_dir / "model.onnx"
        path.write_bytes(external_model(location).SerializeToString())
        return path
    return write


def link_outside(model_dir):
    # outside/sub/data.bin holds 256 bytes: enough for the 24 the model reads.
    os.symlink("../outside/sub", model_dir / "etc")


def fifo(model_dir):
    os.mkfifo(model_dir / "weights.bin")


def link_inside(model_dir):
    (model_dir / "store").mkdir()
    (model_dir / "store" / "weights.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    os.symlink("store/weights.bin", model_dir / "weights.bin")


def foreign_output(work):
    (work / "results").mkdir()
    (work / "results" / "notes.txt").write_text("not stitchopt's\n")


def output_exists(work, _):
    return None if (work / "out" / "report.json").exists() else "no report.json in OUT"


relu = writer(relu_model)

CASES = [
    Case("output_is_working_directory", "issue 12 #2: -o . emptied the working directory",
         relu, [Step(["{model}", "-o", "."], exit=2, message=("is the working directory",)),
                Step(["{model}", "-o", ".", "--force"], exit=2,
                     message=("is the working directory",))]),
    Case("output_is_model_directory", "issue 12 #2: -o the model's folder deleted the model",
         relu, [Step(["{model}", "-o", "{model_dir}", "--force"], exit=2,
                     message=("holds ",)),
                Step(["{model}", "-o", "{model_dir}"], exit=2, message=("holds ",))]),
    Case("output_is_foreign_directory", "issue 12 #2: -o DIR removed whatever DIR held",
         relu, [Step(["{model}", "-o", "outside"], exit=2, message=(REFUSED, "--force")),
                Step(["{model}", "-o", "outside", "--min-compression", "100"], exit=2,
                     message=(REFUSED,))]),
    Case("output_is_home", "issue 12 #2: -o a home directory wiped it",
         relu, [Step(["{model}", "-o", "home", "--force"], exit=2,
                     message=("is your home directory",))]),
    Case("output_force_replaces_foreign", "issue 12 #2: --force replaces a foreign directory",
         relu, [Step(["{model}", "-o", "results", "--force"], before=foreign_output,
                     may_change=("results",),
                     check=lambda work, _: None if (work / "results" / "report.json").exists()
                     and not (work / "results" / "notes.txt").exists() else "not replaced")]),
    Case("output_earlier_output_replaced", "issue 12 #2: an earlier output is still replaced",
         relu, [Step(["{model}", "-o", "{out}"]), Step(["run", "{out}", "--emulate"]),
                Step(["{model}", "-o", "{out}"], check=output_exists)]),
    Case("external_data_symlink_escape",
         "issue 12 #3: a symlink in the model's folder embedded files from elsewhere",
         with_external("etc/data.bin", link_outside),
         [Step(["{model}", "-o", "{out}"], exit=2,
               message=('"etc/data.bin", which resolves (through a symbolic link) to a file '
                        "outside the model's directory",))]),
    Case("external_data_fifo", "issue 12 #3: external data that is a FIFO blocks the read",
         with_external("weights.bin", fifo),
         [Step(["{model}", "-o", "{out}"], exit=2, message=("which is not a regular file",))],
         timeout=20),
    Case("external_data_symlink_inside", "issue 12 #3: a link that stays inside is fine",
         with_external("weights.bin", link_inside),
         [Step(["{model}", "-o", "{out}"]), Step(["run", "{out}", "--emulate"])]),
]

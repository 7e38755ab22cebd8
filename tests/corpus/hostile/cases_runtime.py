"""Hostile cases for `stitchopt run`: outputs that must run, and runs that must not
pass vacuously or read outside OUT (issue 12 #6, #8, #13)."""
import json
import shutil

from onnx import helper

from case import Case, Step
from models import F, I64, make, relu_model, vi, writer


def mul_self():
    return make([helper.make_node("Mul", ["x", "x"], ["y"], name="square")],
                [vi("x", F, [4, 8])], [vi("y", F, [4, 8])])


def softmax_model():
    return make([helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1),
                 helper.make_node("Neg", ["y"], ["z"], name="neg")],
                [vi("x", F, [4, 8])], [vi("z", F, [4, 8])])


def gather_out_of_range():
    # Constant indices past the axis (and past it from the end): the fused kernel must
    # not read outside x; the reference refuses the indices.
    indices = helper.make_tensor("indices", I64, [2, 3], [0, 7, -51, 2, 1000000, 1])
    return make([helper.make_node("Neg", ["x"], ["n"], name="neg"),
                 helper.make_node("GatherElements", ["n", "indices"], ["g"], name="gather",
                                  axis=1),
                 helper.make_node("Exp", ["g"], ["y"], name="exp")],
                [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], initializers=[indices])


def edit_kernels_json(edit):
    def before(work):
        path = work / "out" / "kernels" / "kernels.json"
        document = json.loads(path.read_text())
        edit(document)
        path.write_text(json.dumps(document, indent=2))
    return before


def delete_kernels_json(work):
    (work / "out" / "kernels" / "kernels.json").unlink()


def swap_model(work):
    # Another compile's model.fused.onnx in place of this one's.
    shutil.copy(work / "other" / "model.fused.onnx", work / "out" / "model.fused.onnx")


def set_file(file):
    def edit(document):
        document["kernels"][0]["file"] = file
    return edit


def rename_kernel(document):
    document["kernels"][0]["name"] = "stitch_k0; rm -rf ~"


def add_unused_kernel(document):
    extra = dict(document["kernels"][0])
    extra["name"] = "stitch_unused"
    document["kernels"].append(extra)


def no_secret_echoed(work, result):
    secret = (work / "outside" / "notes.txt").read_text().strip()
    return f"the message echoes {secret!r}" if secret in result.stderr else None


COMPILE = Step(["{model}", "-o", "{out}"])
NOT_OURS = "which is not a .cu file of this directory"

CASES = [
    Case("gather_indices_out_of_range",
         "long fuzz run: run --emulate died by SIGSEGV on GatherElements indices past the axis",
         writer(gather_out_of_range),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2,
                        message=("kernels: 1 of the 1 in kernels.json run",
                                 "is out of range for axis 1"))]),
    Case("unfused_reads_one_tensor_twice", "issue 12 #6: Mul(x, x) compiles but never runs",
         writer(mul_self),
         [COMPILE, Step(["run", "{out}", "--emulate"],
                        message=("kernels: 1 of the 1 in kernels.json run", "all 1 outputs match"))]),
    Case("run_without_kernels_json", "issue 12 #8: run --emulate passed with kernels.json deleted",
         writer(softmax_model),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2, before=delete_kernels_json,
                        message=("kernels.json is missing",))]),
    Case("run_with_swapped_model", "issue 12 #8: run --emulate passed with model.fused.onnx swapped",
         writer(softmax_model),
         [COMPILE, Step(["{model}", "-o", "other", "--no-fusion"], may_change=("other",)),
          Step(["run", "{out}", "--emulate"], exit=2, before=swap_model,
               message=("was written for another model",))]),
    Case("kernels_json_absolute_file", "issue 12 #13: a kernels.json file of /etc/shadow was read",
         writer(softmax_model),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2,
                        before=edit_kernels_json(set_file("/etc/shadow")), message=(NOT_OURS,))]),
    Case("kernels_json_escaping_file", "issue 12 #13: a kernels.json file of ../../x was read and echoed",
         writer(softmax_model),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2,
                        before=edit_kernels_json(set_file("../../outside/notes.txt")),
                        message=(NOT_OURS,), check=no_secret_echoed)]),
    Case("kernels_json_bad_kernel_name", "issue 12 #13: kernel names become symbols and paths",
         writer(softmax_model),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2,
                        before=edit_kernels_json(rename_kernel), message=("is not an identifier",))]),
    Case("kernels_json_unused_kernel", "issue 12 #8: a kernel kernels.json lists must run",
         writer(softmax_model),
         [COMPILE, Step(["run", "{out}", "--emulate"], exit=2,
                        before=edit_kernels_json(add_unused_kernel),
                        message=("kernel stitch_unused is used by no node",))]),
    Case("run_cpu_says_kernels_do_not_run", "issue 12 #8: a run that checks no kernel says so",
         writer(relu_model),
         [COMPILE, Step(["run", "{out}", "--cpu"],
                        message=("kernels: 0 of the 1 in kernels.json run (the reference "
                                 "interpreter stands in for them)",))]),
]

"""End-to-end tests of `stitchopt run` on the user's data (cli/run_data.h, issue 38):

  - `run OUT --emulate --inputs feeds.npz --save-outputs out.npz`: the generated
    kernels on the user's arrays (numpy.savez and numpy.savez_compressed feeds, float
    and integer inputs), the saved outputs equal to ONNX Runtime's on the original
    model within 1e-5 (max |a - b| / max(|b|, 1));
  - `run OUT --emulate --test-data DIR`: ONNX test data sets as the model zoo ships
    them (named TensorProtos, and unnamed ones taken by position), a directory of
    test_data_set_* and a single set; an expected output off by one element fails
    (exit 3) naming the output and the element;
  - every bad feed is exit 2 with a message saying what is wrong: an unknown input
    name (with "did you mean"), a missing input, the wrong dtype or shape, a
    big-endian, Fortran-order or object array, a truncated or non-ZIP file, a member
    that is not an .npy, a test data set with a gap in its numbering or an expected
    output the model does not have; --inputs with --seed or --test-data, and
    --save-outputs with --test-data, are usage errors.
Exit 0 when every check passes; one line per failure otherwise.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_harness import Harness, input_shape_flags  # noqa: E402

# Float inputs (mlp, gpt2_block), integer ones with a float mask (bert).
MODELS = ["mlp", "gpt2_block", "bert"]


def input_shapes(entry):
    """name -> dims from the manifest's --input-shape flags."""
    shapes = {}
    for flag in entry["input_shape_flags"]:
        name, dims = flag.split("=")
        shapes[name] = [int(d) for d in dims.split(",")]
    return shapes


def feeds_for(model_path, shapes, seed):
    """Seeded arrays for every graph input that is no initializer."""
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    rng = np.random.default_rng(seed)
    feeds = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dims = shapes.get(value.name) or [d.dim_value for d in tensor.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.uniform(-1, 1, dims).astype(dtype)
        elif value.name == "attention_mask":
            feeds[value.name] = np.ones(dims, dtype=dtype)
        else:
            feeds[value.name] = rng.integers(0, 2, dims).astype(dtype)
    return feeds


def onnxruntime_outputs(model_path, feeds):
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, feeds)))


def relative_error(got, expected):
    got = np.asarray(got, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        return float("inf")
    if got.size == 0:
        return 0.0
    return float(np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1.0)))


def write_test_data_set(directory, feeds, outputs, named):
    os.makedirs(directory)
    for k, (name, array) in enumerate(feeds.items()):
        tensor = numpy_helper.from_array(array, name if named else "")
        with open(os.path.join(directory, f"input_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())
    for k, (name, array) in enumerate(outputs.items()):
        tensor = numpy_helper.from_array(array, name if named else "")
        with open(os.path.join(directory, f"output_{k}.pb"), "wb") as f:
            f.write(tensor.SerializeToString())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}
    h = Harness(args.stitchopt)

    with tempfile.TemporaryDirectory() as work:
        for index, name in enumerate(MODELS):
            entry = entries[name]
            model_path = os.path.join(args.models, entry["file"])
            flags = input_shape_flags(entry)
            out = os.path.join(work, name)
            h.stitchopt(model_path, "-o", out, "-q", *flags)
            feeds = feeds_for(model_path, input_shapes(entry), seed=index)
            expected = onnxruntime_outputs(model_path, feeds)

            # --inputs / --save-outputs, stored and deflated archives.
            feeds_path = os.path.join(work, f"{name}_feeds.npz")
            (np.savez_compressed if index % 2 else np.savez)(feeds_path, **feeds)
            saved = os.path.join(work, f"{name}_outputs.npz")
            text = h.stitchopt("run", out, "--emulate", "--inputs", feeds_path,
                               "--save-outputs", saved)
            h.check("all" in text and "match the reference interpreter" in text,
                    f"{name}: run --inputs did not check the reference:\n{text[-2000:]}")
            if os.path.exists(saved):
                with np.load(saved) as got:
                    for output, want in expected.items():
                        h.check(output in got.files, f"{name}: {saved} lacks output {output}")
                        if output in got.files:
                            error = relative_error(got[output], want)
                            h.check(error <= 1e-5, f"{name}: output {output} differs from "
                                                   f"ONNX Runtime by {error:.3g} (limit 1e-5)")
            else:
                h.check(False, f"{name}: --save-outputs wrote no {saved}")

            # --test-data: a directory of sets (named, then unnamed tensors).
            data = os.path.join(work, f"{name}_data")
            write_test_data_set(os.path.join(data, "test_data_set_0"), feeds, expected, named=True)
            second = feeds_for(model_path, input_shapes(entry), seed=100 + index)
            write_test_data_set(os.path.join(data, "test_data_set_1"), second,
                                onnxruntime_outputs(model_path, second), named=False)
            text = h.stitchopt("run", out, "--emulate", "--test-data", data)
            h.check("all outputs of 2 test data sets match" in text,
                    f"{name}: --test-data did not pass both sets:\n{text[-2000:]}")

        # One set given directly; then an expected output off by one element.
        name = "mlp"
        out = os.path.join(work, name)
        model_path = os.path.join(args.models, entries[name]["file"])
        single = os.path.join(work, f"{name}_data", "test_data_set_0")
        text = h.stitchopt("run", out, "--cpu", "--test-data", single)
        h.check("all outputs of 1 test data set match" in text,
                f"--test-data on one set:\n{text[-2000:]}")
        broken = os.path.join(work, "broken_set")
        shutil.copytree(single, broken)
        output_file = os.path.join(broken, "output_0.pb")
        tensor = onnx.load_tensor(output_file)
        array = numpy_helper.to_array(tensor).copy()
        array.flat[3] += 1.0
        onnx.save_tensor(numpy_helper.from_array(array, tensor.name), output_file)
        text = h.stitchopt("run", out, "--emulate", "--test-data", broken, expect=3)
        h.check("MISMATCH" in text and "element 3 is" in text and "1 of" in text,
                f"a wrong expected output was not reported by element:\n{text[-2000:]}")

        bad_inputs(h, work, out, model_path)
        bad_test_data(h, work, out, single)
    return h.finish("runtime.run_data")


def bad_inputs(h, work, out, model_path):
    """Each bad --inputs file is exit 2 with its message."""
    feeds = feeds_for(model_path, {}, seed=7)
    (name, array), = feeds.items()  # mlp has one input

    def expect_error(label, arrays, message, writer=np.savez, raw=None):
        path = os.path.join(work, f"bad_{label}.npz")
        if raw is not None:
            with open(path, "wb") as f:
                f.write(raw)
        else:
            writer(path, **arrays)
        text = h.stitchopt("run", out, "--cpu", "--inputs", path, expect=2)
        h.check(message in text, f"--inputs {label}: expected '{message}' in:\n{text[-1500:]}")

    misspelt = name[:-1] + ("x" if name[-1] != "x" else "y")
    expect_error("unknown", {misspelt: array}, f'did you mean "{name}"?')
    expect_error("missing", {}, f'no array for the model\'s input "{name}"')
    expect_error("extra", {name: array, "other": array}, 'the model has no input "other"')
    expect_error("dtype", {name: array.astype(np.float64)}, "float64")
    expect_error("shape", {name: array.reshape(-1)}, "the model takes")
    expect_error("big_endian", {name: array.astype(">f4")}, "big-endian")
    expect_error("fortran", {name: np.asfortranarray(array)} if array.ndim > 1 else
                 {name: np.asfortranarray(np.stack([array, array]))}, "Fortran order")
    expect_error("object", {name: np.array([object()], dtype=object)}, "element type")
    with open(os.path.join(work, "bad_dtype.npz"), "rb") as f:
        whole = f.read()
    expect_error("truncated", None, "is not an .npz numpy can read", raw=whole[: len(whole) // 2])
    expect_error("not_zip", None, "not a ZIP file", raw=b"x" * 100)
    # A member that is no .npy: a ZIP written by hand.
    import zipfile
    path = os.path.join(work, "bad_member.npz")
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "hello")
    text = h.stitchopt("run", out, "--cpu", "--inputs", path, expect=2)
    h.check("is not an .npy array" in text, f"--inputs with a text member:\n{text[-1500:]}")

    good = os.path.join(work, "good.npz")
    np.savez(good, **feeds)
    text = h.stitchopt("run", out, "--cpu", "--inputs", good, "--seed", "3", expect=2)
    h.check("excludes" in text, f"--inputs with --seed is no usage error:\n{text[-800:]}")


def bad_test_data(h, work, out, single):
    """A gap in the numbering, an output the model lacks, no outputs: exit 2."""
    gap = os.path.join(work, "gap_set")
    shutil.copytree(single, gap)
    os.rename(os.path.join(gap, "input_0.pb"), os.path.join(gap, "input_1.pb"))
    text = h.stitchopt("run", out, "--cpu", "--test-data", gap, expect=2)
    h.check("numbered from 0 without gaps" in text, f"a numbering gap:\n{text[-1500:]}")

    stranger = os.path.join(work, "stranger_set")
    shutil.copytree(single, stranger)
    tensor = onnx.load_tensor(os.path.join(stranger, "output_0.pb"))
    tensor.name = "not_an_output"
    onnx.save_tensor(tensor, os.path.join(stranger, "output_0.pb"))
    text = h.stitchopt("run", out, "--cpu", "--test-data", stranger, expect=2)
    h.check('"not_an_output", which the model does not have' in text,
            f"an unknown expected output:\n{text[-1500:]}")

    no_outputs = os.path.join(work, "no_outputs_set")
    shutil.copytree(single, no_outputs)
    for file in os.listdir(no_outputs):
        if file.startswith("output_"):
            os.remove(os.path.join(no_outputs, file))
    text = h.stitchopt("run", out, "--cpu", "--test-data", no_outputs, expect=2)
    h.check("nothing to check the run against" in text, f"a set without outputs:\n{text[-1500:]}")

    text = h.stitchopt("run", out, "--cpu", "--test-data", single, "--save-outputs",
                       os.path.join(work, "x.npz"), expect=2)
    h.check("excludes" in text, f"--save-outputs with --test-data is no usage error:\n{text[-800:]}")
    empty = os.path.join(work, "empty_dir")
    os.makedirs(empty)
    text = h.stitchopt("run", out, "--cpu", "--test-data", empty, expect=2)
    h.check("test_data_set_* directories" in text, f"an empty --test-data:\n{text[-800:]}")


if __name__ == "__main__":
    sys.exit(main())

"""The Python package end to end (issue 38; runtime_stub/python/): with the package
built into --package (BUILD/python, the build tree's layout of it):
  - every bundled model, compiled, runs through stitchopt.InferenceSession on the
    emulated kernels and matches ONNX Runtime on the original model (optimizations
    off, ORT_DISABLE_ALL) within 1e-5
    (max |a-b| / max |b|; integer and bool outputs exactly), and get_inputs() /
    get_outputs() name and type what ONNX Runtime's do;
  - ONNX Runtime's ways in: a model path OUT/model.fused.onnx, providers lists;
  - any DLPack producer is taken (a wrapper that only has __dlpack__), read-only
    arrays too; run_with_outputs writes into the caller's arrays;
  - every bad input is a ValueError or RuntimeError naming what is wrong, and the
    session still gives the same outputs afterwards: unknown, missing and duplicate
    names, wrong dtype and shape, a non-contiguous or misaligned array, a CUDA tensor
    on a CPU session (a DLPack capsule of device type CUDA), output arrays of the wrong
    dtype or shape, a closed session, a bad backend, the GPU asked for without one, an
    output directory written by another stitchopt version, whose model was changed or
    truncated, or whose kernel source was edited;
  - 8 Python threads on one session: each result equals the one computed alone;
  - stitchopt.torch.Module under Debian's python3 with python3-torch (which
    scripts/setup.sh installs; its absence is a failure): positional and keyword inputs,
    a non-contiguous tensor, outputs equal to the session's;
  - `import stitchopt` in the test venv without --package finds the installed
    package (scripts/setup.sh installs it with pip) and runs a model.
Exit 0 when every check passes.
"""
import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
from cli_harness import Harness, input_shape_flags  # noqa: E402
from manifest_inputs import random_feeds  # noqa: E402


def relative_error(got, want):
    if want.dtype.kind in "biu":
        return 0.0 if np.array_equal(got, want) else float("inf")
    want64 = want.astype(np.float64)
    scale = max(float(np.max(np.abs(want64))) if want.size else 0.0, 1e-30)
    return float(np.max(np.abs(got.astype(np.float64) - want64))) / scale if want.size else 0.0


class CudaCapsuleTensor:
    """A DLPack producer claiming CUDA device 0 (host bytes behind it, never read):
    what a torch CUDA tensor looks like to a session on the CPU."""

    class DLTensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                    ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                    ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8),
                    ("lanes", ctypes.c_uint16), ("shape", ctypes.POINTER(ctypes.c_int64)),
                    ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]

    class Managed(ctypes.Structure):
        pass

    Managed._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                        ("deleter", ctypes.c_void_p)]

    def __init__(self, array):
        self.array = array  # keeps the bytes and the shape alive
        self.shape = (ctypes.c_int64 * array.ndim)(*array.shape)
        self.managed = self.Managed()
        t = self.managed.dl_tensor
        t.data = array.ctypes.data
        t.device_type, t.device_id, t.ndim = 2, 0, array.ndim
        t.code, t.bits, t.lanes = 2, 32, 1  # float32
        t.shape = self.shape
        t.strides = None
        t.byte_offset = 0
        self.managed.deleter = None

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None, **kwargs):
        new = ctypes.pythonapi.PyCapsule_New
        new.restype = ctypes.py_object
        new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self.managed), b"dltensor", None)


class DLPackOnly:
    """A producer with nothing but the DLPack protocol."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def check_bundled(h, stitchopt, ort, entries, models, work):
    """Every bundled model through InferenceSession against ONNX Runtime."""
    for entry in entries:
        out = os.path.join(work, entry["name"])
        h.stitchopt(os.path.join(models, entry["file"]), "-o", out, "-q",
                    *input_shape_flags(entry))
        if not os.path.isdir(out):
            continue
        feeds = random_feeds(entry)
        try:
            session = stitchopt.InferenceSession(out, backend="emulated")
            got = session.run(None, feeds)
        except (ValueError, RuntimeError) as error:
            h.failures.append(f"{entry['name']}: InferenceSession: {error}")
            continue
        # Unoptimized: the graph's own semantics (ONNX Runtime 1.20's optimizer has a
        # wrong Pad + AveragePool fusion, microsoft/onnxruntime#22177).
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        peer = ort.InferenceSession(os.path.join(models, entry["file"]), options,
                                    providers=["CPUExecutionProvider"])
        want = peer.run(None, feeds)
        h.check([(o.name, o.type) for o in session.get_outputs()] ==
                [(o.name, o.type) for o in peer.get_outputs()],
                f"{entry['name']}: outputs {session.get_outputs()} are not ONNX Runtime's "
                f"{[(o.name, o.type) for o in peer.get_outputs()]}")
        peer_inputs = {i.name: i.type for i in peer.get_inputs()}
        h.check({i.name: i.type for i in session.get_inputs()} ==
                {n: t for n, t in peer_inputs.items() if n in feeds},
                f"{entry['name']}: inputs {session.get_inputs()} are not ONNX Runtime's "
                f"{peer_inputs}")
        worst = 0.0
        for output, a, b in zip(session.get_outputs(), got, want):
            h.check(isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape,
                    f"{entry['name']}: output {output.name} is {type(a).__name__} "
                    f"{getattr(a, 'dtype', '?')}{getattr(a, 'shape', '?')}, ONNX Runtime's "
                    f"{b.dtype}{b.shape}")
            if isinstance(a, np.ndarray) and a.shape == b.shape:
                error = relative_error(a, b)
                worst = max(worst, error)
                h.check(error <= 1e-5, f"{entry['name']}: output {output.name} differs from "
                                       f"ONNX Runtime by {error:.3g}")
        print(f"{entry['name']}: {session.backend}; {len(got)} outputs, worst relative "
              f"difference from ONNX Runtime {worst:.2g}")


def expect(h, what, error_type, needle, call):
    """`call()` raises error_type with `needle` in its message."""
    try:
        call()
    except error_type as error:
        h.check(needle in str(error), f"{what}: {error_type.__name__} without {needle!r}: {error}")
        return
    except Exception as error:  # noqa: BLE001 - any other exception is the failure
        h.failures.append(f"{what}: {type(error).__name__} ({error}), not {error_type.__name__}")
        return
    h.failures.append(f"{what}: no {error_type.__name__}")


def check_bad_inputs(h, stitchopt, out, work):
    """Every bad input of the issue's list on a float model (mlp)."""
    session = stitchopt.InferenceSession(out, backend="emulated")
    info = session.get_inputs()[0]
    name = info.name
    x = np.random.default_rng(1).standard_normal(info.shape).astype(np.float32)
    first = session.run(None, {name: x})
    run = session.run
    expect(h, "unknown input", ValueError, 'no input "nope"', lambda: run(None, {"nope": x}))
    expect(h, "missing input", ValueError, "no array for the model's input", lambda: run(None, {}))
    expect(h, "wrong dtype", ValueError, "the model takes",
           lambda: run(None, {name: x.astype(np.float64)}))
    expect(h, "wrong shape", ValueError, "the model takes", lambda: run(None, {name: x[:1]}))
    expect(h, "non-contiguous", ValueError, "not C-contiguous",
           lambda: run(None, {name: np.asfortranarray(x)}))
    raw = np.zeros(x.nbytes + 1, np.uint8)
    shifted = np.frombuffer(raw, np.float32, count=x.size, offset=1).reshape(x.shape)
    expect(h, "misaligned", ValueError, "not aligned", lambda: run(None, {name: shifted}))
    expect(h, "CUDA tensor on a CPU session", ValueError,
           "is on CUDA device 0, but this session runs on CPU",
           lambda: run(None, {name: CudaCapsuleTensor(x)}))
    host_outputs = {o.name: np.empty(o.shape, np.float32) for o in session.get_outputs()}
    expect(h, "CUDA tensor on a CPU session (caller's outputs)", ValueError,
           "it is device memory, but this session runs on CPU",
           lambda: session.run_with_outputs({name: CudaCapsuleTensor(x)}, host_outputs))
    expect(h, "unknown output", ValueError, "no output", lambda: run(["nope"], {name: x}))
    expect(h, "input_feed not a dict", ValueError, "must be a dict", lambda: run(None, [x]))
    outputs = session.get_outputs()
    wrong = {o.name: np.empty(o.shape, np.int32) for o in outputs}
    expect(h, "output array of the wrong dtype", ValueError, "the output is ONNX dtype 1",
           lambda: session.run_with_outputs({name: x}, wrong))
    small = {o.name: np.empty([1], np.float32) for o in outputs}
    expect(h, "output array too small", ValueError, "of shape",
           lambda: session.run_with_outputs({name: x}, small))
    expect(h, "bad backend", ValueError, "is none of",
           lambda: stitchopt.InferenceSession(out, backend="tpu"))
    expect(h, "bad providers", ValueError, "stitchopt knows",
           lambda: stitchopt.InferenceSession(out, providers=["ROCMExecutionProvider"]))
    expect(h, "missing directory", ValueError, "no model.fused.onnx",
           lambda: stitchopt.InferenceSession(os.path.join(work, "absent")))
    if "CPU" in stitchopt.InferenceSession(out).backend:  # no GPU here
        expect(h, "GPU asked for without one", RuntimeError, "no usable GPU",
               lambda: stitchopt.InferenceSession(out, backend="gpu"))
    other_version = os.path.join(work, "other_version")
    shutil.copytree(out, other_version)
    kernels_json = os.path.join(other_version, "kernels", "kernels.json")
    with open(kernels_json) as f:
        document = json.load(f)
    document["schema"] = "stitchopt.kernels/1"
    with open(kernels_json, "w") as f:
        json.dump(document, f)
    expect(h, "another stitchopt version's output", ValueError, "another stitchopt version",
           lambda: stitchopt.InferenceSession(other_version, backend="emulated"))
    tampered = os.path.join(work, "tampered")
    shutil.copytree(out, tampered)
    import onnx
    from onnx import numpy_helper
    model = onnx.load(os.path.join(tampered, "model.fused.onnx"))
    weight = model.graph.initializer[0]
    weight.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(weight) + 1, weight.name))
    onnx.save(model, os.path.join(tampered, "model.fused.onnx"))
    expect(h, "changed model", ValueError, "was written for another model",
           lambda: stitchopt.InferenceSession(tampered, backend="emulated"))
    edited_kernel = os.path.join(work, "edited_kernel")
    shutil.copytree(out, edited_kernel)
    source = sorted(f for f in os.listdir(os.path.join(edited_kernel, "kernels"))
                    if f.endswith(".cu"))[0]
    with open(os.path.join(edited_kernel, "kernels", source), "a") as f:
        f.write("\nint injected;\n")
    expect(h, "edited kernel source", ValueError, "was edited after compilation",
           lambda: stitchopt.InferenceSession(edited_kernel, backend="emulated"))
    with open(os.path.join(tampered, "model.fused.onnx"), "ab") as f:
        f.write(b"\x00")
    expect(h, "truncated model", ValueError, "not a valid ONNX model",
           lambda: stitchopt.InferenceSession(tampered, backend="emulated"))
    # Still usable, with the same outputs.
    again = session.run(None, {name: x})
    h.check(all(np.array_equal(a, b) for a, b in zip(first, again)),
            "after the errors the session's outputs changed")
    # The DLPack protocol alone, read-only arrays, caller's output arrays, ORT's ways in.
    via_dlpack = session.run(None, {name: DLPackOnly(x)})
    h.check(all(np.array_equal(a, b) for a, b in zip(first, via_dlpack)),
            "a DLPack-only producer gave other outputs")
    frozen = x.copy()
    frozen.setflags(write=False)
    h.check(np.array_equal(session.run(None, {name: frozen})[0], first[0]),
            "a read-only array gave other outputs")
    mine = {o.name: np.full(o.shape, np.nan, np.float32) for o in outputs}
    session.run_with_outputs({name: x}, mine)
    h.check(all(np.array_equal(mine[o.name], f) for o, f in zip(outputs, first)),
            "run_with_outputs did not write the outputs into the caller's arrays")
    by_path = stitchopt.InferenceSession(os.path.join(out, "model.fused.onnx"),
                                         providers=["CPUExecutionProvider"])
    h.check("emulated" in by_path.backend, f"CPUExecutionProvider chose {by_path.backend}")
    h.check(by_path.launch_mode == "one call per step (CPU)", f"launch mode {by_path.launch_mode}")
    h.check(np.array_equal(by_path.run([outputs[-1].name], {name: x})[0], first[-1]),
            "an output asked for by name differs")
    closed = stitchopt.InferenceSession(out, backend="reference")
    closed.close()
    expect(h, "closed session", RuntimeError, "closed", lambda: closed.run(None, {name: x}))
    return session, name, x


def check_threads(h, session, name, x):
    """8 threads, 4 runs each, on one session: each equals the result computed alone."""
    inputs = [x * (1 + i) for i in range(8)]
    alone = [session.run(None, {name: v}) for v in inputs]
    mismatches = []

    def worker(i):
        for _ in range(4):
            got = session.run(None, {name: inputs[i]})
            if not all(np.array_equal(a, b) for a, b in zip(got, alone[i])):
                mismatches.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    h.check(not mismatches, f"threads {sorted(set(mismatches))} got other outputs than alone")


TORCH_SCRIPT = r"""
import sys
import numpy as np
import torch
import stitchopt
import stitchopt.torch
out, x_path, want_path = sys.argv[1:4]
x = torch.from_numpy(np.load(x_path))
want = np.load(want_path)
module = stitchopt.torch.Module(out, backend="emulated")
assert isinstance(module, torch.nn.Module)
got = module(x)
assert isinstance(got, tuple) and all(isinstance(t, torch.Tensor) for t in got), type(got)
assert np.array_equal(got[0].numpy(), want), "positional input"
by_name = module(**{module.input_names[0]: x})
assert np.array_equal(by_name[0].numpy(), want), "keyword input"
strided = torch.from_numpy(np.asfortranarray(np.load(x_path)))
assert not strided.is_contiguous()
assert np.array_equal(module(strided)[0].numpy(), want), "non-contiguous input"
session = stitchopt.InferenceSession(out, backend="emulated")
host = session.run(None, {module.input_names[0]: x})[0]
assert isinstance(host, np.ndarray) and np.array_equal(host, want), "torch CPU tensor in"
try:
    module(x.double())
    raise AssertionError("float64 accepted")
except ValueError as error:
    assert "the model takes" in str(error), error
print("torch module: all checks passed")
"""


def check_torch(h, package, out, name, x, want, work):
    python = "/usr/bin/python3"
    probe = subprocess.run([python, "-c", "import torch"], capture_output=True)
    if probe.returncode != 0:  # scripts/setup.sh installs it
        h.failures.append("torch module: /usr/bin/python3 has no torch; run scripts/setup.sh "
                          "(python3-torch)")
        return
    np.save(os.path.join(work, "x.npy"), x)
    np.save(os.path.join(work, "want.npy"), want)
    env = dict(os.environ, PYTHONPATH=package)
    proc = subprocess.run([python, "-c", TORCH_SCRIPT, out, os.path.join(work, "x.npy"),
                           os.path.join(work, "want.npy")], capture_output=True, text=True,
                          env=env, timeout=600)
    text = (proc.stdout + proc.stderr).strip()
    print(text.splitlines()[-1] if text else "torch module: no output")
    h.check(proc.returncode == 0 and "all checks passed" in text,
            f"stitchopt.torch.Module: exit {proc.returncode}:\n{text[-3000:]}")


def check_installed(h, out):
    """The venv's own `import stitchopt`: the package pip installed (scripts/setup.sh)."""
    script = ("import stitchopt, sys; s = stitchopt.InferenceSession(sys.argv[1], "
              "backend='reference'); print(stitchopt.__file__)")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", script, out], capture_output=True, text=True,
                          env=env, cwd="/", timeout=600)
    text = (proc.stdout + proc.stderr).strip()
    h.check(proc.returncode == 0 and text.startswith(sys.prefix),
            f"the venv has no installed stitchopt package (scripts/setup.sh runs pip install): "
            f"exit {proc.returncode}: {text[-1500:]}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    parser.add_argument("--package", required=True, help="BUILD/python")
    args = parser.parse_args()
    if os.environ.get("STITCH_PYTHON_PACKAGE_MISSING"):
        print("runtime.python: the Python package was not built: the build found no Python "
              "with nanobind (run scripts/setup.sh, then reconfigure the build)")
        return 1
    sys.path.insert(0, args.package)
    import onnxruntime as ort
    import stitchopt
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = json.load(f)["models"]
    h = Harness(args.stitchopt)
    with tempfile.TemporaryDirectory() as work:
        check_bundled(h, stitchopt, ort, entries, args.models, work)
        mlp = os.path.join(work, "mlp")
        if os.path.isdir(mlp):
            session, name, x = check_bad_inputs(h, stitchopt, mlp, work)
            check_threads(h, session, name, x)
            check_torch(h, args.package, mlp, name, x, session.run(None, {name: x})[0], work)
            check_installed(h, mlp)
    return h.finish("runtime.python")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Every emitted kernel, run on the CPU through the emulation layer, vs the reference.

CI has no GPU, yet every kernel stitchopt emits must be checked.
For each bundled model (models/manifest.json) or a prepared output directory:

  1. `stitchopt MODEL -o WORK/NAME [--input-shape NAME=d0,d1 ...]` writes
     model.fused.onnx and kernels/ (kernels.json, one .cu per distinct kernel);
     input shapes are the manifest's (bert's dynamic dims need them), or the
     reduced ones of REDUCED_SHAPES, which this script prints when it uses them;
  2. expected tensors: model.fused.onnx with its model-local functions inlined
     (onnx.inliner), every value a kernel reads or writes made a graph output, is
     evaluated by the reference interpreter (stitch_reference) on seeded random
     graph inputs (tests/manifest_inputs.py: integer inputs such as token ids stay
     in the manifest's valid range); initializers come from the model itself;
  3. per distinct kernel, one binary: the kernel's .cu compiled as C++
     (-DSTITCH_EMULATION -I emit/cuda -I kernels/) linked with
     tests/codegen/emu_driver.cc and the emulation library emit/cuda/*.cc (their
     objects cached under --cache by content hash, so reruns compile only what
     changed);
  4. per kernel instance (each fused node in model.fused.onnx whose op_type is the
     kernel; identical groups share a kernel and are all checked), the driver
     runs the launcher on the expected values of its inputs (kernels.json gives
     their order, dtypes and shapes) and every output is compared with the
     expected value of the same name:
        float32:           max over elements of |a - b| / max(|b|, 1) <= 1e-5
        float16/bfloat16:  the same quantity <= 1e-2
        integers and bool: equal
     where a is the kernel's value and b the reference's; NaN must meet NaN and an
     infinity the same infinity. Outputs the kernel never writes read as NaN/-1
     (the driver fills them with 0xFF bytes), so they fail. A kernel with a 128-bit
     path (kernels.json vector_width 4) runs its first instance a second time on
     buffers 4 bytes past alignment (emu_driver --misalign): its scalar fallback;

Prints one line per kernel instance (PASS/FAIL, model, kernel, output shapes,
max error, emulation seconds) and a summary; exits 1 if any kernel failed, did
not compile or did not run, 2 on bad usage. A model for which stitchopt wrote no
kernels/ fails, unless --allow-missing-kernels is given (stitchopt does not write
kernels/ yet): then it is listed, and when no model had kernels the exit code is
77, ctest's skip code.

--tsan: the emulation layer's one-std::thread-per-CUDA-thread mode
(-DSTITCH_EMU_THREADS) under ThreadSanitizer, on TSAN_SHAPES' small subset, each
kernel at its first call site; any ThreadSanitizer report fails the kernel (a missing
__syncthreads shows up here).

Usage:
  emulated_kernels.py --stitchopt PATH --stitch-reference PATH --models DIR
                      [--model NAME]... [--tsan] [--cache DIR] [--work DIR]
  emulated_kernels.py --stitch-reference PATH --out-dir DIR --manifest FILE
                      (an existing stitchopt output directory, e.g. the fixture)
"""

import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.inliner
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from manifest_inputs import random_feeds  # noqa: E402
from model_outputs import (EMU_DIR, REDUCED_SHAPES, Failure, exit_status,  # noqa: E402
                           manifest_entries, run_stitchopt)

DRIVER_SOURCE = os.path.join(HERE, "emu_driver.cc")

FLOAT32_TOLERANCE = 1e-5
HALF_TOLERANCE = 1e-2  # float16 and bfloat16: arithmetic in float, storage rounds

# --tsan runs one OS thread per CUDA thread under ThreadSanitizer, so only models
# with small tensors: these, with these shape overrides.
TSAN_SHAPES = {
    "logistic_regression": {},
    "rnn_unrolled": {},
    "lstm": {},
    "bert": {"input_ids": [1, 8], "token_type_ids": [1, 8], "attention_mask": [1, 8]},
}

# kernels.json writes ONNX's own type names (TensorProto: "float", "double", ...).
ONNX_TO_NUMPY = {
    "float": np.float32, "double": np.float64, "float16": np.float16,
    "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_,
    "bfloat16": np.uint16,  # raw bits; compared after widening to float32
}


# ----------------------------------------------------------------------------
# Producing a kernel directory


def load_kernels_json(kernels_dir):
    path = os.path.join(kernels_dir, "kernels.json")
    with open(path) as f:
        document = json.load(f)
    kernels = document.get("kernels")
    if not isinstance(kernels, list):
        raise Failure(f"{path}: no \"kernels\" list")
    for kernel in kernels:
        for key in ("name", "file", "inputs", "outputs"):
            if key not in kernel:
                raise Failure(f"{path}: kernel {kernel.get('name', '?')} has no \"{key}\"")
        for tensor in kernel["inputs"] + kernel["outputs"]:
            if tensor.get("dtype") not in ONNX_TO_NUMPY:
                raise Failure(f"{path}: kernel {kernel['name']}: tensor {tensor.get('name')} "
                              f"has dtype {tensor.get('dtype')!r}, not one of "
                              f"{sorted(ONNX_TO_NUMPY)}")
    return kernels


# ----------------------------------------------------------------------------
# Expected values from the reference interpreter


def kernel_instances(model, kernel):
    """(inputs, outputs) value-name lists of every use of `kernel`: the fused nodes
    running it, else the names kernels.json gives (a kernel for a single op)."""
    instances = []
    for node in model.graph.node:
        if node.domain == "stitchopt" and node.op_type == kernel["name"]:
            if len(node.input) != len(kernel["inputs"]) or \
                    len(node.output) != len(kernel["outputs"]):
                raise Failure(f"kernel {kernel['name']}: kernels.json lists "
                              f"{len(kernel['inputs'])} inputs and {len(kernel['outputs'])} "
                              f"outputs, fused node {node.name} has {len(node.input)} and "
                              f"{len(node.output)}")
            instance = (list(node.input), list(node.output))
            if instance not in instances:
                instances.append(instance)
    if not instances:
        instances.append(([t["name"] for t in kernel["inputs"]],
                          [t["name"] for t in kernel["outputs"]]))
    return instances


def reference_values(stitch_reference, fused_path, model, feeds, needed, work, timeout):
    """name -> numpy array for every name in `needed`, from the reference interpreter.
    `model` is fused_path loaded with its external data."""
    initializers = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    inlined = onnx.inliner.inline_local_functions(model)
    del inlined.functions[:]
    kept = [o for o in inlined.opset_import if o.domain != "stitchopt"]
    del inlined.opset_import[:]
    inlined.opset_import.extend(kept)
    graph = inlined.graph
    for node in graph.node:
        if node.domain == "stitchopt":
            raise Failure(f"{fused_path}: node {node.name} ({node.op_type}) has no "
                          f"model-local function to inline")
    graph_inputs = [i.name for i in graph.input]
    produced = {name for node in graph.node for name in node.output}
    outputs = [o.name for o in graph.output]
    typed = {v.name: v for v in list(graph.value_info) + list(graph.output)}
    for name in sorted(needed):
        if name in produced and name not in outputs:
            if name not in typed:
                raise Failure(f"{fused_path}: value {name} has no value_info to make it an "
                              f"output")
            graph.output.append(typed[name])
            outputs.append(name)
    directory = os.path.join(work, "reference")
    os.makedirs(directory, exist_ok=True)
    model_path = os.path.join(directory, "expected.onnx")
    onnx.save(inlined, model_path)
    for index, name in enumerate(graph_inputs):
        if name in feeds:
            tensor = numpy_helper.from_array(feeds[name], name)
            with open(os.path.join(directory, f"input_{index}.pb"), "wb") as f:
                f.write(tensor.SerializeToString())
        elif name not in initializers:
            raise Failure(f"graph input {name} has no value (not in the manifest)")
    proc = subprocess.run([stitch_reference, model_path, directory], capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise Failure(f"stitch_reference exit {proc.returncode}: {proc.stderr.strip()}")
    values = dict(initializers)
    values.update(feeds)
    for index, name in enumerate(outputs):
        proto = onnx.TensorProto()
        with open(os.path.join(directory, f"ref_output_{index}.pb"), "rb") as f:
            proto.ParseFromString(f.read())
        values[name] = tensor_array(proto)
    missing = sorted(n for n in needed if n not in values)
    if missing:
        raise Failure(f"no reference value for {', '.join(missing)}")
    return values


def tensor_array(proto):
    """A TensorProto as numpy; bfloat16 as its raw uint16 bits."""
    if proto.data_type == onnx.TensorProto.BFLOAT16:
        if proto.raw_data:
            return np.frombuffer(proto.raw_data, dtype="<u2").reshape(tuple(proto.dims)).copy()
        return np.array(proto.int32_data, dtype=np.uint16).reshape(tuple(proto.dims))
    return numpy_helper.to_array(proto)


# ----------------------------------------------------------------------------
# Building the emulation binaries


class Builder:
    """Compiles and links emulation binaries; objects cached by content hash."""

    def __init__(self, cache, cxx, tsan, emu_dir):
        self.cxx = cxx
        self.emu_dir = emu_dir
        self.tsan = tsan
        self.cache = os.path.join(cache, "tsan" if tsan else "fibers")
        os.makedirs(self.cache, exist_ok=True)
        if tsan:
            self.flags = ["-std=c++20", "-O1", "-g", "-fsanitize=thread", "-DSTITCH_EMU_THREADS"]
        else:
            self.flags = ["-std=c++20", "-O2"]
        self.flags += ["-DSTITCH_EMULATION", "-Wall", "-Wextra"]
        if not os.path.isfile(os.path.join(emu_dir, "stitch_emu.h")):
            raise Failure(f"the emulation layer {emu_dir}/stitch_emu.h does not exist")
        self.emu_files = sorted(glob.glob(os.path.join(emu_dir, "*")))
        # Every key covers the emulation layer: read and hashed once, not per kernel.
        self.emu_digest = self._digest(self.emu_files, [self.cxx] + self.flags)
        self.library = None

    @staticmethod
    def _digest(paths, parts):
        digest = hashlib.sha256()
        for part in parts:
            digest.update(part.encode() + b"\0")
        for path in paths:
            digest.update(path.encode() + b"\0")
            with open(path, "rb") as f:
                digest.update(f.read())
        return digest.hexdigest()

    def _key(self, *paths, extra=()):
        return self._digest(paths, [self.emu_digest] + list(extra))[:24]

    def _compile(self, source, obj, includes, language_cxx=False):
        command = [self.cxx] + self.flags + [f"-I{d}" for d in includes]
        if language_cxx:
            command += ["-x", "c++"]
        partial = f"{obj}.{os.getpid()}.tmp"  # concurrent harness runs share the cache
        command += ["-c", source, "-o", partial]
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise Failure(f"{os.path.basename(source)} does not compile as C++ "
                          f"(emulation):\n{proc.stderr.strip()}")
        os.replace(partial, obj)
        return proc.stderr

    def support_objects(self):
        """The emulation library and the driver: compiled once per cache."""
        if self.library is None:
            objects = []
            sources = [p for p in self.emu_files if p.endswith(".cc")] + [DRIVER_SOURCE]
            for source in sources:
                obj = os.path.join(self.cache, f"{os.path.basename(source)}-"
                                               f"{self._key(source)}.o")
                if not os.path.exists(obj):
                    self._compile(source, obj, [self.emu_dir])
                objects.append(obj)
            self.library = objects
        return self.library

    def kernel_binary(self, kernels_dir, kernel):
        """The driver binary for one kernel; returns (path, compiler warnings)."""
        source = os.path.join(kernels_dir, kernel["file"])
        local_prelude = os.path.join(kernels_dir, "stitch_prelude.cuh")
        inputs = [source] + ([local_prelude] if os.path.exists(local_prelude) else [])
        key = self._key(*inputs, extra=[kernel["name"]])
        binary = os.path.join(self.cache, f"{kernel['name']}-{key}")
        warnings_file = binary + ".warnings"
        if os.path.exists(binary):
            with open(warnings_file) as f:
                return binary, f.read()
        obj = f"{binary}.{os.getpid()}.o"
        partial = f"{binary}.{os.getpid()}.tmp"
        warnings = self._compile(source, obj, [kernels_dir, self.emu_dir], language_cxx=True)
        command = [self.cxx, "-rdynamic", "-pthread", obj] + self.support_objects() + \
            ["-o", partial]
        if self.tsan:
            command.insert(1, "-fsanitize=thread")
        proc = subprocess.run(command, capture_output=True, text=True)
        if proc.returncode != 0:
            raise Failure(f"{kernel['file']} does not link:\n{proc.stderr.strip()}")
        with open(warnings_file, "w") as f:
            f.write(warnings)
        os.replace(partial, binary)
        os.remove(obj)
        return binary, warnings


# ----------------------------------------------------------------------------
# Running and comparing


def as_float(array, dtype):
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float64)


def compare(got, want, dtype):
    """(max error, problem or None) of a kernel output against the reference."""
    if dtype in ("float", "double", "float16", "bfloat16"):
        tolerance = FLOAT32_TOLERANCE if dtype in ("float", "double") else HALF_TOLERANCE
        a = as_float(got, dtype).astype(np.float64)
        b = as_float(want, dtype).astype(np.float64)
        nan_a, nan_b = np.isnan(a), np.isnan(b)
        if (nan_a != nan_b).any():
            index = int(np.flatnonzero(nan_a != nan_b)[0])
            return float("inf"), (f"{int(np.count_nonzero(nan_a != nan_b))} NaN mismatches, "
                                  f"first at flat index {index}: got {a.flat[index]}, "
                                  f"want {b.flat[index]}")
        same = (a == b) | (nan_a & nan_b)
        if same.all():
            return 0.0, None
        with np.errstate(invalid="ignore"):
            error = np.where(same, 0.0, np.abs(a - b) / np.maximum(np.abs(b), 1.0))
        error = np.where(np.isnan(error), np.inf, error)  # inf vs a different value
        index = int(np.argmax(error))
        worst = float(error.flat[index])
        if worst <= tolerance:
            return worst, None
        return worst, (f"max |a-b|/max(|b|,1) = {worst:.3g} > {tolerance:g} at flat index "
                       f"{index}: got {a.flat[index]!r}, want {b.flat[index]!r}")
    differ = got != want
    count = int(np.count_nonzero(differ))
    if count == 0:
        return 0.0, None
    index = int(np.flatnonzero(differ)[0])
    return float("inf"), (f"{count} of {got.size} elements differ, first at flat index "
                          f"{index}: got {got.flat[index]}, want {want.flat[index]}")


def tensor_text(spec):
    return f"{spec['name']}:{spec['dtype']}[{','.join(map(str, spec['shape']))}]"


def check_layout(name, array, spec):
    want_dtype = np.dtype(ONNX_TO_NUMPY[spec["dtype"]])
    if array.dtype != want_dtype or list(array.shape) != list(spec["shape"]):
        raise Failure(f"value {name}: kernels.json says {spec['dtype']}{list(spec['shape'])}, "
                      f"the reference has {array.dtype}{list(array.shape)}")


def run_instance(binary, kernel, instance, values, work, timeout, tsan, misalign=False):
    """Runs one kernel instance; returns (max error, seconds, problems).

    misalign: every input and output 4 bytes past a 256-byte boundary (emu_driver
    --misalign), which sends a kernel with a 128-bit path down its scalar loop."""
    input_names, output_names = instance
    directory = tempfile.mkdtemp(prefix=kernel["name"] + "_", dir=work)
    command = [binary, kernel["name"]] + (["--misalign"] if misalign else [])
    for index, (name, spec) in enumerate(zip(input_names, kernel["inputs"])):
        array = values[name]
        check_layout(name, array, spec)
        path = os.path.join(directory, f"input_{index}.bin")
        np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tofile(path)
        command += ["--input", path]
    for index, (name, spec) in enumerate(zip(output_names, kernel["outputs"])):
        check_layout(name, values[name], spec)
        path = os.path.join(directory, f"output_{index}.bin")
        command += ["--output", f"{path}:{values[name].nbytes}"]
    env = dict(os.environ)
    if tsan:
        env["TSAN_OPTIONS"] = "halt_on_error=1 exitcode=66 " + env.get("TSAN_OPTIONS", "")
    start = time.monotonic()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"did not finish within {timeout} s")
    seconds = time.monotonic() - start
    if "WARNING: ThreadSanitizer" in proc.stderr:
        report = proc.stderr[proc.stderr.index("WARNING: ThreadSanitizer"):]
        raise Failure("ThreadSanitizer: " + "\n".join(report.splitlines()[:30]))
    if proc.returncode != 0:
        raise Failure(f"driver exit {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    for part in proc.stdout.split():
        if part.startswith("launch_seconds="):
            seconds = float(part.split("=", 1)[1])
        if part.startswith("workspace_bytes=") and "workspace_bytes" in kernel:
            reported = int(part.split("=", 1)[1])
            if reported != kernel["workspace_bytes"]:
                raise Failure(f"{kernel['name']}_workspace_bytes() returns {reported}, "
                              f"kernels.json says {kernel['workspace_bytes']}")
    worst, problems = 0.0, []
    for index, (name, spec) in enumerate(zip(output_names, kernel["outputs"])):
        want = values[name]
        got = np.fromfile(os.path.join(directory, f"output_{index}.bin"),
                          dtype=want.dtype.newbyteorder("<")).reshape(want.shape)
        error, problem = compare(got, want, spec["dtype"])
        worst = max(worst, error)
        if problem:
            problems.append(f"output {index} {name}: {problem}")
    shutil.rmtree(directory)
    return worst, seconds, problems


# ----------------------------------------------------------------------------
# One model


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.skipped_models = []
        self.seconds = 0.0
        self.kernels = 0

    def fail(self, line):
        self.failed += 1
        print(line, flush=True)


def check_output_dir(label, out_dir, feeds, args, builder, tally, work):
    kernels_dir = os.path.join(out_dir, "kernels")
    kernels = load_kernels_json(kernels_dir)
    fused_path = os.path.join(out_dir, "model.fused.onnx")
    model = onnx.load(fused_path)  # external data comes in too
    instances = {k["name"]: kernel_instances(model, k) for k in kernels}
    needed = {name for k in kernels for ins, outs in instances[k["name"]] for name in ins + outs}
    values = reference_values(args.stitch_reference, fused_path, model, feeds, needed, work,
                              args.timeout)

    def build(kernel):
        try:
            return builder.kernel_binary(kernels_dir, kernel), None
        except Failure as error:
            return None, str(error)

    builder.support_objects()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        built = list(pool.map(build, kernels))
    for kernel, (result, build_error) in zip(kernels, built):
        tally.kernels += 1
        shapes = ", ".join(tensor_text(t) for t in kernel["outputs"])
        if build_error:
            tally.fail(f"FAIL {label} {kernel['name']} [{shapes}]: {build_error}")
            continue
        binary, warnings = result
        if warnings.strip():
            count = warnings.count("warning:")
            print(f"note {label} {kernel['name']}: {count} C++ compiler warnings (emulation "
                  f"build; nvcc's -Werror check is codegen.nvcc):\n{warnings.strip()[:1500]}")
        # A kernel with a 128-bit path (kernels.json vector_width 4) runs its first
        # instance twice: aligned buffers (the vector path) and misaligned ones (the
        # scalar loop it falls back to).
        runs = [(number, instance, False) for number, instance in
                enumerate(instances[kernel["name"]])]
        # Under ThreadSanitizer a kernel's races are its code's and launch's, not its
        # data's: its first call site stands for the others (one OS thread per CUDA
        # thread makes each run slow: bert's packed projections, 49k threads, 85 s).
        # The fibers mode runs every call site against the reference.
        if args.tsan:
            runs = runs[:1]
        if kernel.get("vector_width", 1) > 1 and runs:
            runs.append((runs[0][0], runs[0][1], True))
        for number, instance, misalign in runs:
            name = kernel["name"] + (f"#{number}" if len(instances[kernel["name"]]) > 1 else "")
            name += " (misaligned: scalar path)" if misalign else ""
            try:
                worst, seconds, problems = run_instance(binary, kernel, instance, values, work,
                                                        args.kernel_timeout, args.tsan, misalign)
            except Failure as error:
                tally.fail(f"FAIL {label} {name} [{shapes}]: {error}")
                continue
            tally.seconds += seconds
            if problems:
                tally.fail(f"FAIL {label} {name} [{shapes}] max error {worst:.3g} "
                           f"({seconds:.2f} s): " + "; ".join(problems))
            else:
                tally.passed += 1
                print(f"PASS {label} {name} [{shapes}] max error {worst:.3g} ({seconds:.2f} s)",
                      flush=True)


def check_model(entry, args, builder, tally, work):
    overrides = (TSAN_SHAPES if args.tsan else REDUCED_SHAPES).get(entry["name"], {})
    if overrides:
        shapes = ", ".join(f"{k}={list(v)}" for k, v in sorted(overrides.items()))
        print(f"note {entry['name']}: reduced shapes {shapes} (instead of the manifest's)")
    entry, out_dir = run_stitchopt(args.stitchopt, args.models, entry, overrides, work,
                                   args.timeout)
    if not os.path.isfile(os.path.join(out_dir, "kernels", "kernels.json")):
        tally.skipped_models.append(entry["name"])
        print(f"SKIP {entry['name']}: stitchopt wrote no {out_dir}/kernels/kernels.json")
        return
    # Every group that is not a library call must have its kernel: a group the
    # emitter could not express is a warning for users but a failure here.
    with open(os.path.join(out_dir, "report.json")) as f:
        report = json.load(f)
    for group in report["groups"]:
        if group["category"] != "library" and group["codegen"] is None:
            tally.fail(f"FAIL {entry['name']} {group['kernel']}: group has no generated kernel")
    check_output_dir(entry["name"], out_dir, random_feeds(entry), args, builder, tally, work)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt")
    parser.add_argument("--stitch-reference", required=True)
    parser.add_argument("--models", help="models directory with manifest.json")
    parser.add_argument("--model", action="append", default=[], help="only these models")
    parser.add_argument("--out-dir", help="an existing stitchopt output directory")
    parser.add_argument("--manifest", help="with --out-dir: a manifest with its graph inputs")
    parser.add_argument("--tsan", action="store_true")
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(),
                                                        "stitch_emulated_kernels_cache"))
    parser.add_argument("--work", help="keep intermediate files here")
    parser.add_argument("--cxx", default=os.environ.get("CXX", "c++"))
    parser.add_argument("--emu-dir", default=EMU_DIR,
                        help="the emulation layer (stitch_emu.h, *.cc); default emit/cuda")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=300, help="stitchopt/reference, s")
    parser.add_argument("--kernel-timeout", type=float, default=300, help="per kernel run, s")
    parser.add_argument("--allow-missing-kernels", action="store_true",
                        help="exit 77 (skip) instead of 1 when no model has kernels/")
    args = parser.parse_args()
    if bool(args.models) == bool(args.out_dir):
        parser.error("give exactly one of --models and --out-dir")
    if args.models and not args.stitchopt:
        parser.error("--models needs --stitchopt")
    if args.out_dir and not args.manifest:
        parser.error("--out-dir needs --manifest")

    tally = Tally()
    work = args.work or tempfile.mkdtemp(prefix="stitch_emulated_kernels_")
    os.makedirs(work, exist_ok=True)
    start = time.monotonic()
    try:
        builder = Builder(args.cache, args.cxx, args.tsan, args.emu_dir)
        if args.out_dir:
            with open(args.manifest) as f:
                entries = json.load(f)["models"]
            check_output_dir(os.path.basename(os.path.normpath(args.out_dir)), args.out_dir,
                             random_feeds(entries[0]), args, builder, tally, work)
        else:
            for entry in manifest_entries(args.models, args.model):
                if args.tsan and not args.model and entry["name"] not in TSAN_SHAPES:
                    continue
                try:
                    check_model(entry, args, builder, tally, work)
                except (Failure, subprocess.TimeoutExpired, OSError) as error:
                    tally.fail(f"FAIL {entry['name']}: {error}")
    except Failure as error:
        tally.fail(f"FAIL: {error}")
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    mode = "ThreadSanitizer (STITCH_EMU_THREADS)" if args.tsan else "fibers"
    print(f"{tally.passed} passed, {tally.failed} failed ({tally.kernels} kernels, emulation "
          f"{mode}, {tally.seconds:.1f} s emulated, {time.monotonic() - start:.1f} s total)")
    return exit_status(tally.failed, tally.passed, tally.skipped_models,
                       args.allow_missing_kernels, "no kernel was checked")


if __name__ == "__main__":
    sys.exit(main())

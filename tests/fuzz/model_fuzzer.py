#!/usr/bin/env python3
"""Out-of-process model fuzzer: random valid ONNX models through the stitchopt CLI.

Case I of seed S is the model `random_model --seed=S*1000003+I` writes: the
structure-aware generator the in-process graph_fuzzer drives (random_model.h), so
registry ops with valid arity and attributes at opsets 7..21, zero and one dims,
constants with integer extremes and names with hostile bytes. Its twin, written with
--plain-names, is the same graph with ASCII names. For every case:

  1. `stitchopt MODEL -o OUT` and `stitchopt TWIN -o OUT_TWIN` must exit 0 or 2
     within 60 s: never 1 (internal error), never a signal;
  2. when MODEL compiled, `stitchopt run OUT --emulate` must exit 0: the emitted
     kernels, compiled as C++ against the CUDA emulation layer, match the reference
     interpreter. Exit 2 is accepted only when the reference itself cannot run the
     model on the random inputs (integer division by zero, an index out of range,
     ArgMax over nothing, the generator's custom-domain op);
  3. where the ONNX checker accepts TWIN and ONNX Runtime runs it (in a worker
     process, so a crash of ORT is not ours): stitch_reference on MODEL agrees with
     ORT on the same inputs (tests/reference/compare.py: floats within 1e-5 of
     max(|b|, 1), f16 1e-2, integers exactly), and ORT on OUT_TWIN/model.fused.onnx
     agrees with ORT on TWIN (ten times the float tolerances: simplification
     reassociates). Elements where one side is NaN or infinite and the other is not
     are counted, not compared: ORT's own edge cases would drown the rest.

A failing case is kept under --keep DIR/<seed>-<case>/ (model, twin, inputs,
repro.sh with the commands, symptom.txt, log.txt with every command's output). Prints one line per failure and a summary
(cases, checker/ORT coverage, exit codes, the most common refusals); exits 1 when a
case failed, 2 on bad usage, 77 when a binary is missing (ctest: skipped).

Usage: model_fuzzer.py --build DIR [--random-model PATH] [--seed S]
                       [--cases N] [--time SECONDS] [--keep DIR] [--no-ort] [-v]
                       [generator flags: --no-zero-dims --no-int-div --plain-names
                        --no-wide --no-special-floats --exclude-ops=A,B]
"""

import argparse
import collections
import multiprocessing
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "reference"))
from compare import compare_arrays, tolerance_of  # noqa: E402

COMPILE_TIMEOUT = 60
RUN_TIMEOUT = 300
ORT_TIMEOUT = 60
MEMORY_LIMIT = 4 << 30
GENERATOR_FLAGS = ("--no-zero-dims", "--no-int-div", "--plain-names", "--no-wide",
                   "--no-special-floats")
# What `stitchopt run` may refuse: random inputs the reference interpreter rejects,
# ops it has no evaluation for (the generator's custom-domain op).
RUN_REFUSAL = re.compile(r"division by zero|out of range|out of bounds|no reference evaluation|"
                         r"need at least one element")


class Failure(Exception):
    def __init__(self, stage, message):
        super().__init__(f"{stage}: {message}")
        self.stage = stage
        self.message = message


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(command, timeout, memory_limit=True):
    """(exit code or a negative signal or "timeout", stdout + stderr). The command
    runs in its own process group, all of which a timeout kills (stitchopt's children:
    dot, the C++ compiler). random_model is built with AddressSanitizer, which needs
    the address space unlimited."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True,
                            preexec_fn=limit_memory if memory_limit else None)
    try:
        output, _ = proc.communicate(timeout=timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        code = "timeout"
    return code, output.decode(errors="replace")


def first_error_line(output):
    lines = output.splitlines()
    for marker in ("error", "stitchopt:"):
        for line in lines:
            if marker in line:
                return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else ""


# ---------------------------------------------------------------------------------
# ONNX Runtime in a worker process: a model can crash or hang it.

def _ort_worker(connection):
    import onnxruntime as ort
    while True:
        request = connection.recv()
        if request is None:
            return
        path, feeds = request
        try:
            options = ort.SessionOptions()
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.log_severity_level = 4
            options.intra_op_num_threads = 1
            session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            names = [output.name for output in session.get_outputs()]
            connection.send(("ok", session.run(names, feeds)))
        except Exception as error:  # ORT raises many types; all mean "it does not run it"
            connection.send(("error", str(error).splitlines()[0][:300] if str(error) else
                             type(error).__name__))


class OrtRunner:
    def __init__(self):
        self.context = multiprocessing.get_context("spawn")
        self.process = None

    def _start(self):
        self.connection, child = self.context.Pipe()
        self.process = self.context.Process(target=_ort_worker, args=(child,), daemon=True)
        self.process.start()

    def run(self, path, feeds):
        """("ok", outputs) or ("error", why); a crash or hang of ORT is an error."""
        if self.process is None or not self.process.is_alive():
            self._start()
        self.connection.send((path, feeds))
        if self.connection.poll(ORT_TIMEOUT):
            try:
                return self.connection.recv()
            except EOFError:
                pass
        self.stop()
        return "error", "onnxruntime crashed or hung"

    def stop(self):
        if self.process is not None:
            self.process.kill()
            self.process.join()
            self.process = None


# ---------------------------------------------------------------------------------
# One case

def random_feeds(model, rng):
    """Graph inputs without a default: floats uniform in [-3, 3], integers in [-4, 4]
    ([0, 4] unsigned), bools fair; None when ORT's numpy API cannot hold a dtype."""
    defaults = {initializer.name for initializer in model.graph.initializer}
    feeds = []
    for graph_input in model.graph.input:
        if graph_input.name in defaults:
            continue
        tensor_type = graph_input.type.tensor_type
        if tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            return None
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        shape = tuple(d.dim_value for d in tensor_type.shape.dim)
        if dtype.kind == "f":
            value = rng.uniform(-3, 3, size=shape).astype(dtype)
        elif dtype.kind == "b":
            value = rng.integers(0, 2, size=shape).astype(np.bool_)
        else:
            value = rng.integers(0 if dtype.kind == "u" else -4, 5, size=shape).astype(dtype)
        feeds.append((graph_input.name, value))
    return feeds


def has_bfloat16(model):
    values = list(model.graph.output) + list(model.graph.value_info)
    return any(v.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16 for v in values)


class Case:
    def __init__(self, args, seed, index, work, ort_runner, stats):
        self.args = args
        self.model_seed = seed * 1000003 + index
        self.name = f"{seed}-{index}"
        self.work = os.path.join(work, self.name)
        self.ort = ort_runner
        self.stats = stats
        self.commands = []
        self.log = []
        self.model = os.path.join(self.work, "model.onnx")
        self.twin = os.path.join(self.work, "twin.onnx")
        self.out = os.path.join(self.work, "out")
        self.out_twin = os.path.join(self.work, "out_twin")

    def command(self, argv, timeout):
        self.commands.append(argv)
        code, output = run(argv, timeout)
        self.log.append(f"$ {' '.join(shlex.quote(a) for a in argv)}\n{output}[exit {code}]\n")
        return code, output

    def generate(self):
        os.makedirs(self.work)
        flags = self.args.generator_flags
        for path, extra in ((self.model, []), (self.twin, ["--plain-names"])):
            code, output = run([self.args.random_model, f"--seed={self.model_seed}", *flags, *extra,
                                path], 30, memory_limit=False)
            if code != 0:
                raise Failure("generate", f"random_model exit {code}: {output.strip()}")
        self.commands.append([self.args.random_model, f"--seed={self.model_seed}", *flags,
                              "model.onnx"])

    def compile(self, model, out):
        code, output = self.command([self.args.stitchopt, model, "-o", out], COMPILE_TIMEOUT)
        self.stats["compile exit " + str(code)] += 1
        if code not in (0, 2):
            raise Failure("compile", f"`stitchopt {os.path.basename(model)} -o OUT` exit {code}: "
                                     f"{first_error_line(output)}")
        if code == 2:
            self.stats.refusals[refusal_key(output)] += 1
        return code == 0

    def emulate(self):
        code, output = self.command([self.args.stitchopt, "run", self.out, "--emulate"], RUN_TIMEOUT)
        self.stats["run --emulate exit " + str(code)] += 1
        if code == 0 or (code == 2 and RUN_REFUSAL.search(output)):
            return
        if code == 3:
            mismatches = [line for line in output.splitlines() if "MISMATCH" in line]
            raise Failure("run --emulate", "outputs differ from the reference: " + "; ".join(mismatches)[:600])
        raise Failure("run --emulate", f"exit {code}: {first_error_line(output)}")

    def check_reference(self, twin):
        try:
            onnx.checker.check_model(self.twin, full_check=True)
        except Exception as error:
            self.stats["checker rejects"] += 1
            if self.args.verbose:
                print(f"  {self.name}: checker: {str(error).splitlines()[0][:200]}")
            return
        self.stats["checker accepts"] += 1
        if has_bfloat16(twin):
            return
        rng = np.random.default_rng(self.model_seed)
        feeds = random_feeds(twin, rng)
        if feeds is None:
            return
        status, expected = self.ort.run(self.twin, dict(feeds))
        if status != "ok":
            self.stats["onnxruntime refuses"] += 1
            self.stats.ort_refusals[refusal_key(expected)] += 1
            return
        self.stats["onnxruntime runs"] += 1
        inputs = os.path.join(self.work, "inputs")
        os.makedirs(inputs)
        positions = {graph_input.name: i for i, graph_input in enumerate(twin.graph.input)}
        for name, value in feeds:
            with open(os.path.join(inputs, f"input_{positions[name]}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(value, name).SerializeToString())
        code, output = self.command([self.args.stitch_reference, self.model, inputs], COMPILE_TIMEOUT)
        if code != 0:
            self.stats["reference refuses"] += 1
            self.stats.refusals["reference: " + refusal_key(output)] += 1
            if code != 2:
                raise Failure("stitch_reference", f"exit {code}: {first_error_line(output)}")
            return
        names = [output.name for output in twin.graph.output]
        reference = []
        for index in range(len(names)):
            proto = onnx.TensorProto()
            with open(os.path.join(inputs, f"ref_output_{index}.pb"), "rb") as f:
                proto.ParseFromString(f.read())
            reference.append(numpy_helper.to_array(proto))
        self.stats["reference compared with onnxruntime"] += 1
        problems = self.compare(names, reference, expected, 1)
        if problems:
            raise Failure("reference vs onnxruntime", problems)
        fused = os.path.join(self.out_twin, "model.fused.onnx")
        if os.path.exists(fused):
            status, got = self.ort.run(fused, dict(feeds))
            if status != "ok":
                raise Failure("onnxruntime on model.fused.onnx", got)
            self.stats["fused model compared with onnxruntime"] += 1
            problems = self.compare(names, got, expected, 10)
            if problems:
                raise Failure("onnxruntime: fused vs original", problems)

    def compare(self, names, got, want, slack):
        """compare.py's rule (times `slack` for floats: simplification reassociates)
        on the elements both sides have finite. Where one side is NaN or infinite and
        the other is not, ONNX Runtime's edge cases (asinh(inf), erf(NaN), NaN in
        Min/Max) would drown everything else: those are only counted."""
        problems = []
        for name, a, b in zip(names, got, want):
            a, b = np.asarray(a), np.asarray(b)
            if b.dtype.kind != "f" or a.dtype != b.dtype or a.shape != b.shape:
                problem = compare_arrays(a, b)
                if problem:
                    problems.append(f"output {name}: {problem}")
                continue
            g, w = a.astype(np.float64), b.astype(np.float64)
            finite = np.isfinite(g) & np.isfinite(w)
            same = (g == w) | (np.isnan(g) & np.isnan(w))
            self.stats["non-finite differences not compared"] += int((~finite & ~same).sum())
            with np.errstate(invalid="ignore", over="ignore"):
                error = np.where(finite, np.abs(g - w) / np.maximum(np.abs(w), 1.0), 0.0)
            bad = error > slack * tolerance_of(b.dtype)
            if np.any(bad):
                index = tuple(int(i) for i in np.argwhere(bad)[0])
                problems.append(f"output {name}: {int(bad.sum())} elements differ (max scaled error "
                                f"{float(error.max()):.3g}), first at {index}: {a[index]} vs {b[index]}")
        return "; ".join(problems)[:600]

    def run(self):
        """The failures of every check that could run (a failed compile skips only
        what needs its output)."""
        self.generate()
        failures = []

        def stage(check, *arguments):
            try:
                return check(*arguments)
            except Failure as failure:
                failures.append(failure)
                return None

        compiled = stage(self.compile, self.model, self.out)
        stage(self.compile, self.twin, self.out_twin)
        if not self.args.no_ort:
            stage(self.check_reference, onnx.load(self.twin))
        if compiled:
            stage(self.emulate)
        return failures

    def keep(self, failures):
        destination = os.path.join(self.args.keep, self.name)
        shutil.rmtree(destination, ignore_errors=True)
        shutil.copytree(self.work, destination, symlinks=True,
                        ignore=shutil.ignore_patterns("out", "out_twin"))
        with open(os.path.join(destination, "symptom.txt"), "w") as f:
            f.write("".join(f"{failure}\n" for failure in failures))
        with open(os.path.join(destination, "log.txt"), "w") as f:
            f.write("\n".join(self.log))
        with open(os.path.join(destination, "repro.sh"), "w") as f:
            f.write("#!/bin/sh\n")
            for failure in failures:
                f.write("# " + str(failure).replace("\n", " ")[:300] + "\n")
            f.write("cd \"$(dirname \"$0\")\"\n")
            for argv in self.commands:
                shown = [os.path.relpath(a, self.work) if a.startswith(self.work) else a for a in argv]
                f.write(" ".join(shlex.quote(a) for a in shown) + "\n")
        os.chmod(os.path.join(destination, "repro.sh"), 0o755)
        return destination


def refusal_key(output):
    """The first error line with names, numbers and quoted text blanked, so that
    refusals of one kind count together."""
    line = first_error_line(output)
    line = re.sub(r'"[^"]*"', '"…"', line)
    line = re.sub(r"\d+", "N", line)
    return line[:160]


class Stats(collections.Counter):
    def __init__(self):
        super().__init__()
        self.refusals = collections.Counter()
        self.ort_refusals = collections.Counter()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build", help="the main build directory")
    parser.add_argument("--random-model", help="default: BUILD/fuzz/tests/fuzz/random_model")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, help="stop after this many cases")
    parser.add_argument("--time", type=float, help="stop starting cases after this many seconds")
    parser.add_argument("--keep", help="copy failing cases here")
    parser.add_argument("--no-ort", action="store_true", help="skip the ONNX Runtime comparisons")
    parser.add_argument("-v", "--verbose", action="store_true")
    for flag in GENERATOR_FLAGS:
        parser.add_argument(flag, action="store_true", help="passed to random_model")
    parser.add_argument("--exclude-ops", help="passed to random_model (A,B,...)")
    args = parser.parse_args()
    if args.cases is None and args.time is None:
        parser.error("give --cases or --time")
    build = os.path.abspath(args.build)
    args.stitchopt = os.path.join(build, "bin", "stitchopt")
    args.stitch_reference = os.path.join(build, "tests", "stitch_reference")
    args.random_model = os.path.abspath(args.random_model or os.path.join(
        build, "fuzz", "tests", "fuzz", "random_model"))
    for tool in (args.stitchopt, args.stitch_reference, args.random_model):
        if not os.access(tool, os.X_OK):
            print(f"SKIP: {tool} is not built (scripts/test.sh builds random_model when clang "
                  "is installed)")
            return 77
    args.generator_flags = [flag for flag in GENERATOR_FLAGS
                            if getattr(args, flag[2:].replace("-", "_"))]
    if args.exclude_ops:
        args.generator_flags.append("--exclude-ops=" + args.exclude_ops)

    stats = Stats()
    failures = []
    ort_runner = OrtRunner()
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix="model_fuzzer.")
    index = 0
    try:
        while ((args.cases is None or index < args.cases) and
               (args.time is None or time.monotonic() - start < args.time)):
            case = Case(args, args.seed, index, work, ort_runner, stats)
            index += 1
            try:
                case_failures = case.run()
            except Failure as failure:
                case_failures = [failure]
            if case_failures:
                where = f"  [kept in {case.keep(case_failures)}]" if args.keep else ""
                for failure in case_failures:
                    failures.append((case.name, failure))
                    print(f"FAIL {case.name}: {failure}{where}", flush=True)
            shutil.rmtree(case.work, ignore_errors=True)
            if args.verbose and index % 25 == 0:
                print(f"  {index} cases, {len(failures)} failed, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
    finally:
        ort_runner.stop()
        shutil.rmtree(work, ignore_errors=True)

    seconds = time.monotonic() - start
    print(f"{index} cases in {seconds:.0f} s (seed {args.seed}, flags "
          f"{' '.join(args.generator_flags) or 'none'})")
    for key in sorted(stats):
        print(f"  {key}: {stats[key]}")
    for title, counter in (("stitchopt refusals", stats.refusals),
                           ("onnxruntime refusals", stats.ort_refusals)):
        if counter:
            print(f"  most common {title}:")
            for key, count in counter.most_common(8):
                print(f"    {count:5d}  {key}")
    signatures = collections.Counter(f"{failure.stage}: {refusal_key(failure.message)}"
                                     for _, failure in failures)
    print(f"{len(failures)} failures in {len({name for name, _ in failures})} cases "
          f"({len(signatures)} distinct signatures)")
    for signature, count in signatures.most_common():
        print(f"  {count:5d}  {signature}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

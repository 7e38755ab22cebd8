#!/usr/bin/env python3
"""End-to-end tests of the stitchopt command line: exit codes, messages, outputs.

Usage: cli_test.py --stitchopt BUILD/bin/stitchopt --source REPO_ROOT

- every broken model in tests/corpus/ exits 2 with the exact first line listed in
  tests/corpus/expected.tsv, and none crashes;
- --help/--version exit 0, usage errors exit 2 with a one-line message;
- a failed run leaves no output directory (and an existing one untouched);
- two runs give byte-identical model.fused.onnx and report.json up to timings.
Prints "N passed, M failed" last.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
passed = 0


def check(name, condition, detail=""):
    global passed
    if condition:
        passed += 1
    else:
        failures.append(name)
        print(f"FAIL {name}: {detail}")


def run(binary, args, cwd):
    return subprocess.run([binary] + args, cwd=cwd, capture_output=True, text=True, timeout=300)


def zero_timings(json_value):
    """Sets every "seconds" field to 0: timings are the only fields that vary."""
    if isinstance(json_value, dict):
        for key, value in json_value.items():
            if key == "seconds":
                json_value[key] = 0
            else:
                zero_timings(value)
    elif isinstance(json_value, list):
        for item in json_value:
            zero_timings(item)


def key_paths(json_value, prefix=""):
    """Key paths in document order; a[] stands for the elements of array a."""
    if isinstance(json_value, dict) and json_value:
        for key, value in json_value.items():
            yield from key_paths(value, f"{prefix}.{key}" if prefix else key)
    elif isinstance(json_value, list) and json_value and isinstance(json_value[0], dict):
        yield prefix
        seen = []
        for item in json_value:  # union over elements, first-seen order
            for path in key_paths(item, prefix + "[]"):
                if path not in seen:
                    seen.append(path)
        yield from seen
    else:
        yield prefix


def without_object_prefixes(paths):
    """Drops a path that also has children (`a.b` when `a.b.c` exists): a nullable
    object is documented as a row of its own, while a report where it is null in
    the first element lists it as a leaf."""
    return [p for p in paths if not any(q.startswith(p + ".") for q in paths)]


def documented_key_paths(source):
    rows = []
    with open(os.path.join(source, "docs", "report-schema.md")) as f:
        for line in f:
            if line.startswith("| `"):
                rows.append(line.split("`")[1])
    return rows


def first_line(text):
    return text.splitlines()[0] if text else ""


def corpus_tests(binary, source, work):
    expected_path = os.path.join(source, "tests", "corpus", "expected.tsv")
    with open(expected_path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
    for index, row in enumerate(rows):
        file_name, code, message = row[0], int(row[1]), row[2]
        extra = row[3].split() if len(row) > 3 and row[3] else []
        out = os.path.join(work, f"corpus_out_{index}_{file_name}")
        result = run(binary, [os.path.join("tests", "corpus", file_name), "-o", out] + extra, source)
        label = f"corpus {file_name} {' '.join(extra)}".strip()
        check(f"{label}: exit code", result.returncode == code,
              f"got {result.returncode}, want {code}; stderr: {result.stderr.strip()}")
        if code == 0:
            check(f"{label}: output written", os.path.exists(os.path.join(out, "model.fused.onnx")))
            continue
        check(f"{label}: message", first_line(result.stderr) == message,
              f"\n  got:  {first_line(result.stderr)}\n  want: {message}")
        check(f"{label}: one line", len(result.stderr.splitlines()) == 1,
              f"stderr has {len(result.stderr.splitlines())} lines")
        check(f"{label}: no output", not os.path.exists(out), "output directory exists")


def usage_tests(binary, source, work):
    result = run(binary, ["--help"], source)
    check("--help exits 0", result.returncode == 0 and "--input-shape" in result.stdout,
          result.stderr)
    result = run(binary, ["--version"], source)
    check("--version", result.returncode == 0 and result.stdout.startswith("stitchopt "),
          result.stdout + result.stderr)
    result = run(binary, ["models/mlp.onnx"], source)
    check("missing -o exits 2", result.returncode == 2, str(result.returncode))
    check("missing -o message", first_line(result.stderr).startswith("stitchopt: error: ") and
          "--output is required" in result.stderr, result.stderr)
    result = run(binary, ["models/mlp.onnx", "-o", os.path.join(work, "x"), "--no-such-flag"], source)
    check("unknown flag exits 2", result.returncode == 2, str(result.returncode))
    result = run(binary, ["models/mlp.onnx", "-o", os.path.join(work, "x"), "--input-shape", "x=1,a"],
                 source)
    check("bad --input-shape exits 2", result.returncode == 2, result.stderr)
    check("bad --input-shape message", first_line(result.stderr) ==
          'stitchopt: error: --input-shape x=1,a: dim "a" is not a non-negative integer; '
          'write it as NAME=d0,d1,... e.g. --input-shape input_ids=1,128', result.stderr)
    result = run(binary, ["no/such/model.onnx", "-o", os.path.join(work, "x")], source)
    check("missing model exits 2", result.returncode == 2, result.stderr)
    check("missing model message", first_line(result.stderr) ==
          "stitchopt: error: no/such/model.onnx: no such model file; pass the path of a .onnx file",
          result.stderr)
    result = run(binary, ["models", "-o", os.path.join(work, "x")], source)
    check("directory as the model", result.returncode == 2 and first_line(result.stderr) ==
          "stitchopt: error: models: is a directory, not a regular file; pass the path of a .onnx "
          "file", result.stderr)


def pipeline_flag_tests(binary, source, work):
    result = run(binary, ["--list-passes"], source)
    names = [line.split()[0] for line in result.stdout.splitlines() if line.strip()]
    check("--list-passes exits 0", result.returncode == 0, result.stderr)
    check("--list-passes lists every pass", names == [
        "shape-folding", "constant-folding", "noop-elimination", "algebraic",
        "fold-conv-batchnorm", "cse", "dce", "decompose"], str(names))
    out = os.path.join(work, "passes")
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--passes", "dce,cse,dec"], source)
    check("unknown pass exits 2", result.returncode == 2, result.stderr)
    check("unknown pass message", first_line(result.stderr) ==
          'stitchopt: error: --passes: no pass named "dec"; did you mean "dce"?', result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--passes", " , ,"], source)
    check("empty pass list exits 2", result.returncode == 2 and first_line(result.stderr) ==
          'stitchopt: error: --passes " , ," names no pass; list the passes to run (stitchopt '
          '--list-passes), or use --no-simplify to run none', result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--disable-pass", "nothing"], source)
    check("unknown disabled pass exits 2", result.returncode == 2, result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--dump-ir-after", "decompose",
                          "--time-passes", "--verify-each", "--disable-pass", "cse"], source)
    check("dump/time/verify flags succeed", result.returncode == 0, result.stderr)
    dumps = sorted(os.listdir(os.path.join(out, "ir"))) if os.path.isdir(os.path.join(out, "ir")) else []
    check("--dump-ir-after writes the IR", dumps and dumps[0] == "01-decompose.ir", str(dumps))
    if dumps:
        with open(os.path.join(out, "ir", dumps[0])) as f:
            check("dump is textual IR", f.readline().startswith("stitchopt.ir 1"))
    check("--time-passes prints a table", "stitchopt: pass " in result.stderr and
          "decompose" in result.stderr, result.stderr)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    ran = [p["name"] for p in report["simplify"]["passes"]]
    check("--disable-pass leaves the pass out", "cse" not in ran and "dce" in ran, str(ran))
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--no-simplify"], source)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    check("--no-simplify: simplify is null", result.returncode == 0 and report["simplify"] is None,
          result.stderr)


def launch_mode_tests(binary, source, work):
    """--launch-mode: a graph replay's phi with graph (the default), a host launch's with
    host; both in the report whichever is used."""
    out = os.path.join(work, "launch_mode")
    modes = {}
    for mode in ("graph", "host"):
        result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--force", "-q", "--launch-mode",
                              mode], source)
        with open(os.path.join(out, "report.json")) as f:
            modes[mode] = json.load(f)["device"]
        check(f"--launch-mode {mode}", result.returncode == 0, result.stderr)
    graph, host = modes["graph"], modes["host"]
    check("--launch-mode sets phi",
          graph["launch_mode"] == "graph" and host["launch_mode"] == "host" and
          graph["launch_latency_us"] == graph["graph_launch_latency_us"] and
          host["launch_latency_us"] == host["host_launch_latency_us"] and
          graph["launch_latency_us"] < host["launch_latency_us"],
          json.dumps(modes))
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--launch-mode", "pipelined"],
                 source)
    check("--launch-mode pipelined is a usage error", result.returncode == 2, result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--force", "-q", "--launch-mode",
                          "graph", "--launch-latency-us", "7.5"], source)
    with open(os.path.join(out, "report.json")) as f:
        device = json.load(f)["device"]
    check("--launch-latency-us sets the graph phi under --launch-mode graph",
          result.returncode == 0 and device["launch_mode"] == "graph" and
          device["launch_latency_us"] == 7.5 and device["graph_launch_latency_us"] == 7.5 and
          device["host_launch_latency_us"] == host["host_launch_latency_us"], json.dumps(device))
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--force", "-q"], source)
    with open(os.path.join(out, "report.json")) as f:
        device = json.load(f)["device"]
    check("graph replay by default",
          result.returncode == 0 and device["launch_mode"] == "graph" and
          device["launch_latency_us"] == graph["graph_launch_latency_us"], json.dumps(device))


def planner_flag_tests(binary, source, work):
    out = os.path.join(work, "planner")
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--min-compression", "1000"], source)
    check("--min-compression gate exits 3", result.returncode == 3, result.stderr)
    check("--min-compression message", first_line(result.stderr).startswith(
        "stitchopt: error: models/gpt2_block.onnx: compression ") and
        "is below --min-compression 1000.00" in result.stderr, result.stderr)
    check("gate failure still writes the outputs", os.path.exists(os.path.join(out, "report.json")))
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--min-compression", "1.5", "-q"],
                 source)
    check("--min-compression passes", result.returncode == 0, result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--device", "k80"], source)
    check("unknown device exits 2", result.returncode == 2, result.stderr)
    check("unknown device message", first_line(result.stderr) ==
          "stitchopt: error: --device k80: no such device profile; use one of a100, h100, h200, "
          "v100 or the path of a profile .json", result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--no-fusion", "-q"], source)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    check("--no-fusion: no groups", result.returncode == 0 and report["groups"] is None,
          result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--device", "a100",
                          "--launch-latency-us", "7.5", "--no-exploratory", "--no-packing",
                          "--max-pattern-size", "8", "--solver-time-limit", "5", "-v"], source)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    check("planner flags reach the report",
          result.returncode == 0 and report["device"]["name"] == "a100" and
          report["device"]["launch_latency_us"] == 7.5 and
          report["options"]["exploratory"] is False and report["options"]["packing"] is False and
          report["options"]["max_pattern_size"] == 8 and
          report["options"]["solver_time_limit_s"] == 5 and
          report["solver"]["candidates"]["exploratory"] == 0 and
          report["solver"]["candidates"]["packing"] == 0,
          result.stderr + json.dumps(report.get("device")))
    check("-v summary line", " kernels -> " in result.stderr and "x); wrote" in result.stderr,
          result.stderr)
    # Library-call epilogues: resnet's Conv+Relu chains become cuDNN library groups,
    # and --no-epilogue turns them off.
    result = run(binary, ["models/resnet.onnx", "-o", out, "-q"], source)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    library = [g for g in (report["groups"] or []) if g["category"] == "library"]
    check("epilogue groups are cuDNN library calls",
          result.returncode == 0 and report["options"]["epilogue"] is True and
          report["solver"]["candidates"]["epilogue"] > 0 and library and
          all(g["library"] == "cuDNN" and g["source"] == "epilogue" and g["epilogue"] and
              g["nodes"][0]["op"] == "Conv" for g in library) and
          all(g["library"] == "" and g["epilogue"] == [] for g in report["groups"]
              if g["category"] != "library"),
          result.stderr + json.dumps(report.get("groups"))[:2000])
    with_epilogue = report["kernels"]["fused"] if result.returncode == 0 else None
    result = run(binary, ["models/resnet.onnx", "-o", out, "-q", "--no-epilogue"], source)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    check("--no-epilogue: no library groups, more kernels",
          result.returncode == 0 and report["options"]["epilogue"] is False and
          report["solver"]["candidates"]["epilogue"] == 0 and
          all(g["category"] != "library" for g in report["groups"]) and
          with_epilogue is not None and report["kernels"]["fused"] > with_epilogue,
          result.stderr)


def output_tests(binary, source, work):
    out = os.path.join(work, "keep")
    os.makedirs(out)
    marker = os.path.join(out, "marker")
    open(marker, "w").close()
    # Fails in import, before anything is staged.
    result = run(binary, [os.path.join("tests", "corpus", "cycle.onnx"), "-o", out], source)
    check("failed import keeps old output", result.returncode == 2 and os.path.exists(marker),
          result.stderr)
    # Fails after the staging directory exists (pass names are checked when the
    # pipeline starts): the old output must survive and the staging must be gone.
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "--passes", "dce,nothing"], source)
    check("late failure keeps old output", result.returncode == 2 and os.path.exists(marker)
          and sorted(os.listdir(out)) == ["marker"], result.stderr + str(os.listdir(out)))
    leftovers = [n for n in os.listdir(work) if "stitchopt-tmp" in n or "stitchopt-old" in n]
    check("late failure leaves no staging directory", not leftovers, str(leftovers))

    reports = []
    models = []
    kernel_sets = []
    for attempt in range(2):
        out = os.path.join(work, f"det{attempt}")
        result = run(binary, ["models/gpt2_block.onnx", "-o", out], source)
        check(f"run {attempt} succeeds", result.returncode == 0, result.stderr)
        if result.returncode != 0:
            return
        with open(os.path.join(out, "model.fused.onnx"), "rb") as f:
            models.append(f.read())
        kernel_dir = os.path.join(out, "kernels")
        kernel_files = {}
        for name in sorted(os.listdir(kernel_dir)) if os.path.isdir(kernel_dir) else []:
            with open(os.path.join(kernel_dir, name), "rb") as f:
                kernel_files[name] = f.read()
        kernel_sets.append(kernel_files)
        with open(os.path.join(out, "report.json")) as f:
            report = json.load(f)
        zero_timings(report)
        reports.append(report)
    check("model.fused.onnx byte-identical across runs", models[0] == models[1])
    check("kernels/ written", any(n.endswith(".cu") for n in kernel_sets[0]), str(list(kernel_sets[0])))
    check("kernels/ byte-identical across runs", kernel_sets[0] == kernel_sets[1])
    check("report.json identical across runs up to timings", reports[0] == reports[1])
    report = reports[0]
    documented = without_object_prefixes(documented_key_paths(source))
    actual = without_object_prefixes(list(key_paths(report)))
    check("report keys match docs/report-schema.md, in order", actual == documented,
          f"\n  only in report: {[k for k in actual if k not in documented]}"
          f"\n  only in docs:   {[k for k in documented if k not in actual]}"
          f"\n  order differs:  {actual != documented}")
    check("report schema", report["schema"] == "stitchopt.report/2")
    check("report phases", [p["name"] for p in report["phases"]] == ["import", "verify", "simplify", "plan", "codegen", "rewrite", "kernels", "write"],
          str(report["phases"]))
    # A directory holding files stitchopt did not write is never replaced without
    # --force; an earlier output is replaced as a whole.
    out = os.path.join(work, "keep")
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "-q"], source)
    check("foreign output directory is refused", result.returncode == 2 and
          os.path.exists(marker) and first_line(result.stderr) ==
          f"stitchopt: error: -o {out} is not empty and is not an earlier stitchopt output "
          "(report.json with the stitchopt report schema is missing); stitchopt replaces its "
          "output directory as a whole, so pass a new or empty directory, or --force to delete "
          "what it holds", result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "-q", "--force"], source)
    check("--force replaces it", result.returncode == 0 and not os.path.exists(marker)
          and os.path.exists(os.path.join(out, "report.json")), result.stderr)
    check("-q prints nothing", result.stderr == "", result.stderr)
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "-q"], source)
    check("an earlier output is replaced", result.returncode == 0, result.stderr)


def wide_sum_model(path):
    """A Sum of one input read 150 times: Graphviz takes far longer than stitchopt's
    10 s limit to lay out its plan, so a compile of it spends that long in `dot`."""
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Sum", ["x"] * 150, ["y"], name="wide_sum")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def processes_mentioning(text):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def interrupt(process, signal_number):
    """Sends the signal and waits for the process (killed after 10 s)."""
    process.send_signal(signal_number)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def interrupt_tests(binary, source, work):
    """SIGTERM while `dot` runs removes the staging directory and ends dot; a second
    run into the same directory meanwhile is refused; a timed-out dot skips only the
    picture."""
    if shutil.which("dot") is None:
        print("SKIP interrupt tests: Graphviz's dot is not installed")
        return
    import signal
    import time
    model = os.path.join(work, "wide_sum.onnx")
    wide_sum_model(model)
    out = os.path.join(work, "interrupted")
    staging = f"{out}.stitchopt-tmp-"
    process = subprocess.Popen([binary, model, "-o", out], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not processes_mentioning(staging + str(process.pid)):
        time.sleep(0.05)
    check("dot runs on the staged plan", processes_mentioning(staging + str(process.pid)))
    second = run(binary, [model, "-o", out], source)
    check("a concurrent run into the same directory is refused",
          second.returncode == 2 and first_line(second.stderr) ==
          f"stitchopt: error: -o {out}: another stitchopt is using this directory (a compile "
          "into it, or run, bench or profile of it); wait for it to finish or pass another "
          "directory", second.stderr)
    interrupt(process, signal.SIGTERM)
    check("SIGTERM ends the run", process.returncode == -signal.SIGTERM, str(process.returncode))
    time.sleep(0.2)
    leftovers = [n for n in os.listdir(work) if "stitchopt-tmp" in n or "stitchopt-old" in n]
    check("SIGTERM removes the staging directory", not leftovers, str(leftovers))
    check("SIGTERM ends dot too", not processes_mentioning(staging), str(processes_mentioning(staging)))
    check("SIGTERM leaves no output directory", not os.path.exists(out))
    result = run(binary, [model, "-o", out], source)
    check("dot past its time limit skips only plan.svg",
          result.returncode == 0 and "stitchopt: warning: no plan.svg (dot still running after "
          "10 s: killed); plan.dot is written" in result.stderr and
          not os.path.exists(os.path.join(out, "plan.svg")) and
          os.path.exists(os.path.join(out, "plan.dot")), result.stderr)


def chain_model(path, length):
    """x -> Neg -> Relu -> Neg -> ... (`length` nodes) on f32[2,3]."""
    import onnx
    from onnx import TensorProto, helper
    nodes = [helper.make_node("Relu" if i % 2 else "Neg", [f"v{i}"], [f"v{i + 1}"])
             for i in range(length)]
    graph = helper.make_graph(nodes, "chain",
                              [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info(f"v{length}", TensorProto.FLOAT,
                                                             [2, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def memory_tests(binary, source, work):
    """Compile memory grows linearly with the chain (issue 36 R6): 5,000 unfused nodes
    sharing two single-op kernels took 726 MB when the report copied the kernel, with
    its list of launch sites so far, per site; 62 MB since."""
    model = os.path.join(work, "chain_5000.onnx")
    chain_model(model, 5000)
    process = subprocess.Popen([binary, model, "-o", os.path.join(work, "chain_out"), "--unfused",
                                "-q"], cwd=source, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    peak = usage.ru_maxrss / 1024
    check("a 5,000-node chain compiles --unfused under 256 MiB",
          process.returncode == 0 and peak < 256,
          f"exit {process.returncode}, peak {peak:.0f} MiB: {process.stderr.read()[-300:]}")


def runtime_interrupt_tests(binary, source, work):
    """`run --emulate` holds OUT while it builds there: a compile into OUT is refused
    meanwhile; SIGINT ends it and the compilers it started; two runs started together
    afterwards both pass, one waiting for the other (issue 36 R4, R5)."""
    import signal
    import time
    out = os.path.join(work, "running")
    result = run(binary, ["models/gpt2_block.onnx", "-o", out, "-q"], source)
    check("gpt2_block compiles for the runtime interrupt tests", result.returncode == 0,
          result.stderr)
    build = os.path.join(out, "kernels", "emu_build")
    # The compilers' temporary files go to the build directory, never to TMPDIR: the
    # ones SIGINT kills leave theirs there.
    temp = os.path.join(work, "interrupt_tmp")
    os.makedirs(temp)
    process = subprocess.Popen([binary, "run", out, "--emulate"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": temp})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not processes_mentioning(build):
        time.sleep(0.02)
    check("run --emulate starts its compilers", processes_mentioning(build))
    second = run(binary, ["models/gpt2_block.onnx", "-o", out], source)
    check("a compile into an output that run uses is refused",
          second.returncode == 2 and "another stitchopt is using this directory" in second.stderr,
          second.stderr)
    interrupt(process, signal.SIGINT)
    check("SIGINT ends run --emulate", process.returncode == -signal.SIGINT, str(process.returncode))
    time.sleep(0.5)
    check("SIGINT ends the compilers run --emulate started", not processes_mentioning(build),
          str(processes_mentioning(build)))
    check("the interrupted compilers left nothing in TMPDIR", not os.listdir(temp),
          str(os.listdir(temp)))
    runs = [subprocess.Popen([binary, "run", out, "--emulate"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(2)]
    results = [process.communicate(timeout=600) + (process.returncode,) for process in runs]
    check("two runs on one output after an interrupted build both pass",
          all(code == 0 and "outputs match" in stdout for stdout, _, code in results),
          str([(code, stderr[-300:]) for _, stderr, code in results]))
    check("the second of two runs on one output waits for the first",
          any("waiting for another stitchopt using" in stderr for _, stderr, _ in results),
          str([stderr[-300:] for _, stderr, _ in results]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--source", required=True)
    args = parser.parse_args()
    binary = os.path.abspath(args.stitchopt)
    work = tempfile.mkdtemp(prefix="stitchopt_cli_test_")
    try:
        corpus_tests(binary, args.source, work)
        usage_tests(binary, args.source, work)
        pipeline_flag_tests(binary, args.source, work)
        planner_flag_tests(binary, args.source, work)
        launch_mode_tests(binary, args.source, work)
        output_tests(binary, args.source, work)
        interrupt_tests(binary, args.source, work)
        runtime_interrupt_tests(binary, args.source, work)
        memory_tests(binary, args.source, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Runs the hostile corpus: every case in tests/corpus/hostile/cases_*.py.

Usage: hostile_test.py --stitchopt BUILD/bin/stitchopt [--only NAME ...] [--keep DIR]
                       [--jobs N] [--list]

Each case gets a fresh work directory WORK holding:
  model/    what the case writes (the model and its side files)
  outside/  files no command may touch (a stand-in for the user's other files)
  home/, tmp/  HOME and TMPDIR of every command
and its steps run in order with WORK as the working directory. For every command:
  - it must end by exit(), never by a signal, and never with exit 1 (internal error);
  - the exit code and the message substrings must be the ones the step lists;
  - it must finish within the case's timeout (60 s: the issue's hang bound) and peak
    below 2 GiB resident (its own and its children's, from wait4);
and after the last step nothing under WORK outside {out} (and the paths a step
declares) may have been created, changed or removed, and no staging directory
("*.stitchopt-tmp-*", "*.stitchopt-old-*") may remain. Prints "N passed, M failed".
"""
import argparse
import hashlib
import importlib.util
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from case import Case, Step  # noqa: E402  (the dataclasses the case modules use)

MEMORY_LIMIT_BYTES = 2 << 30
STAGING = re.compile(r"\.stitchopt-(tmp|old)-")


# The case files whose emulated runs share a build cache (case.py, shared_build_cache).
SHARED_BUILD_CACHE = {"cases_codegen", "cases_names", "cases_numerics", "cases_shapes"}


def load_cases():
    cases = []
    for path in sorted(HERE.glob("cases_*.py")):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for case in module.CASES:
            case.shared_build_cache = path.stem in SHARED_BUILD_CACHE
        cases.extend(module.CASES)
    names = [case.name for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        sys.exit(f"duplicate case names: {duplicates}")
    return cases


def snapshot(root, skip):
    """path -> (kind, mode, content digest or link target) for everything under root
    except the paths in `skip` (and their contents)."""
    state = {}
    for directory, subdirectories, files in os.walk(root, followlinks=False):
        directory = Path(directory)
        kept = []
        for name in subdirectories:
            path = directory / name
            relative = path.relative_to(root)
            if any(relative == s or s in relative.parents for s in skip):
                continue
            if path.is_symlink():
                state[str(relative)] = ("link", 0, os.readlink(path))
                continue
            state[str(relative)] = ("dir", path.lstat().st_mode, "")
            kept.append(name)
        subdirectories[:] = kept
        for name in files:
            path = directory / name
            relative = path.relative_to(root)
            if any(relative == s or s in relative.parents for s in skip):
                continue
            info = path.lstat()
            if path.is_symlink():
                state[str(relative)] = ("link", 0, os.readlink(path))
            else:
                digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else ""
                state[str(relative)] = ("file", info.st_mode, digest)
    return state


def staging_leftovers(root):
    found = []
    for directory, subdirectories, files in os.walk(root):
        for name in subdirectories + files:
            if STAGING.search(name):
                found.append(str(Path(directory, name).relative_to(root)))
    return found


def run_command(argv, cwd, env, timeout):
    """(returncode, stdout, stderr, seconds, peak RSS bytes, timed out). The command
    runs in its own process group so a timeout kills its children too."""
    start = time.monotonic()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)
    output = {}

    def drain(name, stream):
        output[name] = stream.read()

    readers = [threading.Thread(target=drain, args=("out", process.stdout)),
               threading.Thread(target=drain, args=("err", process.stderr))]
    for reader in readers:
        reader.start()
    timed_out = False
    deadline = start + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid != 0:
            break
        if time.monotonic() > deadline:
            timed_out = True
            os.killpg(process.pid, signal.SIGKILL)
            pid, status, usage = os.wait4(process.pid, 0)
            break
        time.sleep(0.02)
    for reader in readers:
        reader.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - start
    # ru_maxrss of wait4 is the process's own peak; the children's peak (the C++
    # compiler under run --emulate) is bounded separately by the same limit.
    rss = usage.ru_maxrss * 1024
    return (process.returncode, output["out"].decode(errors="replace"),
            output["err"].decode(errors="replace"), seconds, rss, timed_out)


def run_case(case, binary, root):
    """Returns a list of failure strings (empty: passed) and a log."""
    work = root / case.name
    if work.exists():
        shutil.rmtree(work)
    (work / "model").mkdir(parents=True)
    (work / "home").mkdir()
    (work / "tmp").mkdir()
    outside = work / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("the user's file: must survive every run\n")
    (outside / "sub").mkdir()
    (outside / "sub" / "data.bin").write_bytes(bytes(range(256)))
    model = case.write(work / "model")
    out = work / "out"
    # Without the opt-in build cache: nothing outside OUT is written by default. The
    # cases that share one have it outside WORK (case.py, shared_build_cache).
    env = {k: v for k, v in os.environ.items() if k != "STITCH_BUILD_CACHE"}
    if case.shared_build_cache:
        env["STITCH_BUILD_CACHE"] = str(root / "shared_build_cache")
    env.update(HOME=str(work / "home"), TMPDIR=str(work / "tmp"))
    skip = {Path("out")}
    for step in case.steps:
        for path in step.may_change:
            skip.add(Path(path))
    before_state = snapshot(work, skip)
    failures, log = [], []
    placeholders = {"model": str(model), "model_dir": str(model.parent), "out": str(out),
                    "work": str(work)}
    for index, step in enumerate(case.steps):
        label = f"{case.name} step {index + 1}"
        if step.before is not None:
            step.before(work)
        argv = [binary] + [arg.format(**placeholders) for arg in step.argv]
        step_env = dict(env, **{key: value.format(**placeholders)
                                for key, value in step.env.items()})
        code, stdout, stderr, seconds, rss, timed_out = run_command(
            argv, work / step.cwd, step_env, case.timeout)
        log.append(f"$ {' '.join(argv)}\n  exit {code}, {seconds:.1f} s, "
                   f"{rss / 2**20:.0f} MiB\n{stderr[-2000:]}")
        if timed_out:
            failures.append(f"{label}: still running after {case.timeout} s (killed)")
            break
        if code < 0:
            failures.append(f"{label}: killed by signal {-code} ({signal.Signals(-code).name})")
        elif code == 1:
            failures.append(f"{label}: exit 1 (internal error): {stderr.strip()[-400:]}")
        elif code != step.exit:
            failures.append(f"{label}: exit {code}, want {step.exit}: {stderr.strip()[-400:]}")
        for text in step.message:
            if text not in stderr and text not in stdout:
                failures.append(f"{label}: output lacks {text!r}: {stderr.strip()[-400:]}")
        if rss > MEMORY_LIMIT_BYTES:
            failures.append(f"{label}: peak RSS {rss / 2**20:.0f} MiB is over 2 GiB")
        if step.check is not None:
            try:
                why = step.check(work, subprocess.CompletedProcess(argv, code, stdout, stderr))
            except Exception as error:  # a check that cannot read what it expects fails
                why = f"check raised {error!r}"
            if why:
                failures.append(f"{label}: {why}")
    after_state = snapshot(work, skip)
    for path in sorted(set(before_state) | set(after_state)):
        if path.startswith("tmp") and path != "tmp" and path not in before_state:
            failures.append(f"{case.name}: left a temporary file {path}")
        elif before_state.get(path) != after_state.get(path):
            what = ("created" if path not in before_state
                    else "removed" if path not in after_state else "changed")
            failures.append(f"{case.name}: {what} {path} outside the output directory")
    for path in staging_leftovers(work):
        failures.append(f"{case.name}: staging directory left behind: {path}")
    return failures, "\n".join(log)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--only", nargs="*", default=[])
    parser.add_argument("--keep", help="work in this directory and keep it")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    cases = load_cases()
    if args.list:
        for case in cases:
            print(f"{case.name:32} {case.finding}")
        return 0
    if args.only:
        unknown = set(args.only) - {case.name for case in cases}
        if unknown:
            sys.exit(f"no such case: {sorted(unknown)}")
        cases = [case for case in cases if case.name in args.only]
    binary = str(Path(args.stitchopt).resolve())
    root = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    # A crashing case must not leave core files in its work directory.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(lambda case: (case, *run_case(case, binary, root)), cases))
    finally:
        # A case that raises (its set-up found the compiler's output missing) must not
        # leave the cases' outputs behind either.
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    failed = 0
    for case, failures, log in results:
        if failures:
            failed += 1
            print(f"FAIL {case.name} ({case.finding})")
            for failure in failures:
                print(f"  {failure}")
            print("  " + log.replace("\n", "\n  "))
        else:
            print(f"ok   {case.name}")
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

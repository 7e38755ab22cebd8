#!/usr/bin/env python3
"""Fuzz smoke run that tries the same inputs on every machine.

Usage: smoke.py FUZZER --corpus DIR [--corpus DIR ...] --work DIR
                [--mutants N] [--seed S] [FUZZER FLAG ...]

A libFuzzer run with a fixed -seed and -runs is not the same run everywhere: float
results and time limits steer coverage, coverage steers the mutations, so another
CPU or a loaded machine meets other inputs (issue 36: a fresh clone failed on an
input the developers' machine never reached). So CI does not mutate by coverage. It
runs the fuzz target once on each of:
  - every file of the corpus directories (the seeds and the recorded regressions);
  - N mutants of them made by a seeded generator that sees only bytes (bit flips,
    byte sets, inserted, erased and duplicated runs, splices, truncations), never
    the target's coverage: the same N files on every machine.
libFuzzer executes each file given on its command line once, without mutating it.

When an input fails, the script prints its path, its bytes (base64) and the command
that reproduces it, and keeps it as WORK/failing-input. Exit 0 when every input
passes, 1 when one fails, 77 (ctest: skipped) when FUZZER is not built.
Coverage-guided campaigns stay what they are, long runs by hand (docs/testing.md).
"""
import argparse
import base64
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

MAX_LENGTH = 65536
INTERESTING = (0x00, 0x01, 0x7F, 0x80, 0xFF)


def mutate(data, rng, seeds):
    """One mutation of `data`, chosen and placed by `rng` alone."""
    data = bytearray(data)
    if not data:
        return bytearray(rng.randbytes(rng.randint(1, 256)))
    choice = rng.randrange(7)
    at = rng.randrange(len(data))
    if choice == 0:
        data[at] ^= 1 << rng.randrange(8)
    elif choice == 1:
        data[at] = rng.choice(INTERESTING) if rng.random() < 0.5 else rng.randrange(256)
    elif choice == 2:
        data[at:at] = rng.randbytes(rng.randint(1, 16))
    elif choice == 3:
        del data[at:at + rng.randint(1, 16)]
    elif choice == 4:
        length = rng.randint(1, 32)
        data[at:at] = data[at:at + length]
    elif choice == 5:
        other = rng.choice(seeds)
        data = data[:at] + other[rng.randrange(len(other) + 1):]
    else:
        data = data[:at]
    return data[:MAX_LENGTH]


def make_inputs(corpora, count, seed, directory):
    files = sorted(path for corpus in corpora for path in Path(corpus).iterdir() if path.is_file())
    seeds = [path.read_bytes() for path in files]
    inputs, origins = [], {}
    for path, data in zip(files, seeds):
        target = directory / f"s-{path.name}"
        target.write_bytes(data)
        inputs.append(target)
    rng = random.Random(seed)
    for index in range(count):
        base = rng.randrange(len(seeds))
        data = seeds[base]
        for _ in range(rng.randint(1, 4)):
            data = mutate(data, rng, seeds)
        target = directory / f"m{index:05d}"
        target.write_bytes(bytes(data))
        inputs.append(target)
        origins[target.name] = files[base].name
    return inputs, origins


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("fuzzer")
    parser.add_argument("--corpus", action="append", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--mutants", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args, fuzzer_flags = parser.parse_known_args()
    fuzzer = Path(args.fuzzer)
    if not os.access(fuzzer, os.X_OK):
        print(f"SKIP: {fuzzer} not built (scripts/test.sh builds it when clang is installed)")
        return 77
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "inputs").mkdir(parents=True)
    inputs, origins = make_inputs(args.corpus, args.mutants, args.seed, work / "inputs")
    command = [str(fuzzer.resolve()), "-error_exitcode=1", "-timeout_exitcode=1",
               "-rss_limit_mb=2048", "-timeout=60", f"-artifact_prefix={work}/",
               *fuzzer_flags, *(str(path.relative_to(work)) for path in inputs)]
    result = subprocess.run(command, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    if result.returncode == 0:
        print(f"{fuzzer.name}: {len(inputs)} inputs passed ({len(inputs) - args.mutants} corpus "
              f"files, {args.mutants} mutants of seed {args.seed})")
        return 0
    running = [line[len("Running: "):] for line in result.stdout.splitlines()
               if line.startswith("Running: ")]
    print(result.stdout[-6000:])
    if not running:
        print(f"{fuzzer.name} failed before running any input (exit {result.returncode})")
        return 1
    failing = work / running[-1]
    kept = work / "failing-input"
    shutil.copyfile(failing, kept)
    data = failing.read_bytes()
    origin = f", a mutant of {origins[failing.name]}" if failing.name in origins else ""
    print(f"FAILED on {failing.name} ({len(data)} bytes{origin}), kept as {kept}")
    print(f"bytes (base64): {base64.b64encode(data).decode()}")
    print(f"reproduce: {fuzzer} {kept}   (or: base64 -d > input <<< '...'; {fuzzer.name} input)")
    return 1


if __name__ == "__main__":
    sys.exit(main())

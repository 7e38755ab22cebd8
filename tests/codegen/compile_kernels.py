#!/usr/bin/env python3
"""Every emitted kernel compiles with nvcc (sm_80, sm_90) and NVRTC without a warning.

For each kernels/ directory (given with
--kernels-dir, or written by `stitchopt MODEL -o WORK/NAME` for every model of
--models, with the manifest's input shapes as emulated_kernels.py uses them: see
model_outputs.py), every .cu is compiled
  nvcc -c -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90
       -Werror all-warnings -Xptxas -v,-warn-spills -I kernels/ -I emit/cuda
(host launchers once, device code for each arch; -Werror all-warnings also turns ptxas's spill
warning into an error), up to UNIT_FILES files per nvcc run as a unity unit, from one
directory or from several with the same prelude (compile_unit: each entry function's
figures go to the one file that names it; a unit that fails or warns is compiled file
by file, so the report names the file), and each file alone, with --nvrtc-check, by
  stitch_nvrtc_check FILE.cu --arch sm_XX -I kernels/ -I emit/cuda
ptxas's -v lines give, per kernel and arch, the registers (the most of its entry
functions), the spill store/load bytes (summed) and the static shared memory (the
most), printed as a table, as emit/ptxas_stats.h computes them for the report.

A kernel fails when a compiler exits non-zero or prints a warning. Exits 1 on any
failure, 2 on bad usage, 77 (ctest's skip code) when nvcc is not installed or when
no model produced kernels/ and --allow-missing-kernels is given.

Usage: compile_kernels.py [--kernels-dir DIR]... [--stitchopt PATH --models DIR
                          [--model NAME]...] [--nvrtc-check PATH] [--nvcc PATH]
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_outputs import (EMU_DIR, REDUCED_SHAPES, Failure, exit_status,  # noqa: E402
                           manifest_entries, run_stitchopt)

ARCHES = ("sm_80", "sm_90")

ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
PROPERTIES = re.compile(r"Function properties for (\S+)")
SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
REGISTERS = re.compile(r"Used (\d+) registers")
SHARED = re.compile(r"(\d+) bytes smem")


def parse_ptxas(text):
    """Per entry function: {function, arch, registers, spill_store, spill_load, smem}."""
    functions, properties_of = [], None
    for line in text.splitlines():
        match = ENTRY.search(line)
        if match:
            functions.append({"function": match[1], "arch": match[2], "registers": None,
                              "spill_store": 0, "spill_load": 0, "smem": 0})
            properties_of = None
            continue
        match = PROPERTIES.search(line)
        if match:
            properties_of = match[1]
            continue
        if not functions:
            continue
        current = functions[-1]
        match = SPILLS.search(line)
        if match and properties_of == current["function"]:
            current["spill_store"], current["spill_load"] = int(match[1]), int(match[2])
            continue
        match = REGISTERS.search(line)
        if match:
            current["registers"] = int(match[1])
            shared = SHARED.search(line)
            current["smem"] = int(shared[1]) if shared else 0
    return functions


def natural_key(path):
    """stitch_k2 before stitch_k10."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def has_warning(text):
    return re.search(r"\bwarning\b", text, re.IGNORECASE) is not None


def nvcc_command(args, kernels_dir, source, obj):
    """nvcc for every arch of ARCHES in one run (-gencode each: the host code is compiled
    once, ptxas names each entry function's arch), warnings as errors."""
    gencode = []
    for arch in ARCHES:
        gencode += ["-gencode", f"arch=compute_{arch[3:]},code={arch}"]
    return ([args.nvcc, "-c"] + gencode + ["-Werror", "all-warnings", "-Xptxas",
                                           "-v,-warn-spills", "-I", kernels_dir, "-I", EMU_DIR,
                                           "-o", obj, source], " ".join(gencode))


def arch_rows(functions, proc, output, gencode):
    """[(row dict, [problems])] per arch of ARCHES from one nvcc run's entry functions."""
    results = []
    for arch in ARCHES:
        of_arch = [f for f in functions if f["arch"] == arch]
        row = {"arch": arch, "registers": max((f["registers"] or 0 for f in of_arch), default=0),
               "spill_store": sum(f["spill_store"] for f in of_arch),
               "spill_load": sum(f["spill_load"] for f in of_arch),
               "smem": max((f["smem"] for f in of_arch), default=0),
               "entries": len(of_arch)}
        problems = []
        if proc.returncode != 0:
            problems.append(f"nvcc {gencode} exit {proc.returncode}:\n{output.strip()[-3000:]}")
        elif has_warning(output):
            problems.append(f"nvcc {gencode} warns:\n{output.strip()[-3000:]}")
        elif any(f["registers"] is None for f in of_arch):
            problems.append(f"nvcc -arch={arch}: ptxas printed no register count")
        results.append((row, problems))
    return results


def nvrtc_problems(args, kernels_dir, cu, arch):
    """NVRTC on one kernel file for one arch (device half only, as at run time)."""
    if not args.nvrtc_check:
        return []
    nvrtc = subprocess.run([args.nvrtc_check, cu, "--arch", arch, "-I", kernels_dir, "-I", EMU_DIR],
                           capture_output=True, text=True, timeout=args.timeout)
    output = (nvrtc.stdout + nvrtc.stderr).strip()
    if nvrtc.returncode != 0:
        return [f"NVRTC --arch {arch} exit {nvrtc.returncode}:\n{output[-3000:]}"]
    if has_warning(output):
        return [f"NVRTC --arch {arch} warns:\n{output[-3000:]}"]
    return []


def compile_one(args, kernels_dir, cu, work):
    """[(row dict, problem or None)] for one .cu, one per arch of ARCHES: nvcc alone on
    the file, NVRTC per arch."""
    obj = os.path.join(work, f"{os.path.basename(cu)}.o")
    command, gencode = nvcc_command(args, kernels_dir, cu, obj)
    proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    output = proc.stdout + proc.stderr
    rows = arch_rows(parse_ptxas(output), proc, output, gencode)
    return [(row, "\n".join(problems + nvrtc_problems(args, kernels_dir, cu, arch)) or None)
            for (row, problems), arch in zip(rows, ARCHES)]


def owner(function, texts):
    """The index of the kernel file that defines an entry function: the one file whose
    text names it (a definition or launch "NAME(" or "NAME<<<"), or None when no file
    or more than one does."""
    pattern = re.compile(r"\b" + re.escape(function) + r"\s*(\(|<<<)")
    found = [i for i, text in enumerate(texts) if pattern.search(text)]
    return found[0] if len(found) == 1 else None


def compile_unit(args, unit, work, index):
    """{file: [(row, problem)] per arch} for the files of one unit ([(kernels dir,
    file)], from one directory or from several whose preludes are the same and whose
    file names differ): copied with that prelude into WORK/unit_<index>/ and compiled
    by nvcc as one unity translation unit (nvcc's cost is per run: 8 small kernels
    take 4.4 s together, 31 s one by one), each entry function's ptxas figures given
    to the one file that names it. When that unit fails, warns or has an entry
    function no file claims, each file is compiled alone in its own directory
    instead, so a problem is reported for the file that has it. NVRTC still compiles
    each file alone: a file that needs an include another file of the unit brought
    fails there."""
    if len(unit) == 1:
        kernels_dir, cu = unit[0]
        return {cu: compile_one(args, kernels_dir, cu, work)}
    staging = os.path.join(work, f"unit_{index}")
    os.makedirs(staging)
    shutil.copy(prelude_of(unit[0][0]), staging)
    texts = []
    with open(os.path.join(staging, "unity.cu"), "w") as handle:
        for _, cu in unit:
            with open(cu, errors="replace") as source:
                texts.append(source.read())
            shutil.copy(cu, staging)
            handle.write(f'#include "{os.path.basename(cu)}"\n')
    command, gencode = nvcc_command(args, staging, os.path.join(staging, "unity.cu"),
                                    os.path.join(staging, "unity.o"))
    proc = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
    output = proc.stdout + proc.stderr
    functions = parse_ptxas(output)
    owners = [owner(f["function"], texts) for f in functions]
    if proc.returncode != 0 or has_warning(output) or None in owners or \
            any(f["registers"] is None for f in functions):
        return {cu: compile_one(args, kernels_dir, cu, work) for kernels_dir, cu in unit}
    results = {}
    for index, (kernels_dir, cu) in enumerate(unit):
        mine = [f for f, o in zip(functions, owners) if o == index]
        rows = arch_rows(mine, proc, output, gencode)
        results[cu] = [(row, "\n".join(problems + nvrtc_problems(args, kernels_dir, cu, arch))
                        or None) for (row, problems), arch in zip(rows, ARCHES)]
    return results


# At most this many kernel files per unity unit, so that the units still spread over
# the cores.
UNIT_FILES = 12
PRELUDE = "stitch_prelude.cuh"


def prelude_of(kernels_dir):
    """The stitch_prelude.cuh the files of a directory include: their own, else the
    source tree's (-I emit/cuda; the golden files have none beside them)."""
    for directory in (kernels_dir, EMU_DIR):
        if os.path.isfile(os.path.join(directory, PRELUDE)):
            return os.path.join(directory, PRELUDE)
    return None


def split_units(files, jobs):
    """[[(kernels dir, file)]]: the files in units of at most UNIT_FILES, at least
    `jobs` units when there are that many files. A unit's files share one prelude
    text (prelude_of their directories) and have distinct file names (a file's name
    is its kernel's, which prefixes every name it defines); files without a prelude
    compile alone."""
    prelude_texts = {}
    for _, kernels_dir, _ in files:
        if kernels_dir not in prelude_texts:
            prelude, text = prelude_of(kernels_dir), None
            if prelude:
                with open(prelude, "rb") as handle:
                    text = handle.read()
            prelude_texts[kernels_dir] = text
    groups = {}
    for _, kernels_dir, cu in files:
        groups.setdefault(prelude_texts[kernels_dir], []).append((kernels_dir, cu))
    units = []
    for key, members in groups.items():
        if key is None:
            units += [[member] for member in members]
            continue
        size = max(1, min(UNIT_FILES, -(-len(members) // max(1, jobs))))
        mine = []
        for member in members:
            name = os.path.basename(member[1])
            unit = next((u for u in mine if len(u) < size and
                         all(os.path.basename(cu) != name for _, cu in u)), None)
            if unit is None:
                unit = []
                mine.append(unit)
            unit.append(member)
        units += mine
    return units


def kernels_dirs_from_models(args, work):
    """[(label, kernels dir)] for every selected model; missing kernels/ are listed."""
    found, missing = [], []
    for entry in manifest_entries(args.models, args.model):
        _, out_dir = run_stitchopt(args.stitchopt, args.models, entry,
                                   REDUCED_SHAPES.get(entry["name"], {}), work, args.timeout)
        kernels_dir = os.path.join(out_dir, "kernels")
        if os.path.isdir(kernels_dir):
            found.append((entry["name"], kernels_dir))
        else:
            missing.append(entry["name"])
    return found, missing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels-dir", action="append", default=[])
    parser.add_argument("--stitchopt")
    parser.add_argument("--models")
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--nvcc", default=os.environ.get("CUDACXX") or
                        shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc")
    parser.add_argument("--nvrtc-check", help="stitch_nvrtc_check (tests/tools/nvrtc_check.cc)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument("--allow-missing-kernels", action="store_true")
    args = parser.parse_args()
    if not args.kernels_dir and not args.models:
        parser.error("give --kernels-dir or --models")
    if args.models and not args.stitchopt:
        parser.error("--models needs --stitchopt")
    if not os.path.isfile(args.nvcc):
        print(f"SKIP: nvcc not found ({args.nvcc}; set CUDACXX or --nvcc)")
        return 77

    work = tempfile.mkdtemp(prefix="stitch_compile_kernels_")
    failures, missing = [], []
    try:
        directories = [(os.path.basename(os.path.dirname(os.path.abspath(d))), d)
                       for d in args.kernels_dir]
        if args.models:
            try:
                found, missing = kernels_dirs_from_models(args, work)
            except (Failure, subprocess.TimeoutExpired) as error:
                failures.append(f"stitchopt: {error}")
                found = []
            directories += found
        files = []
        for label, kernels_dir in directories:
            for cu in sorted(glob.glob(os.path.join(kernels_dir, "*.cu")), key=natural_key):
                files.append((label, kernels_dir, cu))
        per_file = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            for unit_results in pool.map(lambda job: compile_unit(args, job[1], work, job[0]),
                                         enumerate(split_units(files, args.jobs))):
                per_file.update(unit_results)
        jobs = [(label, kernels_dir, cu, arch)
                for label, kernels_dir, cu in files for arch in ARCHES]
        results = [result for _, _, cu in files for result in per_file[cu]]
    finally:
        shutil.rmtree(work, ignore_errors=True)

    header = f"{'model':<20} {'kernel':<28} {'arch':<6} {'regs':>5} {'spill st':>9} " \
             f"{'spill ld':>9} {'smem':>7}  status"
    print(header)
    print("-" * len(header))
    for (label, _, cu, arch), (row, problem) in zip(jobs, results):
        kernel = os.path.splitext(os.path.basename(cu))[0]
        status = "ok" if problem is None else "FAIL"
        print(f"{label:<20} {kernel:<28} {arch:<6} {row['registers']:>5} "
              f"{row['spill_store']:>9} {row['spill_load']:>9} {row['smem']:>7}  {status}")
        if problem:
            failures.append(f"{label} {kernel}: {problem}")
    for failure in failures:
        print(f"FAIL {failure}")
    checked = len({(label, cu) for label, _, cu, _ in jobs})
    print(f"{checked} kernels x {len(ARCHES)} arches, nvcc" +
          (" + NVRTC" if args.nvrtc_check else " (no NVRTC check: --nvrtc-check not given)") +
          f": {len(failures)} failed")
    return exit_status(len(failures), len(jobs), missing, args.allow_missing_kernels,
                       "no .cu file found")


if __name__ == "__main__":
    sys.exit(main())

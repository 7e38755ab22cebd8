#!/usr/bin/env python3
"""Issue 38's GPU checks of the runtime library, on a lent GPU machine, over the stage
bench/gpu/prepare.py wrote (carried as build/gpu) after bench/gpu/device_run.sh
compiled STAGE/out/:

    python3 bench/gpu/api_check.py [STAGE] [--only name,name] [--iterations 200]

1. Builds the Python package's extension module for this machine's python3 against
   STAGE/lib/libstitchopt_runtime.so (bench/gpu/python_module/) and lays the package
   out in /tmp/stitchopt_py/stitchopt.
2. For every fused output in STAGE/out/ (not *_unfused, *_noattn, ...): seeded inputs
   (models/manifest.json's ranges for the bundled models), as torch CUDA tensors,
   through stitchopt.InferenceSession(backend="gpu"); outputs checked against the
   same inputs through the reference backend (max |a-b| / max |b| <= --tolerance);
   then the time of one call with CUDA-graph replay (CUDA events on torch's stream
   around each call, the median of --iterations after a warm-up) and its launch mode.
3. STAGE/bin/session_overhead --backend gpu on the same outputs: the host time per call
   beyond the steps.
4. Sessions opened and closed: device memory (cudaMemGetInfo through torch) before and
   after five cycles.
`--backend emulated` is a dry run of the script without a GPU (numpy inputs, the
emulated kernels, wall-clock times, no device-memory check). Prints one table row per
model; the bench --graph times are in device_run.sh's
bench.log (bench/gpu/compare.py). Exit 1 on any mismatch or error.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("_unfused", "_noattn", "_nostencils", "_notiles", "_noepilogue")


def build_package(stage):
    build = Path("/tmp/stitchopt_py_build")
    package = Path("/tmp/stitchopt_py/stitchopt")
    subprocess.run(["cmake", "-S", str(ROOT / "bench" / "gpu" / "python_module"), "-B", str(build),
                    "-G", "Ninja", f"-DSTITCH_ROOT={ROOT}", f"-DPython_EXECUTABLE={sys.executable}",
                    f"-DSTITCH_RUNTIME_LIBRARY={stage / 'lib' / 'libstitchopt_runtime.so'}"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", str(build)], check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(package, ignore_errors=True)
    package.mkdir(parents=True)
    for source in (ROOT / "runtime_stub" / "python" / "stitchopt").glob("*.py"):
        shutil.copy2(source, package / source.name)
    for module in build.glob("_stitchopt*.so"):
        shutil.copy2(module, package / module.name)
    sys.path.insert(0, str(package.parent))


def feeds_for(session, entry):
    rng = np.random.default_rng(0)
    ranges = {spec["name"]: spec.get("range") for spec in (entry or {}).get("inputs", [])}
    feeds = {}
    for info in session.get_inputs():
        if info.type == "tensor(float)":
            feeds[info.name] = rng.standard_normal(info.shape).astype(np.float32)
        elif info.type == "tensor(bool)":
            feeds[info.name] = rng.integers(0, 2, info.shape).astype(np.bool_)
        else:
            low, high = ranges.get(info.name) or (0, 2)
            feeds[info.name] = rng.integers(low, high, info.shape).astype(np.int64)
    return feeds


def timed_call(torch, run):
    """Milliseconds of one call: CUDA events on torch's stream around it, or (torch None,
    the CPU dry run) the wall clock."""
    if torch is None:
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) * 1e3
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop)


def check_one(stitchopt, torch, out, entry, args):
    session = stitchopt.InferenceSession(out, backend=args.backend)
    feeds = feeds_for(session, entry)
    reference = stitchopt.InferenceSession(out, backend="reference").run(None, feeds)
    tensors = feeds if torch is None else {
        name: torch.from_numpy(value).cuda() for name, value in feeds.items()}
    got = session.run(None, tensors)
    worst = 0.0
    for a, b in zip(got, reference):
        a = (a if torch is None else a.cpu().numpy()).astype(np.float64)
        scale = max(float(np.max(np.abs(b))) if b.size else 0.0, 1e-30)
        worst = max(worst, float(np.max(np.abs(a - b))) / scale if b.size else 0.0)
    for _ in range(args.warmup):
        session.run(None, tensors)
    times = sorted(timed_call(torch, lambda: session.run(None, tensors))
                   for _ in range(args.iterations))
    return worst, times[len(times) // 2], session.launch_mode


def lifetime(stitchopt, torch, out):
    """Device bytes fewer free after five open/run/close cycles (after a first one, which
    loads the kernels and the CUDA libraries for good)."""
    def cycle():
        session = stitchopt.InferenceSession(out, backend="gpu")
        session.run(None, feeds_for(session, None))
        session.close()
    cycle()
    torch.cuda.synchronize()
    before = torch.cuda.mem_get_info()[0]
    for _ in range(5):
        cycle()
    torch.cuda.synchronize()
    return before - torch.cuda.mem_get_info()[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stage", nargs="?", default="build/gpu")
    parser.add_argument("--only", help="comma-separated output names")
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--backend", default="gpu",
                        help="emulated: a dry run of this script on a machine without a GPU "
                             "(numpy inputs, wall-clock times)")
    args = parser.parse_args()
    stage = Path(args.stage).resolve()
    os.environ["STITCH_RUNTIME_CUDA"] = str(stage / "lib" / "libstitch_runtime_cuda.so")
    build_package(stage)
    import stitchopt
    torch = None
    if args.backend == "gpu":
        import torch
    manifest = {m["name"]: m for m in json.loads((ROOT / "models" / "manifest.json").read_text())
                ["models"]}
    names = sorted(p.name for p in (stage / "out").iterdir()
                   if p.is_dir() and not p.name.endswith(VARIANTS))
    if args.only:
        names = [n for n in names if n in args.only.split(",")]
    failures = 0
    print("| model | max rel err vs reference | API ms per call (median) | launch mode |")
    print("| --- | ---: | ---: | --- |")
    for name in names:
        try:
            worst, ms, mode = check_one(stitchopt, torch, str(stage / "out" / name),
                                        manifest.get(name), args)
        except (ValueError, RuntimeError) as error:
            print(f"| {name} | error: {error} | | |")
            failures += 1
            continue
        failures += worst > args.tolerance
        print(f"| {name} | {worst:.2e} | {ms:.4f} | {mode} |", flush=True)
    overhead = subprocess.run([str(stage / "bin" / "session_overhead"), "--backend", args.backend,
                               *[str(stage / "out" / n) for n in names]],
                              capture_output=True, text=True)
    print(overhead.stdout + overhead.stderr)
    if names and torch is not None:
        leaked = lifetime(stitchopt, torch, str(stage / "out" / names[0]))
        print(f"device memory after 5 open/run/close cycles of {names[0]}: {leaked} bytes "
              f"fewer free")
        failures += leaked > (1 << 20)
    return 1 if failures or overhead.returncode else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Stages what bench/gpu/device_run.sh needs on a lent GPU machine, which has CUDA but
not Debian's ONNX, protobuf or GLPK, and cannot install anything:

    .venv/bin/python bench/gpu/prepare.py [--stitchopt build/bin/stitchopt] [--stage build/gpu]
        [--estimates build/gpu_estimates]

- STAGE/bin/stitchopt and STAGE/bin/session_overhead (stripped) and STAGE/lib/: the
  CUDA plugin, libstitchopt_runtime.so (bench/gpu/api_check.py) and every shared
  library they need beyond the C/C++ runtime and CUDA's own (cuDNN and cuBLAS come
  from the GPU machine's wheels),
- STAGE/models/: the TransformerEncoder exports (bench/export_transformer_encoder.py,
  Debian's torch) at [8, 64, 256] and [32, 128, 256],
- STAGE/jobs.tsv: every bundled model fused and --unfused, and the encoders fused,
  --unfused and --no-attention (name, model, flags),
- with --precisions (issue 39): every bundled model and encoder also at --precision
  tf32, fp32x3, bf16 and fp16 (NAME_tf32, ...): `stitchopt run` checks each against the
  reference within its precision's tolerance on the device, and the bench times them
  beside the fp32 job,
- with --cnn: STAGE/models/cnn/, the CNN exports of tests/exports/export_torch.py
  (opset 17, static shapes), each fused, --no-stencils (depthwise/grouped convs and
  pools as cuDNN calls), --no-stencil-tiles (stencils reading global memory) and
  --unfused; --cnn-only stages those jobs alone,
- with --kernels (issue 17): STAGE/models/kernels/, bench/stencil_tiles.py's stencil
  stages at ImageNet sizes, each fused and --no-stencil-tiles, and the float16 blocks
  of tests/runtime/data/ (cuDNN graphs with pointwise epilogues), each fused and
  --no-epilogue; run them with VERBOSE_RUNS naming the fused float16 outputs, so that
  `stitchopt run -v` says whether each cuDNN graph found an engine on the device;
  --kernels-only stages those jobs alone,
- with --estimates: each job compiled here and profiled with `stitchopt profile
  --emulate` (the h100 profile): the estimates bench/gpu/compare.py puts beside the
  measured times.

The stage is build/ output (ignored): name it in the device tool's `carry`.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import profile_bundled  # noqa: E402  (nvdisasm_flags)

# Libraries the GPU machine has (or must supply itself): the C and C++ runtimes, zlib and
# CUDA's.
SYSTEM_PREFIXES = ("libc.so", "libm.so", "libdl.so", "librt.so", "libpthread.so", "ld-linux",
                   "libstdc++.so", "libgcc_s.so", "linux-vdso", "libcuda.so", "libcudart.so",
                   "libcublas", "libcudnn", "libnvrtc", "libnvJitLink", "libz.so")
ENCODER_SHAPES = [(8, 64), (32, 128)]


def shared_libraries(binary):
    """{name: path} of what `ldd binary` resolves, minus SYSTEM_PREFIXES."""
    found = {}
    for line in subprocess.run(["ldd", str(binary)], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>" and not parts[0].startswith(SYSTEM_PREFIXES):
            found[parts[0]] = parts[2]
    return found


# regnet_y_400mf (15.6 MB of weights) is left out: the device tool carries 64 MiB in all.
CNN_EXPORTS = ["mobile_blocks", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0",
               "convnext", "mnasnet0_5", "resnext50_32x4d"]


def cnn_jobs(stage):
    """The CNN exports, fused, with stencils off and unfused."""
    result = []
    for name in CNN_EXPORTS:
        path = os.path.relpath(stage / "models" / "cnn" / f"{name}_op17_static.onnx", ROOT)
        result.append((name, path, []))
        result.append((name + "_nostencils", path, ["--no-stencils"]))
        result.append((name + "_notiles", path, ["--no-stencil-tiles"]))
        result.append((name + "_unfused", path, ["--unfused"]))
    return result


def kernel_jobs(stage):
    """Stencil stages fused and with --no-stencil-tiles; the float16 library-epilogue
    blocks fused and with --no-epilogue (written into STAGE/models/kernels)."""
    import stencil_tiles  # bench/: the synthetic stencil stages
    directory = stage / "models" / "kernels"
    directory.mkdir()
    result = []
    for model in stencil_tiles.synthetic_models(str(directory)):
        path = os.path.relpath(model, ROOT)
        name = Path(model).stem
        result.append((name, path, []))
        result.append((name + "_notiles", path, ["--no-stencil-tiles"]))
    for model in sorted((ROOT / "tests" / "runtime" / "data").glob("f16_*.onnx")):
        shutil.copy2(model, directory / model.name)
        path = os.path.relpath(directory / model.name, ROOT)
        result.append((model.stem, path, []))
        result.append((model.stem + "_noepilogue", path, ["--no-epilogue"]))
    return result


def export_cnns(stage):
    """Exports CNN_EXPORTS with Debian's torch into STAGE/models/cnn (static, opset 17)."""
    work = stage / "models" / "cnn_all"
    subprocess.run(["/usr/bin/python3", str(ROOT / "tests" / "exports" / "export_torch.py"),
                    str(work), "--only", ",".join(CNN_EXPORTS)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (stage / "models" / "cnn").mkdir()
    for name in CNN_EXPORTS:
        shutil.copy2(work / f"{name}_op17_static.onnx", stage / "models" / "cnn")
    shutil.rmtree(work)


PRECISIONS = ("tf32", "fp32x3", "bf16", "fp16")


def precision_jobs(base_jobs):
    """Each fused job of `base_jobs` (not --unfused, not --no-attention) at every
    --precision other than fp32."""
    return [(f"{name}_{precision}", model, flags + [f"--precision={precision}"])
            for name, model, flags in base_jobs
            if not any(f in ("--unfused", "--no-attention") for f in flags)
            for precision in PRECISIONS]


def jobs(stage):
    """[(name, model path relative to ROOT, [flags])]."""
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text())
    result = []
    for model in manifest["models"]:
        flags = [f"--input-shape={flag}" for flag in model.get("input_shape_flags", [])]
        path = f"models/{model['file']}"
        result.append((model["name"], path, flags))
        result.append((model["name"] + "_unfused", path, flags + ["--unfused"]))
    for batch, sequence in ENCODER_SHAPES:
        name = f"encoder_{batch}x{sequence}"
        path = os.path.relpath(stage / "models" / f"{name}.onnx", ROOT)
        result.append((name, path, []))
        result.append((name + "_unfused", path, ["--unfused"]))
        result.append((name + "_noattn", path, ["--no-attention"]))
    return result


def estimate(stitchopt, estimates, job):
    name, model, flags = job
    out = estimates / name
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([stitchopt, str(ROOT / model), "-o", str(out), "-q", *flags], check=True)
    subprocess.run([stitchopt, "profile", str(out), "--emulate",
                    *profile_bundled.nvdisasm_flags()], check=True, stdout=subprocess.DEVNULL)
    return name


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stitchopt", default=str(ROOT / "build" / "bin" / "stitchopt"))
    parser.add_argument("--stage", default=str(ROOT / "build" / "gpu"))
    parser.add_argument("--estimates", help="also compile and profile every job here")
    parser.add_argument("--precisions", action="store_true",
                        help="also stage every fused job at tf32, fp32x3, bf16 and fp16")
    parser.add_argument("--cnn", action="store_true", help="also stage the CNN exports")
    parser.add_argument("--cnn-only", action="store_true", help="stage the CNN exports alone")
    parser.add_argument("--kernels", action="store_true",
                        help="also stage the stencil stages and the float16 epilogue blocks")
    parser.add_argument("--kernels-only", action="store_true",
                        help="stage the stencil stages and float16 epilogue blocks alone")
    args = parser.parse_args()
    stitchopt = Path(args.stitchopt).resolve()
    # Where stitchopt looks for it (runtime_stub/cuda_loader.cc): beside it, or ../lib.
    candidates = [directory / "libstitch_runtime_cuda.so"
                  for directory in (stitchopt.parent, stitchopt.parent.parent / "lib")]
    plugin = next((c for c in candidates if c.exists()), None)
    if plugin is None:
        sys.exit(f"no CUDA plugin beside {stitchopt}: build with the CUDA toolkit and cuDNN")
    stage = Path(args.stage).resolve()
    shutil.rmtree(stage, ignore_errors=True)
    for sub in ("bin", "lib", "models"):
        (stage / sub).mkdir(parents=True)
    shutil.copy2(stitchopt, stage / "bin" / "stitchopt")
    shutil.copy2(plugin, stage / "lib" / plugin.name)
    # The runtime library and the per-call overhead bench, for bench/gpu/api_check.py.
    runtime = stitchopt.parent.parent / "lib" / "libstitchopt_runtime.so"
    overhead = stitchopt.parent / "session_overhead"
    shutil.copy2(runtime, stage / "lib" / runtime.name)
    shutil.copy2(overhead, stage / "bin" / overhead.name)
    libraries = {**shared_libraries(stitchopt), **shared_libraries(plugin),
                 **shared_libraries(runtime), **shared_libraries(overhead)}
    for name, path in sorted(libraries.items()):
        shutil.copy2(path, stage / "lib" / name)
    subprocess.run(["strip", str(stage / "bin" / "stitchopt"), str(stage / "bin" / overhead.name),
                    *map(str, (stage / "lib").glob("*"))], check=True)
    all_jobs = []
    if not (args.cnn_only or args.kernels_only):
        for batch, sequence in ENCODER_SHAPES:
            subprocess.run(["/usr/bin/python3",
                            str(ROOT / "bench" / "export_transformer_encoder.py"),
                            str(stage / "models" / f"encoder_{batch}x{sequence}.onnx"),
                            "--batch", str(batch), "--sequence", str(sequence)],
                           check=True, stdout=subprocess.DEVNULL)
        all_jobs = jobs(stage)
        if args.precisions:
            all_jobs += precision_jobs(all_jobs)
    if args.cnn or args.cnn_only:
        export_cnns(stage)
        all_jobs += cnn_jobs(stage)
    if args.kernels or args.kernels_only:
        all_jobs += kernel_jobs(stage)
    (stage / "jobs.tsv").write_text(
        "".join(f"{name}\t{model}\t{' '.join(flags)}\n" for name, model, flags in all_jobs))
    size = sum(f.stat().st_size for f in stage.rglob("*") if f.is_file())
    print(f"staged {len(all_jobs)} jobs, {len(libraries)} libraries "
          f"({', '.join(sorted(libraries))}), {size / 2**20:.1f} MiB in {stage}")
    if args.estimates:
        estimates = Path(args.estimates).resolve()
        estimates.mkdir(parents=True, exist_ok=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
            for name in pool.map(lambda job: estimate(stitchopt, estimates, job), all_jobs):
                print(f"estimated {name}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

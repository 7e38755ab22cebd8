"""End-to-end tests of `stitchopt run`, `bench` and `calibrate` (runtime_stub/).

For bundled models: compile, then
  - `run OUT --cpu`: every step through the reference interpreter in the planned
    arena must match the step-by-step reference (this catches a memory plan that lets
    live tensors share bytes, or wrong argument binding);
  - `run OUT --emulate`: the generated kernels, compiled as C++ against the CUDA
    emulation layer and called through their extern "C" launchers in the planned
    arena, must match the reference;
  - a kernel edited after the compile is refused (exit 2: its sha256 is not
    kernels.json's); a deliberately broken kernel that kernels.json vouches for must
    make `run --emulate` exit 3 naming the output;
  - without a usable GPU: `run OUT` says so and falls back to the CPU (exit 0),
    `bench` and `calibrate` exit 4 with a message saying why, and write nothing;
  - a directory that is no stitchopt output, or a kernels.json whose signature does
    not match the node, is exit 2.
gpt2_block has a view step (an aliased buffer); mlp is also run unfused (--unfused:
every op its own generated kernel), the baseline `bench` compares with, and so is
rnn_unrolled, whose identical steps share single-op kernels (kernels.json shared_by).
Exit 0 when every check passes; one line per failure otherwise.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

MODELS = ["mlp", "word2vec", "bert", "gpt2_block", "resnet"]


def count_kernel_nodes(out):
    """Unfused nodes of report.json that launch a generated kernel."""
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    return sum(1 for node in report["unfused"] if node["codegen"] is not None)


def broken_kernel_failures(stitchopt, mlp, work):
    """A copy of mlp's OUT with its softmax kernel changed: refused while kernels.json
    does not vouch for it, caught by the reference once it does. Failure lines."""
    failures = []
    # A kernel that computes something else must be caught (an offset, not a factor:
    # softmax divides a factor away).
    broken = os.path.join(work, "mlp_broken")
    shutil.copytree(mlp, broken)
    # The softmax's kernel: the one that computes expf (the plan decides its name).
    kernel, source = None, ""
    for path in sorted(glob.glob(os.path.join(broken, "kernels", "*.cu"))):
        with open(path) as f:
            text = f.read()
        if "return expf(x);" in text:
            kernel, source = path, text
            break
    if kernel is None:
        failures.append("no mlp kernel has `return expf(x);` to break; update the test")
    else:
        with open(kernel, "w") as f:
            f.write(source.replace("return expf(x);", "return expf(x) + 0.25f;", 1))
        # Edited after the compile, it is refused before anything builds it...
        text = stitchopt("run", broken, "--emulate", expect=2)
        if "was edited after compilation" not in text:
            failures.append(f"edited kernel: not refused as edited:\n{text}")
        # ...and, as if the compiler had written it (kernels.json's sha256 of it
        # updated), caught by the comparison with the reference.
        manifest_path = os.path.join(broken, "kernels", "kernels.json")
        with open(manifest_path) as f:
            manifest = json.load(f)
        with open(kernel, "rb") as f:
            manifest["sources"][os.path.basename(kernel)] = hashlib.sha256(f.read()).hexdigest()
        with open(manifest_path, "w") as f:
            json.dump(manifest, f)
        text = stitchopt("run", broken, "--emulate", expect=3)
        if "MISMATCH" not in text:
            failures.append(f"broken kernel: no MISMATCH line:\n{text}")
        print("edited kernel refused; broken kernel caught")
    return failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stitchopt", required=True)
    parser.add_argument("--models", required=True)
    args = parser.parse_args()
    with open(os.path.join(args.models, "manifest.json")) as f:
        entries = {e["name"]: e for e in json.load(f)["models"]}
    failures = []

    def stitchopt(*argv, expect=0, timeout=600, env=None):
        proc = subprocess.run([args.stitchopt, *argv], capture_output=True, text=True,
                              timeout=timeout, env=env)
        text = proc.stdout + proc.stderr
        if proc.returncode != expect:
            failures.append(f"stitchopt {' '.join(argv)}: exit {proc.returncode}, expected {expect}:\n{text}")
        return text

    with tempfile.TemporaryDirectory() as work:
        outs = {}
        for name in MODELS:
            entry = entries[name]
            flags = [part for flag in entry["input_shape_flags"] for part in ("--input-shape", flag)]
            out = os.path.join(work, name)
            stitchopt(os.path.join(args.models, entry["file"]), "-o", out, "-q", *flags)
            outs[name] = out
        # The unfused baseline: every op its own single-op kernel (or library call).
        out = os.path.join(work, "mlp_unfused")
        stitchopt(os.path.join(args.models, entries["mlp"]["file"]), "-o", out, "-q", "--unfused")
        outs["mlp_unfused"] = out
        # Unfused, the unrolled RNN's identical steps launch shared single-op kernels
        # (kernels.json shared_by): each node must still find its kernel and match.
        entry = entries["rnn_unrolled"]
        flags = [part for flag in entry["input_shape_flags"] for part in ("--input-shape", flag)]
        out = os.path.join(work, "rnn_unrolled_unfused")
        stitchopt(os.path.join(args.models, entry["file"]), "-o", out, "-q", "--unfused", *flags)
        outs["rnn_unrolled_unfused"] = out
        with open(os.path.join(out, "kernels", "kernels.json")) as f:
            listed = json.load(f)["kernels"]
        shared = sum(len(k["shared_by"]) for k in listed)
        launching = count_kernel_nodes(out)
        if not shared or len(listed) + shared != launching:
            failures.append(f"rnn_unrolled --unfused: {len(listed)} kernels and {shared} shared "
                            f"launches for {launching} nodes that launch a generated kernel")

        for name, out in outs.items():
            for mode in ("--cpu", "--emulate"):
                text = stitchopt("run", out, mode)
                if "outputs match the reference interpreter" not in text:
                    failures.append(f"run {name} {mode}: no match line:\n{text}")
                peak = re.search(r"memory: peak ([0-9.]+) MiB .* one buffer per tensor: ([0-9.]+) MiB", text)
                if not peak or float(peak.group(1)) > float(peak.group(2)):
                    failures.append(f"run {name} {mode}: planned peak above one buffer per tensor:\n{text}")
                print(f"{name} {mode}: ok")

        failures += broken_kernel_failures(stitchopt, outs["mlp"], work)

        # $STITCH_BUILD_CACHE (opt-in): a second output directory copies the emulation
        # layer's object and precompiled header (bert has enough kernels for one) from
        # the cache the first one filled, and still matches; without the variable
        # nothing is written there.
        cache = os.path.join(work, "build_cache")
        uncached_env = {k: v for k, v in os.environ.items() if k != "STITCH_BUILD_CACHE"}
        cached_env = dict(uncached_env, STITCH_BUILD_CACHE=cache)
        first, second = os.path.join(work, "bert_cache_1"), os.path.join(work, "bert_cache_2")
        shutil.copytree(outs["bert"], first, ignore=shutil.ignore_patterns("emu_build"))
        shutil.copytree(outs["bert"], second, ignore=shutil.ignore_patterns("emu_build"))
        stitchopt("run", first, "--emulate", env=uncached_env)
        if os.path.exists(cache):
            failures.append(f"run without STITCH_BUILD_CACHE wrote {cache}")
        shutil.rmtree(os.path.join(first, "kernels", "emu_build"))
        stitchopt("run", first, "--emulate", env=cached_env)
        entries = sorted(os.listdir(cache)) if os.path.isdir(cache) else []
        if not any(e.endswith("-stitch_pch.h.gch") for e in entries) or \
                not any(e.endswith("-stitch_emu.cc.o") for e in entries):
            failures.append(f"STITCH_BUILD_CACHE holds {entries}: no precompiled header or "
                            "emulation object")
        text = stitchopt("run", second, "--emulate", "-v", env=cached_env)
        restored = text.count("from the build cache")
        if restored != 2 or "outputs match the reference interpreter" not in text:
            failures.append(f"second directory with STITCH_BUILD_CACHE: {restored} steps "
                            f"restored (expected 2) or no match:\n{text[-3000:]}")
        print("STITCH_BUILD_CACHE: the second directory restores 2 steps and matches")

        # kernels.json that does not match the node (a stale or edited directory).
        stale = os.path.join(work, "mlp_stale")
        shutil.copytree(outs["mlp"], stale)
        listing = os.path.join(stale, "kernels", "kernels.json")
        with open(listing) as f:
            kernels = json.load(f)
        kernels["kernels"][0]["inputs"][0]["shape"][0] += 1
        with open(listing, "w") as f:
            json.dump(kernels, f)
        text = stitchopt("run", stale, "--cpu", expect=2)
        if "kernels.json's inputs 0" not in text:
            failures.append(f"stale kernels.json: unclear message:\n{text}")

        probe = stitchopt("run", outs["mlp"])
        if "device: CPU" in probe:
            if "no GPU (" not in probe:
                failures.append(f"run without a GPU does not say why:\n{probe}")
            text = stitchopt("bench", outs["mlp"], expect=4)
            if "bench needs a GPU" not in text:
                failures.append(f"bench without a GPU: unclear message:\n{text}")
            profile = os.path.join(work, "profile.json")
            text = stitchopt("calibrate", "-o", profile, expect=4)
            if "calibrate needs a GPU" not in text or os.path.exists(profile):
                failures.append(f"calibrate without a GPU: unclear message or a file written:\n{text}")
            print("no GPU: run falls back, bench and calibrate exit 4")
        else:
            print("a GPU is usable: the no-GPU checks do not apply")

        text = stitchopt("run", work, expect=2)
        if "no model.fused.onnx" not in text:
            failures.append(f"run on a non-output directory: unclear message:\n{text}")

    for failure in failures:
        print("FAIL:", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

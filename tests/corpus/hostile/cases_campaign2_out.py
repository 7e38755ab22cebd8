"""The second hostile-input campaign's findings about what run, profile and the
build cache write and read (issue 36: R1-R3, R7, R8, W3-W5, W7, W9): nothing outside
OUT is ever written, through OUT or through the cache, and a cache or an output
directory someone else prepared is checked, not trusted."""
import json
import os
import shutil
from pathlib import Path

import numpy as np

from case import Case, Step
from cases_files import with_external
from models import fused_pair_model, writer

REPO = Path(__file__).resolve().parents[3]
COMPILE = Step(["{model}", "-o", "{out}"])
CACHE = {"STITCH_BUILD_CACHE": "{work}/cache"}
RUN = ["run", "{out}", "--emulate"]
PROFILE = ["profile", "{out}", "--emulate", "--no-instructions"]
MATCH = "all 1 outputs match"


def make_dir(name, mode=0o755):
    def before(work):
        (work / name).mkdir()
        os.chmod(work / name, mode)
    return before


def stays_empty(name):
    def check(work, _):
        left = sorted(p.name for p in (work / name).iterdir())
        return f"{name} holds {left}" if left else None
    return check


def cache_entry(work):
    entries = sorted((work / "cache").glob("*-stitch_emu.cc.o"))
    assert len(entries) == 1, entries
    return entries[0]


def corrupt_entry(work):
    entry = cache_entry(work)
    data = bytearray(entry.read_bytes())
    data[-100] ^= 0x40
    entry.write_bytes(bytes(data))
    shutil.rmtree(work / "out" / "kernels" / "emu_build", ignore_errors=True)


def link_entry(work):
    entry = cache_entry(work)
    entry.unlink()
    entry.symlink_to(work / "outside" / "notes.txt")
    shutil.rmtree(work / "out" / "kernels" / "emu_build", ignore_errors=True)


def rebuild_other(work):
    shutil.rmtree(work / "other" / "kernels" / "emu_build")


def shadowing_header(work):
    # Would stop any compile that includes <math.h> from OUT/kernels.
    (work / "out" / "kernels" / "math.h").write_text('#error "OUT/kernels/math.h was included"\n')


def plant_links(work):
    build = work / "out" / "kernels" / "emu_build"
    build.mkdir()
    notes = work / "outside" / "notes.txt"
    for name in ("stitch_emu.h", "stitch_emu.cc", "stitch_emu.cc.o", "stitch_emu.cc.log",
                 "libstitch_kernels_emu.so", "libstitch_kernels_emu.so.log"):
        (build / name).symlink_to(notes)
    os.link(work / "outside" / "sub" / "data.bin", build / "stitch_emu.cc.o.stamp")


def link_build_dir(work):
    (work / "out" / "kernels" / "emu_build").symlink_to(work / "outside" / "sub")


def link_kernels_dir(work):
    kernels = work / "out" / "kernels"
    shutil.copytree(kernels, work / "kernels_copy")
    shutil.rmtree(kernels)
    kernels.symlink_to(work / "kernels_copy")


def link_profile_outputs(work):
    notes = work / "outside" / "notes.txt"
    (work / "out" / "profile.json").symlink_to(notes)
    (work / "out" / "profile.json.tmp").symlink_to(notes)


def write_profile(name):
    def write(model_dir):
        profile = json.loads((REPO / "cost_model" / "profiles" / "h100.json").read_text())
        profile["name"] = name
        (model_dir / f"{name}.json").write_text(json.dumps(profile))
        path = model_dir / "model.onnx"
        path.write_bytes(fused_pair_model().SerializeToString())
        return path
    return write


def report_names(device):
    def before(work):
        (work / "out" / "device.json").unlink()
        report = work / "out" / "report.json"
        document = json.loads(report.read_text())
        document["device"]["name"] = device
        report.write_text(json.dumps(document, indent=2))
    return before


def device_json_to_dev_zero(work):
    device = work / "out" / "device.json"
    device.unlink()
    device.symlink_to("/dev/zero")


def profile_in_output(work):
    (work / "devdir").mkdir()
    shutil.copy(REPO / "cost_model" / "profiles" / "h100.json", work / "devdir" / "my.json")


def profile_kept(work, _):
    return None if (work / "devdir" / "my.json").is_file() else "--force deleted devdir/my.json"


def weights(model_dir):
    (model_dir / "weights.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())


def has_external_data(work, _):
    data = work / "out" / "model.fused.onnx.data"
    return None if data.is_file() else "no model.fused.onnx.data: the case tests nothing"


def stale_staging(work):
    # What a compile killed by SIGKILL leaves: its marker, and a process that is gone
    # (pid_max is at most 4194304, so this pid never runs).
    stale = work / "out.stitchopt-tmp-4194303"
    (stale / "kernels").mkdir(parents=True)
    (stale / ".stitchopt-staging").write_text("4194303\n")
    (stale / "kernels" / "stitch_k0.cu").write_text("// half-written\n")


def strip_kernels(work):
    import onnx
    path = work / "out" / "model.fused.onnx"
    model = onnx.load(str(path))
    kept = [entry for entry in model.metadata_props if entry.key != "stitchopt.kernels"]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    onnx.save(model, str(path))
    (work / "out" / "kernels" / "kernels.json").unlink()


CACHE_MAY_NOT_BE_USED = "may not be used: it is writable by group or others (mode 0777)"

CASES = [
    Case("build_cache_writable_by_others",
         "issue 36 R1: a 0777 build cache was used silently, entries of other users linked in",
         writer(fused_pair_model),
         [COMPILE,
          Step(RUN, before=make_dir("shared", 0o777), env={"STITCH_BUILD_CACHE": "{work}/shared"},
               message=(CACHE_MAY_NOT_BE_USED, "building without it", MATCH),
               may_change=("shared",), check=stays_empty("shared"))]),
    Case("build_cache_broken_entries",
         "issue 36 R1, W5: a cache entry was linked in unchecked; a corrupt one broke every run",
         writer(fused_pair_model),
         [COMPILE, Step(["{model}", "-o", "other"], may_change=("other",)),
          Step(["run", "other", "--emulate"], env=CACHE, may_change=("cache", "other"),
               message=(MATCH,)),
          Step(RUN, env=CACHE, before=corrupt_entry, may_change=("cache",),
               message=("does not match the checksum recorded when it was filled",
                        "compiling stitch_emu.cc.o instead", MATCH)),
          Step(["run", "other", "--emulate", "-v"], env=CACHE, before=rebuild_other,
               may_change=("cache", "other"), message=("from the build cache", MATCH)),
          Step(RUN, env=CACHE, before=link_entry, may_change=("cache",),
               message=("cannot be opened", "compiling stitch_emu.cc.o instead", MATCH))]),
    Case("build_cache_ignores_kernels_headers",
         "issue 36 R3: a header in OUT/kernels shadowed <math.h> and was replayed from the cache",
         writer(fused_pair_model),
         [COMPILE, Step(RUN, env=CACHE, before=shadowing_header, may_change=("cache",),
                        message=(MATCH,))]),
    Case("run_writes_through_no_planted_link",
         "issue 36 R8: run --emulate wrote through links planted in OUT/kernels/emu_build",
         writer(fused_pair_model),
         [COMPILE, Step(RUN, before=plant_links, message=(MATCH,))]),
    Case("run_build_dir_is_a_link",
         "issue 36 R8: run --emulate built into the directory OUT/kernels/emu_build led to",
         writer(fused_pair_model),
         [COMPILE, Step(RUN, before=link_build_dir, message=(MATCH,))]),
    Case("run_kernels_dir_is_a_link",
         "issue 36 R8: OUT/kernels as a link to elsewhere",
         writer(fused_pair_model),
         [COMPILE, Step(RUN, exit=2, before=link_kernels_dir, may_change=("kernels_copy",),
                        message=("symbolic link",))]),
    Case("profile_writes_through_no_planted_link",
         "issue 36 R8: profile wrote profile.json through a link planted in OUT",
         writer(fused_pair_model),
         [COMPILE, Step(PROFILE, before=link_profile_outputs, message=("wrote",))]),
    Case("profile_of_custom_device_output",
         "issue 36 W7: profile of an output compiled with --device FILE: 'no such device profile'",
         write_profile("my_gpu"),
         [Step(["{model}", "-o", "{out}", "--device", "{model_dir}/my_gpu.json"]),
          Step(PROFILE, message=("device: my_gpu",))]),
    Case("profile_report_names_a_path",
         "issue 36 R7: report.json's device name was opened as a path (/dev/zero, a FIFO)",
         writer(fused_pair_model),
         [COMPILE,
          Step(PROFILE, exit=2, before=report_names("/dev/zero"),
               message=("device.json is missing and report.json names no built-in device "
                        "profile",)),
          COMPILE,
          Step(PROFILE, exit=2, before=device_json_to_dev_zero, message=("symbolic link",))]),
    Case("force_keeps_device_profile",
         "issue 36 W4: --force deleted the --device profile the run read",
         writer(fused_pair_model),
         [Step(["{model}", "-o", "{work}/devdir", "--force", "--device", "{work}/devdir/my.json"],
               exit=2, before=profile_in_output, may_change=("devdir",),
               message=("an input of this run",), check=profile_kept)]),
    Case("recompile_output_with_external_data",
         "issue 36 W3: an earlier output holding model.fused.onnx.data was called foreign",
         with_external("weights.bin", weights),
         [Step(["{model}", "-o", "{out}"], check=has_external_data),
          Step(["{model}", "-o", "{out}"])]),
    Case("stale_staging_directory_swept",
         "issue 36 W9: OUT.stitchopt-tmp-PID of a killed compile was never removed",
         writer(fused_pair_model),
         [Step(["{model}", "-o", "{out}"], before=stale_staging)]),
    Case("run_emulate_checks_something",
         "issue 36 W11: metadata stripped and kernels.json deleted, run --emulate passed vacuously",
         writer(fused_pair_model),
         [COMPILE, Step(RUN, exit=2, before=strip_kernels,
                        message=("kernels/kernels.json is missing, so the kernel of fused node",))]),
    Case("runtime_numbers_in_range",
         "issue 36 W11: --seed -1 and 10^23 accepted; ranges printed as 0 to 1.797e308",
         writer(fused_pair_model),
         [COMPILE,
          Step(["run", "{out}", "--cpu", "--seed", "-1"], exit=2, message=("is not a seed",)),
          Step(["run", "{out}", "--cpu", "--seed", "99999999999999999999999"], exit=2,
               message=("use an integer from 0 to 18446744073709551615",)),
          Step(["bench", "{out}", "--iterations", "0"], exit=2,
               message=("Value 0 not in range 1 to 1000000",)),
          Step(["calibrate", "-o", ""], exit=2,
               message=("give the path of the profile .json file to write",))]),
]

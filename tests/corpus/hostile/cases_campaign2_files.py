"""Loaded files the second hostile-input campaign tampered with (issue 36 R9, R10, W8):
kernels.json fields of the wrong type or missing, an oversized kernels.json, device
profiles whose values are positive and finite but impossible, and --device paths that
are a FIFO or a link to /dev/zero. Each is refused with exit 2 naming the file and the
key, quickly and without reading more than the size cap."""
import json
import os
from pathlib import Path

from onnx import helper

from case import Case, Step
from models import F, make, vi

H100 = Path(__file__).resolve().parents[3] / "cost_model" / "profiles" / "h100.json"
RECOMPILE = "; recompile the model"


def softmax_model():
    return make([helper.make_node("Softmax", ["x"], ["y"], name="softmax", axis=-1),
                 helper.make_node("Neg", ["y"], ["z"], name="neg")],
                [vi("x", F, [4, 8])], [vi("z", F, [4, 8])])


def model_with_profiles(profiles):
    """A Case.write: the model, and each {file name: edit} as h100.json after edit(profile)."""
    def write(model_dir: Path) -> Path:
        for name, edit in profiles.items():
            profile = json.loads(H100.read_text())
            edit(profile)
            (model_dir / name).write_text(json.dumps(profile, indent=2))
        path = model_dir / "model.onnx"
        path.write_bytes(softmax_model().SerializeToString())
        return path
    return write


def setting(**values):
    def edit(profile):
        profile.update(values)
    return edit


def edit_kernel(edit):
    """A Step.before: edit(first kernel entry) in OUT/kernels/kernels.json."""
    def before(work):
        path = work / "out" / "kernels" / "kernels.json"
        document = json.loads(path.read_text())
        edit(document["kernels"][0])
        path.write_text(json.dumps(document, indent=2))
    return before


def assign(key, value):
    def edit(kernel):
        kernel[key] = value
    return edit


def first_input(key, value):
    def edit(kernel):
        kernel["inputs"][0][key] = value
    return edit


def remove(key):
    def edit(kernel):
        del kernel[key]
    return edit


def pad_kernels_json(work):
    # 70 MB of whitespace inside valid JSON: cheap to write, over the 64 MiB cap, so
    # the refusal must come from the file's size, before it is parsed.
    path = work / "out" / "kernels" / "kernels.json"
    text = path.read_text()
    with open(path, "w") as padded:
        padded.write(text[:1])
        for _ in range(70):
            padded.write(" " * (1 << 20))
        padded.write(text[1:])


def flood_kernels_json(work):
    # 60 MB of "{}," under the 64 MiB cap: nlohmann::json would spend 2.2 GB on it, so
    # the refusal must come from measuring the text, before it is parsed.
    path = work / "out" / "kernels" / "kernels.json"
    with open(path, "w") as flooded:
        flooded.write('{"schema": [')
        for _ in range(60):
            flooded.write("{}," * ((1 << 20) // 3))
        flooded.write("0]}")


def fifo_profile(model_dir):
    os.mkfifo(model_dir / "fifo.json")


def zero_profile(model_dir):
    os.symlink("/dev/zero", model_dir / "zero.json")


def with_special_profile(prepare):
    def write(model_dir: Path) -> Path:
        prepare(model_dir)
        path = model_dir / "model.onnx"
        path.write_bytes(softmax_model().SerializeToString())
        return path
    return write


COMPILE = Step(["{model}", "-o", "{out}"])


def kernels_json_case(name, finding, before, message):
    return Case(name, finding, model_with_profiles({}),
                [COMPILE, Step(["run", "{out}", "--cpu"], exit=2, before=before,
                               message=message)])


def device_case(name, finding, edit, message):
    return Case(name, finding, model_with_profiles({"p.json": edit}),
                [Step(["{model}", "-o", "{out}", "--device", "{model_dir}/p.json"], exit=2,
                      message=("p.json: " + message,))])


# The slowest and the fastest device the ranges allow (cost_model/device_profile.h):
# a compile with either gives finite scores and exit 0.
SLOWEST = setting(sm_count=1, max_threads_per_sm=1024, shared_memory_per_block_optin=49152,
                  shared_memory_per_sm=49152, l1_bytes_per_sm=0, peak_dram_bytes_per_second=1e9,
                  bandwidth_curve=[{"bytes": 1, "bytes_per_second": 1e3},
                                   {"bytes": 1e15, "bytes_per_second": 1e3}],
                  launch_latency_us=1e6, fp32_flops_per_second=1e9, fp16_flops_per_second=1e9,
                  fp64_flops_per_second=1e8, sm_clock_hz=1e8, max_blocks_per_sm=1,
                  l2_bytes_per_second=1e9, block_barrier_cycles=1e5, grid_barrier_us=1e6,
                  atomic_same_address_ns=1e6, global_load_latency_ns=1e6, library_efficiency=1e-3)
FASTEST = setting(sm_count=4096, max_threads_per_block=4096, max_threads_per_sm=65536,
                  registers_per_block=1048576, registers_per_sm=1048576,
                  shared_memory_per_block_optin=4194304, shared_memory_per_sm=4194304,
                  l1_bytes_per_sm=4194304, peak_dram_bytes_per_second=1e15,
                  bandwidth_curve=[{"bytes": 1, "bytes_per_second": 1e15},
                                   {"bytes": 1e15, "bytes_per_second": 1e15}],
                  launch_latency_us=0, fp32_flops_per_second=1e18, fp16_flops_per_second=1e18,
                  fp64_flops_per_second=1e18, sm_clock_hz=1e11, max_blocks_per_sm=1024,
                  l2_bytes_per_second=1e16, block_barrier_cycles=1, grid_barrier_us=1e-3,
                  atomic_same_address_ns=1e-3, global_load_latency_ns=1, library_efficiency=1)

R10 = "issue 36 R10: a tampered kernels.json field was an internal error (exit 1)"
R9 = "issue 36 R9: a positive, finite profile value made a score non-finite (exit 1)"
W8 = "issue 36 W8: impossible device geometry was accepted and ignored"
WARP = 'key "warp_size": must be 32 (every NVIDIA GPU has 32-lane warps'

CASES = [
    kernels_json_case("campaign2_kernels_json_cooperative_string", R10,
                      edit_kernel(assign("cooperative", "yes")),
                      ('key "cooperative": expected true or false, got the string "yes"'
                       + RECOMPILE,)),
    kernels_json_case("campaign2_kernels_json_shape_string", R10,
                      edit_kernel(first_input("shape", "x")),
                      ('inputs 0: key "shape": expected a list of dimensions, got the string "x"',)),
    kernels_json_case("campaign2_kernels_json_dtype_integer", R10,
                      edit_kernel(first_input("dtype", 3)),
                      ('inputs 0: key "dtype": expected an ONNX type name such as "float", got '
                       "the integer 3",)),
    kernels_json_case("campaign2_kernels_json_workspace_missing", R10,
                      edit_kernel(remove("workspace_bytes")),
                      ('key "workspace_bytes": missing' + RECOMPILE,)),
    kernels_json_case("campaign2_kernels_json_oversized",
                      "issue 36: a 222 MB kernels.json took 2 GB before it was refused",
                      pad_kernels_json,
                      ("kernels.json: the kernels.json is 734",
                       "more than the 64 MiB (67108864 bytes) a kernels.json may have")),
    kernels_json_case("campaign2_kernels_json_value_flood",
                      "issue 36: a 222 MB kernels.json took 2 GB before it was refused",
                      flood_kernels_json,
                      ("JSON values, more than the 4194304 a kernels.json may have",)),
    device_case("campaign2_device_latency_1e308", R9, setting(launch_latency_us=1e308),
                'key "launch_latency_us": must be between 0 and 1e+06 (microseconds, as '
                "--launch-latency-us accepts), got 1e+308"),
    device_case("campaign2_device_bandwidth_1e-308", R9,
                setting(bandwidth_curve=[{"bytes": 1024, "bytes_per_second": 1e-308}]),
                'key "bandwidth_curve": point 0: "bytes_per_second" must be between 1000 and '
                "1e+15 (bytes per second), got 1e-308"),
    device_case("campaign2_device_fp32_1e-308", R9, setting(fp32_flops_per_second=1e-308),
                'key "fp32_flops_per_second": must be between 1e+09 and 1e+18 (FLOP/s), got '
                "1e-308"),
    device_case("campaign2_device_warp_1", W8, setting(warp_size=1), WARP),
    device_case("campaign2_device_warp_7", W8, setting(warp_size=7), WARP),
    device_case("campaign2_device_warp_intmax", W8, setting(warp_size=2147483647), WARP),
    device_case("campaign2_device_threads_per_block_1",
                "issue 36 R9: 1 thread per block left no co-resident block (exit 1 in profile)",
                setting(max_threads_per_block=1),
                'key "max_threads_per_block": must be between 1024 and 4096'),
    device_case("campaign2_device_registers_per_block_1",
                "issue 36 R9: 1 register per block left no co-resident block (exit 1 in profile)",
                setting(registers_per_block=1),
                'key "registers_per_block": must be between 65536 and 1048576'),
    device_case("campaign2_device_l1_below_shared",
                "issue 40: the L1 (l1_bytes_per_sm) is range-checked like every profile number",
                setting(l1_bytes_per_sm=65536),
                'key "l1_bytes_per_sm": must be 0 or at least shared_memory_per_sm (233472): '
                "the L1 and shared memory share one array"),
    device_case("campaign2_device_l1_huge",
                "issue 40: the L1 (l1_bytes_per_sm) is range-checked like every profile number",
                setting(l1_bytes_per_sm=2 ** 40), 'key "l1_bytes_per_sm": must be between 0 and'),
    device_case("campaign2_device_l1_string",
                "issue 40: the L1 (l1_bytes_per_sm) is range-checked like every profile number",
                setting(l1_bytes_per_sm="256K"), 'key "l1_bytes_per_sm": expected'),
    Case("campaign2_device_range_corners",
         "issue 36 R9: the slowest and fastest devices the ranges allow compile with finite "
         "scores", model_with_profiles({"slowest.json": SLOWEST, "fastest.json": FASTEST}),
         [Step(["{model}", "-o", "{out}", "--device", "{model_dir}/slowest.json"]),
          Step(["{model}", "-o", "{out}", "--device", "{model_dir}/fastest.json", "--force"])]),
    Case("campaign2_device_fifo", "issue 36 W8: --device naming a FIFO blocked forever",
         with_special_profile(fifo_profile),
         [Step(["{model}", "-o", "{out}", "--device", "{model_dir}/fifo.json"], exit=2,
               message=("fifo.json: the device profile is a FIFO, not a regular file",))]),
    Case("campaign2_device_dev_zero",
         "issue 36 W8: --device naming a link to /dev/zero read without bound",
         with_special_profile(zero_profile),
         [Step(["{model}", "-o", "{out}", "--device", "{model_dir}/zero.json"], exit=2,
               message=("zero.json: the device profile is a character device, not a regular "
                        "file",))]),
]

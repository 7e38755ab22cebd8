// `stitchopt run`, `stitchopt bench` and `stitchopt calibrate` (runtime_stub/).
//
//   stitchopt run OUT [--cpu] [--emulate] [--seed N] [--kernels-library SO] [-v]
//     Runs OUT/model.fused.onnx on random inputs (seeded) on the GPU when one is
//     usable, else on the CPU (reference interpreter; generated kernels emulated with
//     --emulate) and says so, and compares every output with the step-by-step
//     reference evaluation: float32 max|a-b|/max(|b|,1) <= 1e-5, float16/bfloat16
//     1e-2, integers and bools exactly. Prints the memory plan (peak against one
//     buffer per tensor) and the launches per run.
//   stitchopt bench OUT [--warmup N] [--iterations N] [--graph] [--per-kernel]
//     GPU only: median and spread of end-to-end latency with CUDA events, launches
//     per run, per-step times, and CUDA Graph replay as a second figure.
//   stitchopt calibrate -o PROFILE.json [--max-bytes N] [--repetitions N]
//     GPU only: measures the bandwidth curve and phi, writes a DeviceProfile.
// Exit codes: 0 success, 1 internal error, 2 bad input or usage, 3 outputs do not
// match the reference, 4 no usable GPU (bench, calibrate; run falls back instead);
// cli/exit_codes.h.
#pragma once

#include <string_view>

namespace stitch::cli {

bool is_runtime_command(std::string_view argument);
int runtime_command_main(int argc, char** argv);  // argv[1] is the command

}  // namespace stitch::cli

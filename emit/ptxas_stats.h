// Register, spill and shared-memory figures of a generated kernel, from ptxas -v.
//
// The report lists, per kernel, the registers, spills and static shared memory
// ptxas assigns (the goal: no spills). No GPU is needed, only nvcc: run_ptxas() runs
//   nvcc -cubin -arch=<arch> -Xptxas -v,-warn-spills [-I dir]... -o <cubin> FILE.cu
// as a subprocess (no shell: arguments are passed as they are) and parses what
// ptxas prints. For each entry function ptxas writes, e.g. for sm_80:
//   ptxas info    : Compiling entry function 'stitch_k3_kernel' for 'sm_80'
//   ptxas info    : Function properties for stitch_k3_kernel
//       0 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
//   ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
// which parse_ptxas_output() turns into
//   {function "stitch_k3_kernel", arch "sm_80", registers 40, spill_store_bytes 8,
//    spill_load_bytes 12, shared_bytes 1024}.
// A .cu may define several __global__ functions (stages of one kernel);
// summarize_ptxas() folds them into one line for the report: the most registers,
// the sum of the spills and the most shared memory of any one function.
// shared_bytes is static shared memory only (the arena); dynamic shared memory is
// the launcher's and is in kernels.json.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/core/status.h"

namespace stitch::emit {

struct PtxasStats {
  std::string function;  // the entry function (mangled name when not extern "C")
  std::string arch;      // e.g. "sm_90"
  int registers = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t shared_bytes = 0;
};

// One PtxasStats per "Compiling entry function" block, in the order ptxas printed
// them. Text without any entry function gives an empty vector (a .cu with only host
// code); an entry function without its "Used N registers" line is an error, since
// then the text is not ptxas -v output.
Result<std::vector<PtxasStats>> parse_ptxas_output(std::string_view text);

// The kernel-level summary of several entry functions (see the header comment).
// function is the entries' names joined by ","; an empty input gives all zeros.
PtxasStats summarize_ptxas(const std::vector<PtxasStats>& functions);

// nvcc from $CUDACXX, else /usr/local/cuda/bin/nvcc, else `nvcc` on $PATH; nullopt
// when none exists (the caller leaves the report's ptxas fields out).
std::optional<std::filesystem::path> find_nvcc();

// Compiles `cu_file` to a cubin beside it (removed afterwards) for `arch` and parses
// ptxas's output.
// Errors (Status::internal: generated code that does not compile is our bug):
// nvcc could not be started or exited non-zero; the message holds its output,
// which names the line of the .cu.
Result<std::vector<PtxasStats>> run_ptxas(const std::filesystem::path& nvcc,
                                          const std::filesystem::path& cu_file,
                                          const std::vector<std::filesystem::path>& include_dirs,
                                          const std::string& arch = "sm_90");

}  // namespace stitch::emit

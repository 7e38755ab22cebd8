// cuda_tools.h: where `stitchopt profile` and the emulated candidate timer find nvcc
// and nvdisasm for the instruction estimate (instruction_estimate.h). Without them the
// estimate has no compute or latency term; the profile says so (ProgramProfile::
// partial) and the CLI warns on stderr rather than print a smaller time as if whole.
#pragma once

#include <string>
#include <vector>

#include "ir/core/status.h"

namespace stitch::profiling {

// nvcc: `requested` when given (a path, or a name on $PATH), else nvcc on $PATH, then
// /usr/local/cuda/bin. "" when there is none; an error when `requested` is not an
// executable.
Result<std::string> find_nvcc(const std::string& requested);

// nvdisasm, the first of:
//   1. `requested` (--nvdisasm), then $STITCH_NVDISASM: an error when either names no
//      executable, never a silent fallback to another disassembler;
//   2. $PATH, the bin directory of `nvcc` (the toolkit it belongs to),
//      /usr/local/cuda/bin;
//   3. PyPI's nvidia-cuda-nvdisasm (nvidia/cu*/bin/nvdisasm, or
//      nvidia/cuda_nvdisasm/bin/nvdisasm for the CUDA 12 wheels) in the site-packages of
//      $VIRTUAL_ENV, $CONDA_PREFIX, and of the directories above this executable (the
//      checkout's .venv, which scripts/setup.sh fills, for build/bin/stitchopt; a
//      venv's own prefix for its python; wheel_search_roots).
// "" when there is none.
Result<std::string> find_nvdisasm(const std::string& requested, const std::string& nvcc);

// The directories (3.) searches for a wheel's nvdisasm, nearest first: each prefix
// itself (a site-packages directory), its .venv, and under both
// lib/python3*/site-packages. `executable` is this program's path (/proc/self/exe);
// its ancestors up to `levels` above are prefixes after the environment's.
std::vector<std::string> wheel_search_roots(const std::string& executable, int levels);

// nvdisasm in the first of `roots` (wheel_search_roots) that holds one; "" if none.
std::string find_wheel_nvdisasm(const std::vector<std::string>& roots);

}  // namespace stitch::profiling

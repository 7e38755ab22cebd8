// instruction_estimate: issued warp instructions of a kernel launch by class, from the
// kernel's real SASS weighted by the dynamic counts its emulated run observed
// (docs/perf-model.md, "Instruction estimate").
//
//   1. SASS: `nvcc -cubin -arch=<arch> -lineinfo` then `nvdisasm -gi -c`: every
//      instruction with its opcode, its innermost source line and the line it is
//      inlined at (parse_sass).
//   2. Loops: a branch to an earlier address closes a loop over [target, branch].
//   3. Anchors: the global and shared loads and stores. Each is matched, by source
//      location (file, line, the line it is inlined at) and kind, to the access sites
//      the emulated run counted (artifact/stitch_emu_counters.h, mapped to source
//      lines with addr2line); an anchor's executions are its sites' warp-level
//      requests divided among the SASS anchors of the same location.
//   4. Weights: an instruction executes as often as the median anchor of its
//      innermost loop (an enclosing loop's when that loop has none; the median, as
//      nvcc merges loads of one source line across unrolled iterations), and once per
//      launched warp outside loops. Subroutines nvcc calls (__cuda_sm20_div_u64, the
//      *_slowpath of IEEE division and square root) weigh 0: their fast paths (32-bit
//      operands, normal numbers) run inline. A loop whose anchors all went unmatched
//      while other anchors of the kernel matched never ran in the emulation (the
//      scalar fallback of a 128-bit path) and weighs 0 too.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "cost_model/perf_model.h"
#include "ir/core/status.h"

namespace stitch::profiling {

enum class InstructionClass { kFp32, kFp64, kInteger, kSpecial, kMemory, kControl };
InstructionClass classify_sass_opcode(std::string_view opcode);

// Which access an instruction is, as StitchEmuSiteKind (-1: none).
int sass_access_kind(std::string_view opcode);

struct SassInstruction {
  int64_t address = 0;
  std::string opcode;  // without the predicate, e.g. "IMAD.WIDE.U32"
  InstructionClass cls = InstructionClass::kControl;
  std::string file;  // base name of the innermost source file ("" unknown)
  int line = 0;
  std::string caller_file;  // where that code is inlined ("" not inlined)
  int caller_line = 0;
  int64_t target = -1;      // BRA target address
  bool subroutine = false;  // in a subroutine nvcc calls ($__internal_...)
  // The control bits of the encoding (nvdisasm -hex; Volta and later): the scoreboards
  // the instruction waits on (a mask of 6) and the one it sets when its result is
  // ready (0-5; -1: none). has_control is false without -hex.
  bool has_control = false;
  int wait_mask = 0;
  int write_barrier = -1;
};

struct SassKernel {
  std::string name;
  std::vector<SassInstruction> instructions;
};

// Parses `nvdisasm -gi -c [-hex]` output: one SassKernel per .text section; with
// -hex, each instruction's control bits too.
Result<std::vector<SassKernel>> parse_sass(std::string_view text);

// A source location of an access, as addr2line -i or nvdisasm -gi gives it.
struct AccessLocation {
  std::string file;
  int line = 0;
  std::string caller_file;
  int caller_line = 0;
  int kind = 0;  // StitchEmuSiteKind
  auto tie() const { return std::tie(file, line, caller_file, caller_line, kind); }
  bool operator<(const AccessLocation& other) const { return tie() < other.tie(); }
};

struct InstructionCount {
  cost_model::InstructionEstimate estimate;
  int64_t static_instructions = 0;
  int64_t anchors = 0;          // SASS loads and stores
  int64_t matched_anchors = 0;  // of them, matched to counted sites
  // Of the unmatched, those in loops none of whose anchors matched while others of the
  // kernel did: loops the emulated run never entered, weighted 0.
  int64_t unexecuted_anchors = 0;
};

// The weighted instruction counts of `kernels` (every kernel of one .cu file a launch
// runs), given the warp-level requests per access location and the warps launched.
// With control bits (-hex), also the load rounds (docs/perf-model.md, "Latency"):
// walking the SASS in address order, an instruction that waits on a scoreboard a global
// load set stalls its warp until that load is back; with k global-load scoreboards
// outstanding at that point, k groups of loads are in flight, so the wait costs 1/k of
// a load latency. estimate.load_rounds and estimate.global_loads are those rounds and
// the global load instructions, weighted like the rest; both 0 without control bits.
InstructionCount count_instructions(const std::vector<SassKernel>& kernels,
                                    const std::map<AccessLocation, uint64_t>& requests,
                                    uint64_t warps);

// Parses `addr2line -i -a` output into each address's innermost location and caller.
std::map<uint64_t, AccessLocation> parse_addr2line(std::string_view text);

}  // namespace stitch::profiling

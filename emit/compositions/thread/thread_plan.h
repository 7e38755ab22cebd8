// The thread composition (emit/schedule.h, 3.): a group without materialized
// intermediates is one grid-stride stage, every value computed where it is read (or
// a materialized reduction or MatMul by its own thread mapping, 5.).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emit/compositions/composition.h"
#include "emit/compositions/global/global_plan.h"
#include "ir/core/graph.h"

namespace stitch::emit {

// Broadcasting reads on the way from an output to one of its operands: (operand dims,
// reader dims) pairs, the output's reader first.
using BroadcastSteps = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;

// 128-bit accesses of a float32 single stage (3b., issue 16 part 3): each thread
// writes width = 4 consecutive elements of every output with one 128-bit store, in
// runs of 4 aligned elements. The values in `inputs` are read at aligned runs of 4
// consecutive indices through one index map (same-shape elementwise reads, views,
// broadcasts along leading axes whose last axis, a multiple of 4, is the output's): a
// 16-byte window loaded once per run holds every element the run reads. Those in
// `uniform_inputs` are read at one index per run (a per-row scale): one load per run
// into a register. maps[output][input] is the input's index map from that output's
// flat index (the broadcasts on the way). Any other read of memory leaves the kernel
// scalar. The kernel checks that every pointer it reads or writes 16 bytes at a time
// is 16-byte aligned and otherwise runs a scalar loop (XLA's vectorized elementwise
// loops, with the alignment checked instead of assumed).
struct VectorAccess {
  int width = 1;  // 1: scalar
  std::set<ir::ValueId> inputs;
  std::set<ir::ValueId> uniform_inputs;
  std::map<ir::ValueId, std::map<ir::ValueId, BroadcastSteps>> maps;
};

// How the one stage's materialized reductions are mapped (5.); it names the
// composition: "block" when a column reduction's warps combine through shared memory,
// "warp" when a reduction takes a warp per output, "thread" otherwise. Only the
// "thread" stage is charged its loops by kernel_shape and vectorized.
enum class StageMapping { kThread, kWarp, kColumn };

struct ThreadPlan {
  StageMapping mapping = StageMapping::kThread;
  VectorAccess vector;
  std::string_view name() const {
    return mapping == StageMapping::kColumn ? "block"
           : mapping == StageMapping::kWarp ? "warp"
                                            : "thread";
  }
};

// The composition's interface (emit/compositions/composition.h), defined in thread_writer.cc.
template <>
struct Composition<ThreadPlan> : CompositionDefaults {
  static void charge(const ChargeContext& context, const ThreadPlan& plan, Charges* shape);
  static const VectorAccess* vector_access(const ThreadPlan& plan) { return &plan.vector; }
  // The thread composition is the global one's single stage.
  static std::string prologue(const KernelWriter& w, const ThreadPlan&, const Written&) {
    return Composition<GlobalPlan>::stage_prologue(w);
  }
  static Result<std::string> stages(KernelWriter& w, const ThreadPlan&, const Written& written) {
    return Composition<GlobalPlan>::global_stages(w, written);
  }

  static Result<std::string> vector_stages(KernelWriter& w, const Written& written,
                                           const std::string& indent);
};

}  // namespace stitch::emit

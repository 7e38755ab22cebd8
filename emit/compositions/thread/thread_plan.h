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
#include "emit/compositions/vector_access.h"
#include "ir/core/graph.h"

namespace stitch::emit {

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

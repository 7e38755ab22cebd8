// The packing composition (emit/schedule.h, 3.): a single-stage group with
// independent parts, each part over its own range of blocks (FusionStitching's
// packing).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"
#include "emit/compositions/thread/thread_plan.h"
#include "ir/core/graph.h"

namespace stitch::emit {

struct PackingPlan {
  std::vector<std::vector<ir::NodeId>> parts;  // node ids of each independent part
  std::vector<int64_t> part_grids;             // blocks of each part, in order
  VectorAccess vector;                         // as the thread composition's (3b.)
  std::string_view name() const { return "packing"; }
};

// The composition's interface (emit/compositions/composition.h), defined in packing_writer.cc.
template <>
struct Composition<PackingPlan> : CompositionDefaults {
  static void charge(const ChargeContext& context, const PackingPlan& plan, Charges* shape);
  static const VectorAccess* vector_access(const PackingPlan& plan) { return &plan.vector; }
  // The parts share the stages' declarations.
  static std::string prologue(const KernelWriter& w, const PackingPlan&, const Written&) {
    return Composition<GlobalPlan>::stage_prologue(w);
  }
  static Result<std::string> stages(KernelWriter& w, const PackingPlan& plan,
                                    const Written& written);
};

}  // namespace stitch::emit

// The compositions a fused group can be scheduled as, one type per composition, each
// in its own folder beside this header (docs/architecture.md, "How to add an op, a
// composition, a device profile"). GroupSchedule (emit/schedule.h) holds the common part and one of
// these; code that depends on the composition dispatches with std::visit.
#pragma once

#include <string_view>
#include <variant>

#include "emit/compositions/attention/attention_plan.h"
#include "emit/compositions/global/global_plan.h"
#include "emit/compositions/packing/packing_plan.h"
#include "emit/compositions/rows/row_plan.h"
#include "emit/compositions/stencil/stencil_plan.h"
#include "emit/compositions/thread/thread_plan.h"
#include "emit/compositions/tiled_gemm/tiled_gemm_plan.h"
#include "emit/compositions/transpose/transpose_plan.h"

namespace stitch::emit {

using CompositionPlan = std::variant<GlobalPlan, ThreadPlan, PackingPlan, RowPlan, TiledGemmPlan,
                                     AttentionPlan, TransposePlan, StencilPlan>;

// The composition's name in the report, kernels.json and the .cu header: "thread",
// "warp", "block", "packing", "global", "attention", "transpose" or "stencil".
inline std::string_view composition_name(const CompositionPlan& plan) {
  return std::visit([](const auto& p) { return p.name(); }, plan);
}

// std::visit with one lambda per plan type.
template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace stitch::emit

// The interface every composition provides (docs/architecture.md, "How to add an op, a
// composition, a device profile"): a specialization of Composition for its plan type,
// declared in the plan header (<folder>/<name>_plan.h, so that whoever holds the plan
// type sees it) and defined in the folder. As MLIR's op interfaces: code that depends
// on the composition asks the interface (visit_composition) and names no plan type.
//
// Required, for KernelWriter (emit/kernel_writer.h), of which a specialization is a
// friend (it may use the writer's accessors and shared stages):
//   static Result<std::string> stages(KernelWriter&, const Plan&,
//                                     const std::vector<ir::ValueId>& written);
//   static std::string prologue(const KernelWriter&, const Plan&,
//                               const std::vector<ir::ValueId>& written);
// Optional, each with the default CompositionDefaults gives when a specialization
// (which derives from it) does not declare its own:
//   template_attrs  the FusionStitching template entry's attributes per dim of a value
//                   (default: each value by its own mapping, stage_template_attrs)
//   detail          the .cu header's explanation after "Composition: <name>"
//                   (default: none)
//   charge          what the analytic estimate charges beyond bytes and work
//                   (cost_model::KernelShape; default: the group's GEMMs, charge_gemms)
//   staged_tile     the stencil tile staged in shared memory (default: none)
//   vector_access   the vectorized accesses (default: none)
//   tiled_gemm      the MatMul computed from shared tiles (default: kNoId)
//   inlines_gemms   whether a GEMM may be inlined into a tile load (default: false)
//   lanes_follow_reductions   whether a reduction's thread or warp mapping decides
//                   which lanes evaluate the values it reads (default: true; a row or
//                   attention composition's lanes all evaluate them)
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::artifact {
struct KernelCharges;
}  // namespace stitch::artifact

namespace stitch::emit {

class KernelWriter;
struct GroupSchedule;
struct ValueSchedule;
struct ChargeContext;  // emit/compositions/charges.h
struct StencilTile;
struct VectorAccess;

template <class Plan>
struct Composition;

// The values a kernel writes (KernelWriter's `written`), and what the estimate charges.
using Written = std::vector<ir::ValueId>;
using Charges = artifact::KernelCharges;

// Template attributes per dim of a value's (a reduction's or GEMM's: its first
// input's) dims.
using TemplateAttrs = std::vector<std::string>;
struct TemplateContext {
  const ir::Graph& graph;
  const GroupSchedule& schedule;
  const ir::Node& node;  // the value's producer
  const ValueSchedule& value;
  const std::vector<int64_t>& dims;
};

// The defaults' work, shared with the compositions that add to it.
// Each value by its own mapping (a reduction's, the tiled MatMul's tiles): the thread,
// packing, global and tiled-MatMul compositions (emit/cuda_emitter.cc).
TemplateAttrs stage_template_attrs(const TemplateContext& context);
// The group's GEMMs, the tiled MatMul's from shared tiles, the others one output per
// thread (or warp) (emit/kernel_shape.cc).
void charge_gemms(const ChargeContext& context, Charges* shape);

struct CompositionDefaults {
  template <class Plan>
  static TemplateAttrs template_attrs(const TemplateContext& context, const Plan& /*plan*/) {
    return stage_template_attrs(context);
  }
  template <class Plan>
  static std::string detail(const ir::Graph& /*graph*/, const GroupSchedule& /*schedule*/,
                            const Plan& /*plan*/) {
    return "";
  }
  template <class Plan>
  static void charge(const ChargeContext& context, const Plan& /*plan*/, Charges* shape) {
    charge_gemms(context, shape);
  }
  template <class Plan>
  static const StencilTile* staged_tile(const Plan& /*plan*/) {
    return nullptr;
  }
  template <class Plan>
  static const VectorAccess* vector_access(const Plan& /*plan*/) {
    return nullptr;
  }
  template <class Plan>
  static ir::NodeId tiled_gemm(const Plan& /*plan*/) {
    return ir::kNoId;
  }
  template <class Plan>
  static bool inlines_gemms(const Plan& /*plan*/) {
    return false;
  }
  template <class Plan>
  static bool lanes_follow_reductions(const Plan& /*plan*/) {
    return true;
  }
};

// f(Composition<P>{}, plan) for the plan P a CompositionPlan holds, e.g.
//   visit_composition(schedule.plan, [&](auto c, const auto& p) { return c.detail(g, s, p); })
template <class Variant, class F>
decltype(auto) visit_composition(const Variant& plan, F&& f) {
  return std::visit(
      [&](const auto& p) -> decltype(auto) {
        return f(Composition<std::decay_t<decltype(p)>>{}, p);
      },
      plan);
}

}  // namespace stitch::emit

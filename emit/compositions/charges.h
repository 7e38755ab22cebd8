// What a composition is charged by the analytic estimate (cost_model::KernelShape;
// emit::kernel_shape in emit/schedule.h adds them up): counts, never times. Each
// composition's charges are its interface's `charge` (emit/compositions/composition.h,
// default charge_gemms), in its folder; the shared ones here. Internal to emit/.
#pragma once

#include <optional>
#include <set>

#include "cost_model/cost_model.h"
#include "emit/schedule.h"
#include "ir/core/graph.h"

namespace stitch::emit {

struct ChargeContext {
  const ir::Graph& graph;
  const GroupSchedule& schedule;
  std::set<ir::NodeId> inside;  // the group's nodes
  double lanes;                 // grid x block
};

// Global reads one evaluation of `id`'s element costs: the distinct values in memory it
// reads (materialized, or the group's inputs) through the values computed inline; a
// one-element initializer is a literal (none). At most 64.
double element_reads(const ChargeContext& context, ir::ValueId id);

// The lanes that evaluate the elements of the inlined value `id`: all, unless a
// reduction of a thread or warp mapping reads it, whose threads then evaluate it.
double evaluating_lanes(const ChargeContext& context, ir::ValueId id);

// batch x m x n x k of a GEMM-kind node with a static shape, else nullopt.
std::optional<double> gemm_macs(const ir::Graph& graph, ir::NodeId id);

// Every composition's stencils, staged (stencil/, 3c. and 4b.) or walked per tap
// (stencil/stencil_charges.cc).
void charge_stencils(const ChargeContext& context, cost_model::KernelShape* shape);
// The stages' dot products and reductions of the thread, packing and global
// compositions (global/stage_charges.cc, with those compositions' charges).
void charge_stage_loops(const ChargeContext& context, cost_model::KernelShape* shape);

}  // namespace stitch::emit

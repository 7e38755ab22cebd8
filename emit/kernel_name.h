// Kernel names a profiler user can read (issue 16 part 4): `stitch_k3_layer_0_layernorm`
// instead of `stitch_k3`. A name is its fixed prefix and number (unique and stable:
// the plan is deterministic), then where the kernel runs and what it computes:
//
//   - where: the scope its nodes share. Exporters name nodes by module path
//     (PyTorch: "/encoder/layer.0/attention/output/LayerNorm/ReduceMean"); the
//     longest path all nodes of every call site share, its last three parts. A
//     kernel shared by four layers is named after the scope they share ("encoder"),
//     not after the first layer. Names without paths give no scope.
//   - what: the patterns the decompose pass opened, recognised by their ops:
//     "attention" (two MatMuls around a softmax), "softmax" (ReduceMax, Exp,
//     ReduceSum), "layernorm" (two ReduceMeans and a Sqrt), "gelu" (Erf, or Tanh and
//     Pow), "matmul"; otherwise the first three distinct op types in order.
//
// Node names come from the model file, which is untrusted: only letters and digits
// of them reach the name (support::identifier_slug), lowercased, and the whole
// description is at most kMaxDescription characters.
#pragma once

#include <string>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::emit {

inline constexpr size_t kMaxDescription = 48;

// The readable part of the name of a kernel launched by each group of `sites` (the
// first is the one it was generated from): lowercase letters, digits and single
// underscores, never empty ("kernel" when nothing is known).
std::string kernel_description(const ir::Graph& graph,
                               const std::vector<std::vector<ir::NodeId>>& sites);

}  // namespace stitch::emit

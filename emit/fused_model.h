// The rewritten model: every fused group becomes one node in the custom domain
// "stitchopt", defined by a model-local ONNX function that holds the group's
// original nodes (DESIGN.md, emit/). Any ONNX runtime can still execute and check
// the model: ONNX Runtime inlines model-local functions.
//
// For a group G (a convex set of nodes):
//  - inputs: the values G's nodes read that G does not produce (graph inputs,
//    initializers, outputs of other nodes), in order of first read (nodes in
//    topological order, inputs in slot order);
//  - outputs: the values G produces that something outside G reads or that are
//    graph outputs, in order of production;
//  - the fused node reads the inputs, produces the outputs (same values, so graph
//    outputs keep their names), has op_type = the kernel name, domain "stitchopt",
//    the group's attributes, and origin = the union of the nodes' origins;
//  - the function (domain "stitchopt", name = kernel name) has formal inputs
//    x0..xN-1, outputs y0..yM-1, internal values t0..., and the group's nodes in
//    topological order with their attributes; it imports the model's opsets.
// Groups with the same canonical text (emit/canonical_group.h: same ops, attributes,
// wiring, shapes and dtypes) get one kernel name and share one function; the kernel
// name of the first such group (in input order) wins.
//
// Before (groups = {{mul, add}}):
//   %t = Mul(%x, %w) {name="mul"}; %y = Add(%t, %b) {name="add"}; return %y
// After:
//   %y = stitchopt.fused_0(%x, %w, %b) {kernel="fused_0", fused_nodes=["mul", "add"]}
//   function stitchopt.fused_0(x0, x1, x2) -> (y0) { t0 = Mul(x0, x1); y0 = Add(t0, x2) }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emit/group_boundary.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

inline constexpr const char* kFusedDomain = "stitchopt";

struct FusedGroup {
  std::vector<ir::NodeId> nodes;          // a convex set of live nodes
  std::string kernel_name;                // a valid identifier, unique per distinct group
  std::vector<ir::Attribute> attributes;  // written on the fused node (not on the function)
};

// Which groups share a kernel, decided before the rewrite so that code generation
// can emit each distinct kernel once, under its final name.
struct KernelSharing {
  // Per input group: the kernel name it ends up with (shared by identical groups;
  // FusedGroup::kernel_name, described when asked, with "_" appended while it names
  // a stitchopt function the model already has).
  std::vector<std::string> kernel_names;
  std::vector<size_t> owner;  // per group: the first group (in input order) with its kernel
  int64_t distinct_kernels = 0;
  std::vector<GroupBoundary> boundaries;  // per group, reused by build_fused_model
};

struct FusedModel {
  ir::Model model;
  std::vector<std::string> kernel_names;  // KernelSharing::kernel_names
  int64_t distinct_kernels = 0;
};

// Precondition: groups are disjoint, convex and contain no node with subgraphs.
// The groups' attributes play no part: sharing can be decided before they exist.
// With `describe`, a kernel's name is its owner's kernel_name, '_' and
// kernel_description over every group that launches it (emit/kernel_name.h):
// `stitch_k3` -> `stitch_k3_layer_0_layernorm`.
Result<KernelSharing> share_kernels(const ir::Model& model, const std::vector<FusedGroup>& groups,
                                    bool describe = false);

// Precondition: `sharing` is share_kernels(model, groups') where groups' differ from
// `groups` at most in attributes, and groups sharing a kernel have the same attribute
// names here (checked). The function of a shared kernel declares its owner's
// attributes.
Result<FusedModel> build_fused_model(const ir::Model& model, const std::vector<FusedGroup>& groups,
                                     const KernelSharing& sharing);
// share_kernels, then the rewrite.
Result<FusedModel> build_fused_model(const ir::Model& model, const std::vector<FusedGroup>& groups);

}  // namespace stitch::emit

// The CUDA emitter: one readable .cu per fused group, following the kernel contract
// (docs/codegen.md): `#include "stitch_prelude.cuh"`, a STITCH_KERNEL written with the
// contract's portable primitives, and `extern "C"` host launchers
//   cudaError_t <kernel>_launch(const void* const* inputs, void* const* outputs,
//                               void* workspace, cudaStream_t stream);
//   size_t <kernel>_workspace_bytes(void);
// whose inputs and outputs follow emit/group_boundary.h exactly.
//
// Code shape: every value of the group is a lambda `v_<name>(long long i)` giving the
// value at flat (row-major) index i in its compute type (float for f32/f16/bf16).
// Inlined ops (thread composition) are index functions of their operands, evaluated
// in registers at the reader's index; a value read at the same index by several ops
// is cached per thread. Materialized values (emit/schedule.h) read back from shared
// memory, the workspace, an output buffer or a register (row-local reduction
// results). Stages write them: grid-stride loops (thread, packing, global
// compositions, separated by stitch_grid_sync in the global one) or loops over a
// row owned by a warp or a block (warp/block composition) with shuffle reductions.
//
// Example (f32[4,8]: y = Relu(Add(x, b)), b: f32[8]) gives the kernel body
//   auto v_x = [&](long long i) -> float { return p_x[i]; };
//   auto v_b = [&](long long i) -> float { return p_b[i]; };
//   // Add "add" (Add): f32[4,8]
//   auto v_s = [&](long long i) -> float { return v_x(i) + v_b(i % 8); };
//   // Relu "relu" (Relu): f32[4,8]
//   auto v_y = [&](long long i) -> float { const float a = v_s(i); return a > 0.0f ? a : 0.0f; };
//   for (long long i = tid; i < 32; i += threads) p_y[i] = v_y(i);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "artifact/kernels_json.h"
#include "cost_model/device_profile.h"
#include "emit/group_boundary.h"
#include "emit/schedule.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::emit {

struct KernelTensor {
  std::string value_name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
};

// The launch as kernels.json records it.
using LaunchConfig = artifact::LaunchRecord;

struct OpSchedule {
  std::string node_name;
  std::string op_type;
  std::string composition;     // "thread", "warp", "block", "packing", "global"
  std::string template_entry;  // e.g. "reduce_1[GRID,WARP,CTA]S"; "" for inlined ops
};

// An unfused node that launches a single-op kernel emitted for another, identical
// node (same canonical text, emit/canonical_group.h): its name and the values it
// writes (its group_boundary outputs), by which the runtime finds its kernel.
struct SharedLaunch {
  std::string node;
  std::vector<std::string> outputs;
};

struct EmittedKernel {
  std::string name;                   // the kernel (C identifier)
  std::string file;                   // "<name>.cu"
  std::string source;                 // the .cu text
  std::vector<KernelTensor> inputs;   // group_boundary order
  std::vector<KernelTensor> outputs;  // group_boundary order
  int64_t workspace_bytes = 0;
  LaunchConfig launch;
  std::string template_text;  // FusionStitching grammar, whole kernel
  std::string composition;    // the kernel's main composition
  std::string why;            // why that composition (GroupSchedule::why)
  int vector_width = 1;       // 4: the 128-bit path (VectorAccess::width)
  std::vector<OpSchedule> ops;
  int64_t shared_bytes_requested = 0;
  int64_t shared_bytes_allocated = 0;
  std::string shared_memory_fallback;    // "", "regional to global"
  std::vector<std::string> fused_nodes;  // "name (OpType)", topological order
  double predicted_time_us = 0;
  // What the analytic estimate charges the kernel's schedule (kernel_shape), recorded
  // in kernels.json so that later estimates price the code that was emitted.
  artifact::KernelCharges charges;
  // The analytic estimate's terms for the .cu header ("Estimate on h100: ..."), with
  // the schedule's own charges (docs/cost-model.md).
  std::string estimate;
  // Single-op kernels: the other unfused nodes that launch this kernel (the source
  // names the first node's values). Empty for fused kernels: a fused node names its
  // kernel in the rewritten model.
  std::vector<SharedLaunch> shared_by;
};

// Adds to `kernel`'s header, after its fused nodes, the other call sites that launch
// the same kernel (identical groups of other layers, or identical unfused nodes), one
// line each: a profiler user reading the .cu sees every place its time comes from.
void list_call_sites(EmittedKernel& kernel, const std::vector<std::string>& sites);

// Emits the kernel for the group with `boundary` (group_boundary of a convex group's
// nodes, or of a single node). `kernel_name` must be a C identifier. An op without an
// index function, a non-static shape or an unsupported dtype is an error naming the
// node "name (OpType)" and why.
Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const GroupBoundary& boundary,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile,
                                  const ScheduleOptions& options = {});
// The same for `nodes`, computing their boundary (a topological order of the graph).
Result<EmittedKernel> emit_kernel(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                                  const std::string& kernel_name,
                                  const cost_model::DeviceProfile& profile,
                                  const ScheduleOptions& options = {});

}  // namespace stitch::emit

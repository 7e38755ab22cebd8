// Schedules: how a fused group runs on the GPU (FusionStitching section 5.1-5.2,
// AStitch sections 3-4). Given a convex group, decide which values are computed in
// registers at their consumer's index (thread composition), which are materialized
// (kept in shared memory or the global workspace), the thread mapping, the
// composition, the launch configuration and the implementation template.
//
// Algorithm:
//  1. Materialize: reductions and GEMMs always; a non-View value read by two or more
//     nodes of the group (computed once and shared, AStitch 2.3.1, instead of being
//     recomputed per consumer); a stencil's operand that inlines another stencil
//     (each tap would walk that window again); everything else (elementwise,
//     broadcast, injective, view, stencils: a depthwise Conv or a pool walks its
//     window at its reader's index) is an index function inlined into its readers.
//     Group outputs are written to global memory.
//  1b. Attention: a group holding one attention core (ir/core/attention.h) whose
//     other nodes are index functions feeding it (inlined into the tile loads) or a
//     same-index epilogue of its output, and whose only materialized values are the
//     core's: "attention" composition, FlashAttention's schedule on CUDA cores. A
//     block per (batch x head, tile of query rows) loads its Q tile, then walks the
//     keys in tiles of 32: K and V tiles staged in shared memory, each lane the score
//     of one key (the dot product from shared memory, then the score chain: scale,
//     masks), an online softmax per query row (running max and sum, the accumulator
//     rescaled by exp(old max - new max)) and the P x V product accumulated in
//     registers (lane c owns output columns c, c + 32, ...). The scores never reach
//     memory and no grid barrier is needed; one launch. Rows per warp R grow (1, 2,
//     4, 8) while the grid still fills the SMs, so a K/V tile serves 4R query rows.
//  2. Row-local test (the dominant op fixes the mapping, AStitch 4.2): when the
//     group has reductions, all of them reduce a trailing suffix of axes over the
//     same number of rows R, every materialized value and output splits as
//     [R, k] at a dim boundary, and every read of a row-varying value (one that
//     depends on a materialized value) stays inside its row (leading dims equal, no
//     broadcast across rows), then one warp (rows <= 1024 elements: many rows packed
//     per block, <750000,32>) or one block (longer rows) owns each row: "warp"
//     or "block" composition. Reductions become shuffle (+ shared) all-reductions
//     whose results stay in registers; row-sized intermediates go to shared memory
//     (FS Algorithm 4 plan), or to the workspace when over the per-block limit
//     ("regional to global", AStitch 4.4). Few long rows (block mode, rows below
//     the co-resident blocks) split each row across several blocks: per-slice
//     partials in the workspace, phases separated by stitch_grid_sync, "block"
//     composition with a GRID-SPLIT_k template (<64,30000>: 8 blocks per row on H100).
//  2b. A group whose only heavy op is one fine-grained (batched) MatMul, possibly fed
//     by reductions and followed by a same-index epilogue: "block" composition with A
//     and B tiles in shared memory (FS Fig. 1 and 5(d)).
//  3. Otherwise, a group without materialized intermediates is one grid-stride
//     stage: "thread" composition, or "packing" when it has independent parts
//     (each part gets its own range of blocks).
//  3c. A thread-composition group holding one 2-D stencil (a depthwise Conv, a pool)
//     whose every output is written at the stencil's own index (or through one
//     Transpose of it): "stencil"
//     composition when its window reuses the input (each staged element read by at
//     least kStencilTileMinReuse taps on average) and the tile fits the per-block
//     shared memory. A block per tile of [planes, tile_h, tile_w] outputs first
//     stages the input tile those outputs' windows cover (halo included) in shared
//     memory, evaluating the stencil's inlined producers (a folded BatchNorm, the
//     ReLU6 of the expand conv) once per element instead of once per tap, then each
//     thread computes one output from the tile and writes every group output at its
//     index (the taps read shared memory, and so do a Conv's weights when its filters
//     fit beside the tile: StencilTile::filter_offset; the rest of the group is as in
//     3.); an
//     output written through one Transpose (and views) lands where the Transpose puts
//     the element.
//  4. Otherwise the always-correct "global" composition: materialized values are
//     computed in levels (a value's level is one more than the deepest
//     materialized value it reads), each level a grid-stride loop over the value's
//     elements, levels separated by stitch_grid_sync in a cooperative launch,
//     intermediates in the workspace.
//  4b. In 4, a group's one 2-D stencil evaluated by exactly one stage (the one
//     materialized value or output that reads it through same-index inlined values,
//     written a thread per element) is staged as in 3c.: that stage walks the
//     stencil's tiles, the input tile after the arena's other allocations.
//  4c. In 4, the run of 2 or more stages from stage 1 on that saves the most, when it
//     saves anything, is run by the last block to finish the stage before it (after a
//     __syncthreads, thread 0 fences and counts the block's arrival in the workspace's
//     second word, which the launcher zeroes with the barrier's counter), with
//     __syncthreads between its stages, its threads striding over each stage's work:
//     its grid barriers are gone. Its stages hold no sliced reduction and need at most
//     8 rounds of one block's threads (a squeeze-excitation's MatMuls over one pixel);
//     the barriers saved are weighed against the extra rounds' loads
//     (GlobalPlan::last_block_first; stage_planner.cc, plan_last_block_stages).
//  4d. In 4b., a ReduceMean or ReduceSum of the staged value over its spatial axes (a
//     squeeze-excitation's mean) is summed in the staged stage: each thread keeps its
//     output in a register, and each tile's part of each plane is summed by shuffles
//     among its lanes (a part of at most 32 outputs whose size divides 32) or by a warp
//     through [block] floats of the arena. When every tile holds whole planes those
//     sums are the reduction, whose own stage, grid barrier and re-read of the plane are
//     gone; otherwise each tile writes its part's sum to the workspace, and the
//     reduction's stage adds a plane's parts, a thread per plane, instead of reading the
//     plane (StencilTile::plane_reductions).
//  5. In 3 and 4, each reduction gets its own thread mapping (AStitch 2.1, 4.2:
//     column and scalar reductions have their own schedules), from its canonical
//     shape [outer kept, reduced, inner kept C]:
//       - C == 1 (row and scalar reductions, the innermost axis reduced), more than
//         32 reduced elements: a warp per (output, slice), lanes striding over the
//         reduced elements (coalesced), combined by shuffles;
//       - C > 1 (column reductions): a block per (column tile, slice); each warp's
//         lanes own W = min(32, next power of two >= C) consecutive columns and
//         32 / W rows, the block's threads stride over the slice's rows (coalesced
//         across the columns); row lanes combine by shuffles inside a warp, then
//         the warps' columns through shared memory in warp order;
//       - otherwise (few reduced elements, ArgMax/ArgMin, LogSumExp, integers) a
//         thread per output element.
//     When the outputs alone leave the co-resident warps idle (few columns, a
//     scalar), the reduced range is cut into slices over several warps: each warp
//     writes a partial to the workspace, and one grid barrier later the partials
//     are combined in slice order (deterministic), the value's final stage. A group
//     whose only stage reduces without slices is "block" composition with a column
//     reduction (its warps combine through shared memory), else "warp".
//
//  6. Zero-size: a group that reduces an empty input or writes a value without
//     elements is neither row-local (2.) nor a tiled MatMul (2b.), and such a
//     reduction keeps a thread per output (5.); a reduction over an empty set writes
//     its identity without reading (docs/semantics.md).
//
// Example: softmax over f32[64,128] (ReduceMax, Sub, Exp, ReduceSum, Div): R = 64,
// rows of 128 -> warp per row, 8 rows per 256-thread block, grid 8; template
//   max_1[GRID-WARP_8,CTA]; exp_1[GRID-WARP_8,CTA]S; sum_1[GRID-WARP_8,CTA];
//   div_1[GRID-WARP_8,CTA];
// Precondition: static shapes (checked: an error names the node otherwise).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cost_model/cost_model.h"
#include "cost_model/device_profile.h"
#include "emit/compositions/composition_plan.h"
#include "emit/group_boundary.h"
#include "ir/core/attention.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"

namespace stitch::emit {

// The permutation of a Transpose over `rank` axes (its default reverses them).
std::vector<int64_t> transpose_perm(const ir::Node& node, size_t rank);

enum class Storage {
  kRegister,   // inlined: recomputed at each reader's index, or a row result in a register
  kShared,     // per warp/block row buffer in the shared arena
  kWorkspace,  // global scratch (the launcher's workspace)
  kOutput,     // a group output: the output buffer itself
};

// Thread mapping of a reduction outside the row-local and tiled-MatMul schedules (5.).
enum class ReductionMapping {
  kThread,  // a thread per output element loops over the reduced elements
  kWarp,    // a warp per (output, slice): row and scalar reductions
  kColumn,  // a block per (column tile, slice): column reductions
};

struct ValueSchedule {
  ir::ValueId value = ir::kNoId;
  bool materialized = false;
  Storage storage = Storage::kRegister;
  int64_t offset = 0;           // bytes into the shared arena (per warp slot) or the workspace
  int level = 0;                // global composition: the stage that computes it; split rows:
                                // the phase that writes it (a reduction: its partials)
  int64_t partial_offset = -1;  // split rows, reductions: workspace offset of the partials
  bool row_varying = false;
  int64_t row_elements = 0;  // row-local: elements of this value per row (k)
  // Row-local: a group output written through a Transpose that moves whole rows of a
  // row-varying value; the row loop writes each row where the Transpose puts it.
  bool rows_moved = false;
  // Reductions of the thread, packing and global compositions (5.). With slices >= 2
  // the partials ([output, slice] accumulators at partial_offset) are written one stage
  // before `level`, where they are combined.
  ReductionMapping mapping = ReductionMapping::kThread;
  int64_t items = 0;    // work items, slices included: warps (kWarp) or blocks (kColumn)
  int64_t reduced = 1;  // reduced elements per output
  int64_t inner = 1;    // kColumn: C, the trailing kept elements
  int columns = 1;      // kColumn: W, consecutive columns per warp (power of two <= 32)
  int64_t slices = 1;   // warps (kWarp) or blocks (kColumn) sharing one output's or tile's range
  int64_t slice = 0;    // reduced elements (kWarp) or reduced rows (kColumn) per slice
  int accumulator_bytes =
      4;  // 4: float (float32/16 inputs, max/min), 8: double (float64, integers)
  // A MatMul of the thread, packing or global composition computed a warp per output
  // element: the lanes stride over k and shuffles combine their sums. For small outputs
  // with k >= 32, where a thread per element would walk k dependent loads alone: an
  // unrolled RNN's [4, 64] x [64, 64] steps measured 2.8x slower on an H100 that way
  // (docs/benchmarks.md).
  bool lanes_over_k = false;
  // A MatMul of the thread, packing or global composition computed on tensor cores, a
  // warp per 16 x 8 piece of the product (mma.sync; --precision tf32, fp32x3, bf16, fp16:
  // its products are the tensor cores' there, tiled_gemm_precision), where m >= 16,
  // n >= 8 and k has a whole step (8, 16 for the half types) and a warp per output
  // (lanes_over_k) does not fit one wave: each lane reads its fragment elements through
  // the operands' accessors. Replaces the thread per output.
  bool warp_mma = false;
  // A written value computed at its own index from one MatMul computed a warp per
  // output element or piece (lanes_over_k, warp_mma; a bias add, an activation), whose other inputs
  // are materialized in earlier stages: lane 0 writes it right after the MatMul's element (reading
  // that back from its storage), in the MatMul's stage instead of one grid barrier later (resnet's
  // classifier: 3 stages -> 2). Not in groups holding an attention core's P x V (plan_levels says
  // why). kNoId otherwise.
  ir::ValueId epilogue_of = ir::kNoId;
  // Sliced: a warp (more than 32 partials) or a thread combines an output's partials.
  bool warp_combine() const { return slices > 32; }
};

struct GroupSchedule {
  GroupBoundary boundary;
  // The composition and its own facts (emit/compositions/). Dispatch with std::visit.
  CompositionPlan plan;
  std::map<ir::ValueId, ValueSchedule> values;  // every value produced by the group
  std::vector<ir::ValueId> materialized;        // in topological order
  // Stages separated by grid barriers: the global composition's levels, the split
  // rows' phases; 1 otherwise.
  int levels = 1;
  // Launch.
  int64_t grid = 1;
  int block = 32;
  bool cooperative = false;
  int64_t shared_bytes = 0;            // the arena (after reuse)
  int64_t shared_bytes_requested = 0;  // without reuse
  std::string shared_memory_fallback;  // "" or "regional to global"
  int64_t workspace_bytes = 0;         // intermediates + barrier counter
  int64_t barrier_offset = -1;         // workspace offset of the grid-barrier counter
  // The products of the group's float32 GEMMs (ScheduleOptions::precision): under
  // kTf32 every one rounds its operands to TF32, on tensor cores in the tiled MatMul
  // composition and on CUDA cores elsewhere (a TF32 product is exact in float); under
  // kFloat32x3 the tiled MatMul composition splits them, and the CUDA-core products stay
  // float32 (as accurate).
  ir::Precision products = ir::Precision::kFloat32;
  // Why this composition: the facts that chose it, or for the global composition why
  // the row-local and tiled-MatMul tests failed (the .cu header's "Why" line).
  std::string why;

  // The plan when it is a P, else nullptr.
  template <class P>
  const P* as() const {
    return std::get_if<P>(&plan);
  }
  template <class P>
  P* as() {
    return std::get_if<P>(&plan);
  }
};

// The staged stencil tile of the stencil composition or of a global composition's
// stage (4b.), else nullptr.
const StencilTile* staged_tile(const GroupSchedule& schedule);

// The vectorized accesses of the thread and packing compositions, else nullptr.
const VectorAccess* vector_access(const GroupSchedule& schedule);

// Whether a staged stencil has a 1-D window: its tiles are one row ([N, C, L]
// outputs, ir::planar_window), with no row terms.
bool staged_stencil_is_1d(const ir::Graph& graph, const StencilTile& tile);

// Schedule choices a caller can turn off (the CLI's --no-stencil-tiles), to compare.
struct ScheduleOptions {
  bool stencil_tiles = true;  // 3c.: stage stencil inputs in shared memory
  // --precision (ir/core/precision.h): the products of float32 GEMMs; under kTf32 and
  // kFloat32x3 the tiled MatMul composition runs on tensor cores (mma.sync m16n8k8).
  ir::Precision precision = ir::Precision::kFloat32;
};

// The stencil composition (3c.) stages a tile only when each staged element is read
// by at least this many taps on average: below it, the first read of each element
// already costs what the tile load does, and L1 serves the rest.
inline constexpr double kStencilTileMinReuse = 2.0;

// Warps per block of the attention composition; keys per K/V tile (one per lane).
inline constexpr int kAttentionWarps = 4;
inline constexpr int64_t kAttentionTileKeys = 32;

// Row-local block composition: the arena's last kBlockScratchBytes hold one partial
// per warp for block-wide reductions.
inline constexpr int64_t kBlockScratchBytes = 32 * 4;

// Builds the schedule of the group with `boundary` (group_boundary of its nodes).
// Errors (non-static shapes, an op without an index function) name the node
// "name (OpType)" and the fix.
Result<GroupSchedule> build_schedule(const ir::Graph& graph, const GroupBoundary& boundary,
                                     const cost_model::DeviceProfile& profile,
                                     const ScheduleOptions& options = {});

// What the analytic estimate charges for the schedule's composition
// (cost_model::KernelShape): grid barriers of a cooperative launch (stages - 1), the
// workspace, and the multiply-adds of its GEMMs: tiled (from shared memory), one
// output per thread (the attention prologue's projections times attention_recompute),
// or in the CUDA-core attention kernel's loops (none on tensor cores); and the loads
// a lane issues one after another: recomputed dot products, the stages' loops, the
// stencils' windows (cost_model::KernelShape's load chains).
cost_model::KernelShape kernel_shape(const ir::Graph& graph, const GroupSchedule& schedule);

// kernel_shape of a group's schedule by its nodes, nullopt when the group has none
// (the emitter cannot express it); the planner's PlannerOptions::kernel_shape. The
// graph's topological positions are computed on the first call and kept while the
// calls name the same graph (which must not change meanwhile).
using KernelShapeOracle = std::function<std::optional<cost_model::KernelShape>(
    const ir::Graph&, const std::vector<ir::NodeId>&)>;
KernelShapeOracle kernel_shape_oracle(const cost_model::DeviceProfile& profile,
                                      const ScheduleOptions& options = {});

// Dims of a value (precondition: static shape).
const std::vector<int64_t>& dims_of(const ir::Graph& graph, ir::ValueId value);
int64_t elements_of(const ir::Graph& graph, ir::ValueId value);

}  // namespace stitch::emit

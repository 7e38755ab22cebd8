// The stencil composition (emit/schedule.h, 3c.) and the staged stencil of a global
// composition's stage (4b.): a 1-D or 2-D stencil (a depthwise or grouped Conv, a
// pool) whose input tile is staged in shared memory once per block instead of read
// once per tap.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "emit/compositions/composition.h"
#include "ir/core/graph.h"

namespace stitch::emit {

// The staged stencil and its tiles. A block per [planes, tile_h, tile_w] outputs
// (planes: n x channel, consecutive; whole groups of a grouped Conv, whose
// filters_per_group output planes read the same channels_per_group input planes)
// stages the [in_planes, tile_in_h, tile_in_w] input elements their windows cover;
// tiles_h x tiles_w tiles per group of planes. Depthwise convs and pools have one
// input plane per output plane. A 1-D window ([N, C, L] outputs) has tiles of one row.
struct StencilTile {
  ir::NodeId stencil = ir::kNoId;
  int64_t planes = 1;     // output planes per tile
  int64_t in_planes = 1;  // input planes staged per tile
  int64_t tile_h = 1, tile_w = 1;
  int64_t tile_in_h = 1, tile_in_w = 1;
  int64_t tiles_h = 1, tiles_w = 1;
  int64_t tiles = 0;   // tiles in all: plane groups x tiles_h x tiles_w
  double reuse = 0;    // taps read per staged element, on average
  int64_t bytes = 0;   // the staged input tile
  int64_t offset = 0;  // bytes into the arena (4b.: after the other allocations)
  // 4b.: the value whose stage walks the tiles; kNoId in the stencil composition.
  ir::ValueId staged_value = ir::kNoId;
  // A Conv's filters for the tile's `planes` output planes ([planes, filter_row]:
  // channels_per_group x window weights each), staged in the arena at filter_offset
  // with the input tile, so that each tap reads its weight from shared memory instead
  // of global memory (-1: not staged; a grouped conv's 16 channels x 9 taps were 144
  // global loads per output).
  int64_t filter_offset = -1;
  int64_t filter_row = 0;
  // 4d.: ReduceMean and ReduceSum of staged_value over its spatial axes (a
  // squeeze-excitation's mean). The stage sums each tile's part of each plane from its
  // threads' registers as it writes it. When every tile covers whole planes, those sums
  // are the reductions, and they need no stage of their own; otherwise each tile writes
  // its part's sum to the workspace's [planes, tiles_h x tiles_w] floats at
  // `partials_offset`, and the reductions' stage adds a plane's parts instead of reading
  // the plane back. `sum_offset`: the arena's [block] floats a part larger than a warp,
  // or not a power of two, is summed through (-1: none).
  std::vector<ir::ValueId> plane_reductions;
  int64_t sum_offset = -1;
  int64_t partials_offset = -1;
  bool whole_planes() const { return tiles_h == 1 && tiles_w == 1; }
};

// 3c.: a thread-composition group whose one stencil is staged. Group outputs written
// through a Transpose of a value at the stencil's index (and views after it): output
// -> that Transpose (ConvNeXt's NCHW -> NHWC before its channels-last LayerNorm);
// each element lands where the Transpose puts it.
struct StencilPlan {
  StencilTile tile;
  std::map<ir::ValueId, ir::NodeId> moved_outputs;
  std::string_view name() const { return "stencil"; }
};

// The composition's interface (emit/compositions/composition.h), defined in stencil_writer.cc.
template <>
struct Composition<StencilPlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const StencilPlan& plan);
  static std::string detail(const ir::Graph& graph, const GroupSchedule&, const StencilPlan& plan);
  static const StencilTile* staged_tile(const StencilPlan& plan) { return &plan.tile; }
  // The tile's loads and walk, as the global composition's stencil stage (4b.) writes them.
  static std::string prologue(const KernelWriter& w, const StencilPlan& plan, const Written&) {
    return stencil_tile_prologue(w, plan.tile);
  }
  static Result<std::string> stages(KernelWriter& w, const StencilPlan&, const Written& written) {
    return stencil_tile_code(w, written);
  }

  static Result<std::string> stencil_tile_code(KernelWriter& w, const Written& written);
  static std::string stencil_tile_prologue(const KernelWriter& w, const StencilTile& tile);
  static Result<std::string> plane_sums_code(KernelWriter& w, const std::string& plane0,
                                             int64_t planes);
  static Result<std::pair<std::string, std::string>> filter_staging_code(KernelWriter& w,
                                                                         const std::string& plane0,
                                                                         int64_t planes,
                                                                         int64_t channels);
  static Result<std::string> plane_partials_code(KernelWriter& w, ir::ValueId id,
                                                 const std::string& indent);
};

}  // namespace stitch::emit

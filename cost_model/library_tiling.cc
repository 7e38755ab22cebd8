#include "cost_model/library_tiling.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <utility>

#include "ir/core/gemm_shape.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"

namespace stitch::cost_model {

namespace {

// Output tiles, largest first (the larger side along the larger of m and n).
constexpr std::array<std::pair<int64_t, int64_t>, 7> kTiles = {
    {{128, 128}, {128, 64}, {64, 64}, {64, 32}, {32, 32}, {32, 16}, {16, 16}}};
// k per main-loop step and steps in flight: CUTLASS's SIMT SGEMM (k 8, double
// buffered) and its sm_80+ multistage tensor-core GEMMs (k 32, 4 stages).
constexpr int64_t kSimtTileK = 8;
constexpr int kSimtStages = 2;
constexpr int64_t kTensorTileK = 32;
constexpr int kTensorStages = 4;
// Split-k keeps at least this many k per CTA (a split shorter than a few steps of the
// main loop costs more in its reduction than it saves).
constexpr int64_t kMinSplitK = 64;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The smallest power of two >= v (v >= 1): a tile never spans more than that of a
// dimension, the libraries carrying kernels for narrow problems.
int64_t power_of_two_at_least(int64_t v) {
  return static_cast<int64_t>(std::bit_ceil(static_cast<uint64_t>(v)));
}

int64_t product(const std::vector<int64_t>& dims, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < dims.size(); ++i) p *= dims[i];
  return p;
}

// A geometry of no work (an empty tensor) is no geometry: the call is left to its bytes.
std::optional<LibraryGemm> nonempty(const LibraryGemm& gemm) {
  if (gemm.groups <= 0 || gemm.m <= 0 || gemm.n <= 0 || gemm.k <= 0) return std::nullopt;
  return gemm;
}

}  // namespace

std::optional<LibraryGemm> library_gemm(const ir::Graph& graph, const ir::Node& node) {
  if (node.outputs.empty() || node.outputs[0] == ir::kNoId) return std::nullopt;
  const ir::TensorType& output = graph.value(node.outputs[0]).type;
  switch (ir::op_kind(node)) {
    case ir::OpKind::kGemm: {
      std::optional<ir::GemmShape> shape = ir::gemm_shape(graph, node);
      if (!shape) return std::nullopt;
      return nonempty({shape->batch, shape->m, shape->n, shape->k});
    }
    case ir::OpKind::kConv: {
      if (node.inputs.size() < 2 || node.inputs[1] == ir::kNoId) return std::nullopt;
      const ir::TensorType& weight = graph.value(node.inputs[1]).type;
      const int64_t group = node.int_attribute("group", 1);
      if (!weight.is_static() || !output.is_static() || output.dims.size() < 3 ||
          weight.dims.size() < 2 || group <= 0 || weight.dims[0] % group != 0) {
        return std::nullopt;
      }
      return nonempty({group, output.dims[0] * product(output.dims, 2), weight.dims[0] / group,
                       product(weight.dims, 1)});
    }
    case ir::OpKind::kStencil: {
      std::optional<ir::Stencil> stencil = ir::stencil_of(graph, node);
      if (!stencil || !output.is_static() || output.dims.size() < 3 ||
          stencil->filters_per_group <= 0 || output.dims[1] % stencil->filters_per_group != 0) {
        return std::nullopt;
      }
      return nonempty({output.dims[1] / stencil->filters_per_group,
                       output.dims[0] * product(output.dims, 2), stencil->filters_per_group,
                       stencil->taps});
    }
    default:
      return std::nullopt;
  }
}

std::optional<LibraryGemm> library_gemm(const ir::Graph& graph) {
  for (ir::NodeId id : graph.node_ids()) {
    const ir::Node& node = graph.node(id);
    const ir::OpKind kind = ir::op_kind(node);
    if (kind == ir::OpKind::kGemm || kind == ir::OpKind::kConv || kind == ir::OpKind::kStencil) {
      return library_gemm(graph, node);
    }
  }
  return std::nullopt;
}

LibraryTiling library_tiling(const LibraryGemm& gemm, bool tensor_cores,
                             const DeviceProfile& profile) {
  const int64_t sms = std::max(profile.sm_count, 1);
  // At least one of each, so that every call is at least one CTA (library_gemm gives
  // no empty geometry; a caller's own may be).
  const int64_t groups = std::max<int64_t>(gemm.groups, 1);
  const int64_t m = std::max<int64_t>(gemm.m, 1);
  const int64_t n = std::max<int64_t>(gemm.n, 1);
  const int64_t k = std::max<int64_t>(gemm.k, 1);
  const bool m_larger = m >= n;
  LibraryTiling t;
  for (const auto& [large, small] : kTiles) {
    t.tile_m = std::min(m_larger ? large : small, power_of_two_at_least(m));
    t.tile_n = std::min(m_larger ? small : large, power_of_two_at_least(n));
    t.ctas = groups * ceil_div(m, t.tile_m) * ceil_div(n, t.tile_n);
    if (t.ctas >= sms) break;  // the largest tile that gives every SM one
  }
  t.tile_k = tensor_cores ? kTensorTileK : kSimtTileK;
  t.stages = tensor_cores ? kTensorStages : kSimtStages;
  if (t.ctas < sms)
    t.splits = std::clamp<int64_t>(sms / t.ctas, 1, std::max<int64_t>(k / kMinSplitK, 1));
  t.k_per_cta = ceil_div(k, t.splits);
  t.ctas *= t.splits;
  t.waves = ceil_div(t.ctas, sms);
  t.sms = std::min(t.ctas, sms);
  t.cta_flops = 2.0 * static_cast<double>(t.tile_m) * static_cast<double>(t.tile_n) *
                static_cast<double>(t.k_per_cta);
  t.load_rounds = 1.0 + static_cast<double>(ceil_div(t.k_per_cta, t.tile_k)) / t.stages;
  return t;
}

}  // namespace stitch::cost_model

// How a cuBLAS/cuDNN call spreads over the SMs, for its estimate (docs/perf-model.md,
// "Library calls"). A library GEMM or convolution runs as thread blocks (CTAs), each
// computing a tile of tile_m x tile_n outputs by walking its share of k in steps of
// tile_k, with `stages` steps' loads in flight. Two things follow that FLOPs at a
// fraction of peak do not see:
//   SM fill  a call of fewer tiles than SMs uses only that many SMs (a 1x1 conv at 7x7
//            with 1280 filters: 80 tiles of 32x32 on 132 SMs), and a partial last wave
//            costs a whole one;
//   latency  a tile's k loop waits out a global load every `stages` steps when its
//            steps compute too little to hide them (a grouped conv's small GEMMs).
// The tile shapes and pipeline depths are those of the libraries' kernel families
// (CUTLASS's SIMT SGEMM 128x128x8 with 2 stages, its multistage tensor-core GEMMs
// 128x128x32 with 4), the tile chosen as the libraries' heuristics do: the largest
// that still gives every SM a tile, else the one with the most tiles; split-k when
// even that leaves SMs idle.
#pragma once

#include <cstdint>
#include <optional>

#include "cost_model/device_profile.h"
#include "ir/core/graph.h"

namespace stitch::cost_model {

// A library call's work as `groups` independent GEMMs of m x n outputs over k: a
// MatMul's batch; a convolution as implicit GEMM per group (m = batch x output
// pixels, n = filters per group, k = channels per group x kernel positions); a
// depthwise conv or pool with n = 1 and k = its taps.
struct LibraryGemm {
  int64_t groups = 1;
  int64_t m = 0;
  int64_t n = 0;
  int64_t k = 0;
};

// The geometry of `graph`'s library node (the first MatMul, Gemm, Conv or stencil op:
// a library step's body holds its epilogue too); nullopt when it has none or a shape
// is unknown.
std::optional<LibraryGemm> library_gemm(const ir::Graph& graph);
// The same for one node.
std::optional<LibraryGemm> library_gemm(const ir::Graph& graph, const ir::Node& node);

struct LibraryTiling {
  int64_t tile_m = 0;
  int64_t tile_n = 0;
  int64_t tile_k = 0;
  int stages = 0;
  int64_t splits = 1;     // split-k factor
  int64_t k_per_cta = 0;  // ceil(k / splits)
  int64_t ctas = 0;       // groups x tiles x splits
  int64_t waves = 0;      // ceil(ctas / sm_count)
  int64_t sms = 0;        // min(ctas, sm_count)
  // The multiply-adds x 2 one CTA computes, its tile padded: partial tiles cost whole.
  double cta_flops = 0;
  // Global-load waits on one CTA's critical path: the first tile's loads, then one
  // every `stages` k steps.
  double load_rounds = 0;
};

// `tensor_cores`: the call runs on tensor cores (float16/bfloat16, or TF32).
LibraryTiling library_tiling(const LibraryGemm& gemm, bool tensor_cores,
                             const DeviceProfile& profile);

}  // namespace stitch::cost_model

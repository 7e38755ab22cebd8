// The attention composition (emit/schedule.h, 1b.): the group's attention core
// (ir/core/attention.h) as one FlashAttention-style kernel. A block of `warps` warps
// per (batch x head, tile of tile_q() query rows), rows_per_warp rows per warp; the Q
// tile (at the arena's start), a K tile of 32 keys (rows padded to d + 1 floats: no
// bank conflicts) and a V tile of 32 keys.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>

#include "ir/core/attention.h"
#include "ir/core/graph.h"

namespace stitch::emit {

struct AttentionPlan {
  ir::AttentionCore core;  // the match, stored: readers never match again
  // float16/bfloat16 with head dims that fit the fragments: the tensor-core variant,
  // a warp per 16 query rows, mma.sync m16n8k16 for both products, 16-bit tiles in the
  // arena (rows padded by 8 elements).
  bool tensor_cores = false;
  int warps = 4;
  int rows_per_warp = 1;
  int64_t k_offset = 0, v_offset = 0;  // bytes into the arena
  // Group outputs the kernel writes through a Transpose of its output (the heads
  // merged back, [B, H, L, dv] -> [B, L, H, dv], and views after it): output -> that
  // Transpose; each element of O lands where the Transpose puts it.
  std::map<ir::ValueId, ir::NodeId> moved_outputs;
  // Fine-grained GEMMs of the prologue (Q/K/V projections) are inlined: each element
  // is computed where a tile load reads it, up to this many times (the query tiles per
  // batch x head: every block of a head reads all its keys and values).
  int64_t recompute = 1;
  int64_t tile_q() const { return static_cast<int64_t>(rows_per_warp) * warps; }
  std::string_view name() const { return "attention"; }
};

}  // namespace stitch::emit

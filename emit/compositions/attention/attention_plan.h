// The attention composition (emit/schedule.h, 1b.): the group's attention core
// (ir/core/attention.h) as one FlashAttention-style kernel. A block of `warps` warps
// per (batch x head, tile of tile_q() query rows), rows_per_warp rows per warp; the Q
// tile (at the arena's start), a K tile of 32 keys (rows padded to d + 1 floats: no
// bank conflicts) and a V tile of 32 keys.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "emit/compositions/composition.h"
#include "ir/core/attention.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"

namespace stitch::emit {

struct AttentionPlan {
  ir::AttentionCore core;  // the match, stored: readers never match again
  // The tensor-core variant, where the head dims fit the fragments: a warp per 16
  // query rows, mma.sync for both products. float16/bfloat16 cores: m16n8k16, 16-bit
  // tiles in the arena (rows padded by 8 elements); float32 cores under --precision
  // tf32 or fp32x3: m16n8k8 TF32 (three of them per step for fp32x3), float tiles
  // (rows padded by 4). `products` says which (kFloat32 on CUDA cores).
  bool tensor_cores = false;
  ir::Precision products = ir::Precision::kFloat32;
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
  // The tensor-core variant's k per mma (8 at TF32, 16 for the half types) and its
  // tiles' row padding in elements: rows of 4 mod 8 floats or 8 mod 16 halves put the
  // 32 lanes' fragment loads in 32 distinct banks.
  int64_t k_step() const { return ir::uses_tensor_cores(products) ? 8 : 16; }
  int64_t row_pad() const { return ir::uses_tensor_cores(products) ? 4 : 8; }
  std::string_view name() const { return "attention"; }
};

// The composition's interface (emit/compositions/composition.h), defined in attention_writer.cc.
template <>
struct Composition<AttentionPlan> : CompositionDefaults {
  static TemplateAttrs template_attrs(const TemplateContext& context, const AttentionPlan& plan);
  static std::string detail(const ir::Graph&, const GroupSchedule&, const AttentionPlan& plan);
  static void charge(const ChargeContext& context, const AttentionPlan& plan, Charges* shape);
  // The prologue's projections are computed where a tile load reads them (1b.).
  static bool inlines_gemms(const AttentionPlan&) { return true; }
  static bool lanes_follow_reductions(const AttentionPlan&) { return false; }
  static std::string prologue(const KernelWriter& w, const AttentionPlan& plan, const Written&);
  // The CUDA-core variant, or the tensor-core one (attention_mma_code).
  static Result<std::string> stages(KernelWriter& w, const AttentionPlan& plan,
                                    const Written& written);
  // What both variants share: the operands' values at a tile load's index, the score
  // chain's accessor, and the text from the kernel's comment to the tile loop's base
  // offsets.
  struct AttentionParts {
    std::string q_value, k_value, v_value;  // operand reads at a tile load's index
    std::string logits;                     // the score chain's accessor
    std::string scores, output;             // the registers of S and O
    std::string loop_header;                // comment, -inf, the tile loop's opening
  };

  static Result<AttentionParts> attention_parts(KernelWriter& w, const std::string& how);
  static Result<std::string> attention_writes(KernelWriter& w, const Written& written,
                                              const std::string& indent);
  static Result<std::string> attention_mma_code(KernelWriter& w, const Written& written);
};

}  // namespace stitch::emit

// The attention composition's writer (declared in its plan header; emit/schedule.h, 1b.):
// FlashAttention's schedule on CUDA cores. A block per (batch x head, tile of query rows) walks the
// keys in tiles of 32 staged in shared memory; each lane scores one key, an online softmax per
// query row keeps the running max and sum in registers, and P x V accumulates in registers. Q, K
// and V are read through their accessors (the prologue's index functions: a bias add, the head
// split, Reshape and Transpose), the score through the score chain's accessor (the scale and masks
// at the score's flat index), so nothing of the Lq x Lk scores is written to memory.
//
// Numerics: the scores and their dot products are float, as in the GEMM kernels; the
// softmax differs from the decomposed one only by the order of its roundings (each
// tile rescales the running sum and accumulator by exp(old max - new max), exactly 1
// when the max did not move); a row whose every score is -inf gives 0 / 0 = NaN, as
// the decomposed softmax does.
#include "emit/kernel_writer.h"

#include <limits>
#include <sstream>

#include "emit/compositions/tiled_gemm/tiled_gemm_plan.h"
#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// What both variants share: the operands' values at a tile load's index (Q at
// q_base + m d + e % d, K^T at k_base + (e % d) Lk + j, V at v_base + j dv + e % dv),
// the score chain's accessor, and the text from the kernel's comment to the tile
// loop's base offsets (a block per (batch x head, query tile), grid-stride).
Result<Composition<AttentionPlan>::AttentionParts> Composition<AttentionPlan>::attention_parts(
    KernelWriter& w, const std::string& how) {
  const ir::AttentionCore& core = w.plan<AttentionPlan>().core;
  const int64_t lq = core.lq, lk = core.lk, d = core.d, dv = core.dv;
  const int64_t tile_q = w.plan<AttentionPlan>().tile_q();
  const int64_t q_tiles = (lq + tile_q - 1) / tile_q;
  auto batch_of = [&](ir::ValueId operand) {
    const std::vector<int64_t>& operand_dims = w.dims(operand);
    return std::vector<int64_t>(operand_dims.begin(), operand_dims.end() - 2);
  };
  AttentionParts parts;
  STITCH_ASSIGN_OR_RETURN(
      parts.q_value, w.operand_value(core.query, "q_base + m * " + num(d) + " + e % " + num(d)));
  STITCH_ASSIGN_OR_RETURN(parts.k_value, w.operand_value(core.key, "k_base + (e % " + num(d) +
                                                                       ") * " + num(lk) + " + j"));
  STITCH_ASSIGN_OR_RETURN(
      parts.v_value, w.operand_value(core.value, "v_base + j * " + num(dv) + " + e % " + num(dv)));
  STITCH_ASSIGN_OR_RETURN(parts.logits, w.accessor(core.logits));
  STITCH_RETURN_IF_ERROR(w.accessor(core.output).status());
  parts.scores = "r_" + w.names_.at(core.scores);
  parts.output = "r_" + w.names_.at(core.output);
  std::ostringstream code;
  code << "  // Attention " << comment_name(w.graph_.node(core.scores_gemm)) << " .. "
       << comment_name(w.graph_.node(core.output_gemm)) << ": " << core.batch << " x [" << lq
       << ", " << d << "] queries, " << lk << " keys, values of " << dv << "; " << how << "\n";
  code << "  const float neg_inf = " << float_literal(-std::numeric_limits<double>::infinity())
       << ";  // the running max before any key\n";
  code << "  for (index_t tile = blockIdx.x; tile < " << core.batch * q_tiles
       << "; tile += gridDim.x) {\n";
  code << "    const index_t bh = tile / " << q_tiles << ";\n";
  code << "    const index_t q0 = tile % " << q_tiles << " * " << tile_q << ";\n";
  code << "    const index_t q_base = ("
       << broadcast_index(core.batch_dims, batch_of(core.query), "bh") << ") * " << lq * d << ";\n";
  code << "    const index_t k_base = ("
       << broadcast_index(core.batch_dims, batch_of(core.key), "bh") << ") * " << d * lk << ";\n";
  code << "    const index_t v_base = ("
       << broadcast_index(core.batch_dims, batch_of(core.value), "bh") << ") * " << lk * dv
       << ";\n";
  code << "    __syncthreads();  // the previous tile's readers are done\n";
  parts.loop_header = code.str();
  return parts;
}

// The group outputs at O's flat index i: those read at i (output_writes) and those
// written through a Transpose of O (AttentionPlan::moved_outputs): O's
// element lands at the index the Transpose gives it, which the views after it keep.
Result<std::string> Composition<AttentionPlan>::attention_writes(KernelWriter& w,
                                                                 const Written& written,
                                                                 const std::string& indent) {
  std::vector<ir::ValueId> in_place;
  std::string moved;
  for (ir::ValueId id : written) {
    auto through = w.plan<AttentionPlan>().moved_outputs.find(id);
    if (through == w.plan<AttentionPlan>().moved_outputs.end()) {
      in_place.push_back(id);
      continue;
    }
    const ir::Node& transpose = w.graph_.node(through->second);
    moved += indent + "// " + comment_name(transpose) + " -> " +
             ir::to_string(w.graph_.value(id).type) +
             " (output, where the Transpose puts O's element)\n";
    STITCH_ASSIGN_OR_RETURN(std::string write, w.write_through_transpose(id, transpose));
    moved += indent + write + ";\n";
  }
  STITCH_ASSIGN_OR_RETURN(std::string writes, w.output_writes(in_place, indent));
  return writes + moved;
}

Result<std::string> Composition<AttentionPlan>::stages(KernelWriter& w, const AttentionPlan& plan,
                                                       const Written& written) {
  if (plan.tensor_cores) return attention_mma_code(w, written);
  const ir::AttentionCore& core = w.plan<AttentionPlan>().core;
  const int64_t lq = core.lq, lk = core.lk, d = core.d, dv = core.dv;
  const int64_t rows = w.plan<AttentionPlan>().rows_per_warp;
  const int64_t tile_q = w.plan<AttentionPlan>().tile_q();
  const int64_t columns = (dv + 31) / 32;  // output columns per lane
  // Bounds checks only where the shapes leave partial tiles.
  const bool partial_keys = lk % 32 != 0;
  const bool partial_rows = lq % tile_q != 0;
  STITCH_ASSIGN_OR_RETURN(
      AttentionParts parts,
      attention_parts(w, "a block per " + num(tile_q) + " query rows (" + num(rows) +
                             " per warp), keys in tiles of 32 (one per lane), online softmax"));

  std::ostringstream code;
  code << parts.loop_header;
  // Under --precision tf32 the products read TF32 operands (KernelWriter::cuda_core_operand):
  // Q, K and V rounded as they enter the tiles, P as it is multiplied.
  const ir::DType t = w.dtype(core.output);
  const auto operand = [&](const std::string& value) {
    return w.cuda_core_operand("static_cast<float>(" + value + ")", t);
  };
  code << w.tile_load_loop("tile_q[e]", tile_q * d, "const index_t m = q0 + e / " + num(d) + ";",
                           (partial_rows ? "m < " + num(lq) + " ? " : std::string()) +
                               operand(parts.q_value) + (partial_rows ? " : 0.0f" : ""),
                           "    ");
  code << "    float row_max[" << rows << "], row_sum[" << rows << "], acc[" << rows << "]["
       << columns << "];\n";
  code << "#pragma unroll\n    for (int r = 0; r < " << rows << "; ++r) {\n";
  code << "      row_max[r] = neg_inf;\n      row_sum[r] = 0.0f;\n";
  code << "#pragma unroll\n      for (int c = 0; c < " << columns << "; ++c) acc[r][c] = 0.0f;\n";
  code << "    }\n";
  code << "    for (index_t k0 = 0; k0 < " << lk << "; k0 += 32) {\n";
  code << "      __syncthreads();  // the previous K/V tile's readers are done\n";
  const std::string key_valid = partial_keys ? "j < " + num(lk) + " ? " : std::string();
  const std::string key_else = partial_keys ? " : 0.0f" : "";
  code << w.tile_load_loop("tile_k[(e / " + num(d) + ") * " + num(d + 1) + " + e % " + num(d) + "]",
                           32 * d, "const index_t j = k0 + e / " + num(d) + ";",
                           key_valid + operand(parts.k_value) + key_else, "      ");
  code << w.tile_load_loop("tile_v[e]", 32 * dv, "const index_t j = k0 + e / " + num(dv) + ";",
                           key_valid + operand(parts.v_value) + key_else, "      ");
  code << "      __syncthreads();\n";
  // Scores of the warp's rows for the lane's key: the key's row of K is read once per
  // kk for all rows; Q's rows are broadcast reads (four floats at a time when d
  // allows). Each dot product sums over kk in order, as the GEMM kernels do.
  const bool vector_q = d % 4 == 0;
  code << "      const index_t j = k0 + lane;\n";
  code << "      float s[" << rows << "];\n";
  code << "      {\n        float dot[" << rows << "];\n";
  code << "#pragma unroll\n        for (int r = 0; r < " << rows << "; ++r) dot[r] = 0.0f;\n";
  if (vector_q) {
    code << "#pragma unroll\n        for (index_t kk = 0; kk < " << d << "; kk += 4) {\n";
    code << "          const float* key = tile_k + lane * " << d + 1 << " + kk;\n";
    code << "          const float k_0 = key[0], k_1 = key[1], k_2 = key[2], k_3 = key[3];\n";
    code << "#pragma unroll\n          for (int r = 0; r < " << rows << "; ++r) {\n";
    code << "            const float4 q = *reinterpret_cast<const float4*>(tile_q + (warp * "
         << rows << " + r) * " << d << " + kk);\n";
    code << "            dot[r] += q.x * k_0;\n            dot[r] += q.y * k_1;\n";
    code << "            dot[r] += q.z * k_2;\n            dot[r] += q.w * k_3;\n";
    code << "          }\n        }\n";
  } else {
    code << "#pragma unroll\n        for (index_t kk = 0; kk < " << d << "; ++kk) {\n";
    code << "          const float k_0 = tile_k[lane * " << d + 1 << " + kk];\n";
    code << "#pragma unroll\n          for (int r = 0; r < " << rows
         << "; ++r) dot[r] += tile_q[(warp * " << rows << " + r) * " << d << " + kk] * k_0;\n";
    code << "        }\n";
  }
  std::string valid;
  if (partial_keys) valid = "j < " + num(lk);
  if (partial_rows) valid += (valid.empty() ? "" : " && ") + std::string("m < ") + num(lq);
  code << "#pragma unroll\n        for (int r = 0; r < " << rows << "; ++r) {\n";
  code << "          [[maybe_unused]] const index_t m = q0 + warp * " << rows << " + r;\n";
  code << "          s[r] = neg_inf;\n";
  code << "          " << (valid.empty() ? std::string("{") : "if (" + valid + ") {") << "\n";
  code << "            " << parts.scores << " = "
       << load(w.dtype(core.scores), store(w.dtype(core.scores), "dot[r]")) << ";\n";
  code << "            s[r] = " << parts.logits << "((bh * " << lq << " + m) * " << lk
       << " + j);\n";
  code << "          }\n        }\n      }\n";
  // The online softmax: the running max and sum of each row, the accumulator rescaled.
  code << "      float p[" << rows << "];\n";
  code << "#pragma unroll\n      for (int r = 0; r < " << rows << "; ++r) {\n";
  code << "        const float new_max = fmaxf(row_max[r], stitch_warp_reduce_max(s[r]));\n";
  code << "        const float shift = new_max == neg_inf ? 0.0f : new_max;\n";
  code << "        p[r] = "
       << (partial_keys ? "j < " + num(lk) + " ? expf(s[r] - shift) : 0.0f"
                        : std::string("expf(s[r] - shift)"))
       << ";\n";
  code << "        const float rescale = expf(row_max[r] - shift);\n";
  code << "        row_sum[r] = row_sum[r] * rescale + stitch_warp_reduce_sum(p[r]);\n";
  code << "        row_max[r] = new_max;\n";
  code << "#pragma unroll\n        for (int c = 0; c < " << columns
       << "; ++c) acc[r][c] *= rescale;\n";
  code << "      }\n";
  // P x V: each key's probabilities broadcast from its lane, each V element read once
  // for all rows.
  if (partial_keys) {
    code << "      const index_t keys = " << lk << " - k0 < 32 ? " << lk << " - k0 : 32;\n";
    code << "      for (index_t jj = 0; jj < keys; ++jj) {\n";
  } else {
    code << "#pragma unroll\n      for (index_t jj = 0; jj < 32; ++jj) {\n";
  }
  code << "        float pj[" << rows << "];\n";
  code << "#pragma unroll\n        for (int r = 0; r < " << rows << "; ++r) pj[r] = "
       << w.cuda_core_operand("__shfl_sync(0xffffffffu, p[r], static_cast<int>(jj))", t) << ";\n";
  code << "#pragma unroll\n        for (int c = 0; c < " << columns << "; ++c) {\n";
  const std::string v_read = "tile_v[jj * " + num(dv) + " + lane + 32 * c]";
  if (dv % 32 == 0) {
    code << "          const float v = " << v_read << ";\n";
  } else {
    code << "          const float v = lane + 32 * c < " << dv << " ? " << v_read << " : 0.0f;\n";
  }
  code << "#pragma unroll\n          for (int r = 0; r < " << rows
       << "; ++r) acc[r][c] += pj[r] * v;\n";
  code << "        }\n      }\n    }\n";
  code << "#pragma unroll\n    for (int r = 0; r < " << rows << "; ++r) {\n";
  code << "      const index_t m = q0 + warp * " << rows << " + r;\n";
  if (partial_rows) code << "      if (m >= " << lq << ") continue;\n";
  code << "#pragma unroll\n      for (int c = 0; c < " << columns << "; ++c) {\n";
  code << "        const index_t n = lane + 32 * c;\n";
  if (dv % 32 != 0) code << "        if (n >= " << dv << ") continue;\n";
  code << "        " << parts.output << " = "
       << load(w.dtype(core.output), store(w.dtype(core.output), "acc[r][c] / row_sum[r]"))
       << ";\n";
  code << "        const index_t i = (bh * " << lq << " + m) * " << dv << " + n;\n";
  STITCH_ASSIGN_OR_RETURN(std::string writes, attention_writes(w, written, "        "));
  code << writes << "      }\n    }\n  }\n";
  return code.str();
}

namespace {

// A 32-bit word of a 16-bit tile: two adjacent elements, as an m16n8k16 register holds them.
std::string word(const std::string& tile, const std::string& offset) {
  return "*reinterpret_cast<const uint32_t*>(" + tile + " + " + offset + ")";
}

// S = Q K^T into s[4][4]: 4 blocks of 8 keys, d / k_step mma steps each, the Q
// fragments from the Q tile (rows r0 and r0 + 8), the K fragments from the K tile's
// rows (a K row is a column of K^T). TF32: four floats of A, two of B per step (PTX's
// m16n8k8 layouts), rounded, or split for fp32x3, by tf32_mma_step; the half types:
// pairs of 16-bit elements as words.
std::string scores_mma(const AttentionPlan& plan) {
  const int64_t d = plan.core.d, qs = d + plan.row_pad(), ks = d + plan.row_pad();
  std::ostringstream code;
  code << "      float s[4][4];\n";
  code << "#pragma unroll\n      for (int nb = 0; nb < 4; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = "
          "s[nb][3] = 0.0f;\n";
  code << "#pragma unroll\n      for (index_t kb = 0; kb < " << d << "; kb += " << plan.k_step()
       << ") {\n";
  if (ir::uses_tensor_cores(plan.products)) {
    code << "        const float* q_row = tile_q + r0 * " << qs << " + kb + quad;\n";
    code << "        const float a_in[4] = {q_row[0], q_row[" << 8 * qs << "], q_row[4], q_row["
         << 8 * qs + 4 << "]};\n";
    code << "#pragma unroll\n        for (int nb = 0; nb < 4; ++nb) {\n";
    code << "          const float* k_row = tile_k + (nb * 8 + group) * " << ks
         << " + kb + quad;\n";
    code << "          const float b_in[2] = {k_row[0], k_row[4]};\n";
    code << tf32_mma_step(plan.products == ir::Precision::kFloat32x3, "          ", "s[nb]");
    code << "        }\n      }\n";
    return code.str();
  }
  const std::string mma = plan.products == ir::Precision::kBFloat16 ? "stitch_mma_m16n8k16_bf16"
                                                                    : "stitch_mma_m16n8k16_f16";
  code << "        const index_t qc = kb + 2 * quad;\n";
  code << "        const uint32_t a[4] = {" << word("tile_q", "r0 * " + num(qs) + " + qc") << ", "
       << word("tile_q", "(r0 + 8) * " + num(qs) + " + qc") << ", "
       << word("tile_q", "r0 * " + num(qs) + " + qc + 8") << ", "
       << word("tile_q", "(r0 + 8) * " + num(qs) + " + qc + 8") << "};\n";
  code << "#pragma unroll\n        for (int nb = 0; nb < 4; ++nb) {\n";
  code << "          const index_t key = nb * 8 + group;\n";
  code << "          const uint32_t b[2] = {" << word("tile_k", "key * " + num(ks) + " + qc")
       << ", " << word("tile_k", "key * " + num(ks) + " + qc + 8") << "};\n";
  code << "          " << mma << "(s[nb], a, b);\n";
  code << "        }\n      }\n";
  return code.str();
}

// O += P V from the probabilities in s[4][4]. The half types: two steps of 16 keys,
// the S accumulators of two adjacent key blocks are exactly the A fragment of one step
// (rounded to 16 bits), the V fragments pair two keys of one column. TF32: four steps
// of 8 keys; the accumulator holds keys 2 quad and 2 quad + 1 of a block where the A
// fragment wants k = quad and quad + 4, so the step's k order is permuted (k = quad is
// key 2 quad, k = quad + 4 key 2 quad + 1) and V's rows follow it: the sum over keys
// does not depend on their order, and no shuffle is needed.
std::string values_mma(const AttentionPlan& plan) {
  const int64_t dv = plan.core.dv, vs = dv + plan.row_pad();
  const int64_t n_blocks = dv / 8;
  std::ostringstream code;
  if (ir::uses_tensor_cores(plan.products)) {
    code << "#pragma unroll\n      for (int kb = 0; kb < 4; ++kb) {\n";
    code << "        const float a_in[4] = {s[kb][0], s[kb][2], s[kb][1], s[kb][3]};\n";
    code << "        const float* v_row = tile_v + (kb * 8 + 2 * quad) * " << vs << " + group;\n";
    code << "#pragma unroll\n        for (int c = 0; c < " << n_blocks << "; ++c) {\n";
    code << "          const float b_in[2] = {v_row[c * 8], v_row[" << vs << " + c * 8]};\n";
    code << tf32_mma_step(plan.products == ir::Precision::kFloat32x3, "          ", "acc[c]");
    code << "        }\n      }\n";
    return code.str();
  }
  const ir::DType t = plan.core.dtype;
  const std::string mma = plan.products == ir::Precision::kBFloat16 ? "stitch_mma_m16n8k16_bf16"
                                                                    : "stitch_mma_m16n8k16_f16";
  auto v_element = [&](const std::string& key) {
    return "tile_v[(" + key + ") * " + num(vs) + " + n]";
  };
  code << "#pragma unroll\n      for (int ks = 0; ks < 2; ++ks) {\n";
  code << "        const uint32_t a[4] = {stitch_pack16(" << store(t, "s[2 * ks][0]") << ", "
       << store(t, "s[2 * ks][1]") << "), stitch_pack16(" << store(t, "s[2 * ks][2]") << ", "
       << store(t, "s[2 * ks][3]") << "), stitch_pack16(" << store(t, "s[2 * ks + 1][0]") << ", "
       << store(t, "s[2 * ks + 1][1]") << "), stitch_pack16(" << store(t, "s[2 * ks + 1][2]")
       << ", " << store(t, "s[2 * ks + 1][3]") << ")};\n";
  code << "        const index_t key = ks * 16 + 2 * quad;\n";
  code << "#pragma unroll\n        for (int c = 0; c < " << n_blocks << "; ++c) {\n";
  code << "          const index_t n = c * 8 + group;\n";
  code << "          const uint32_t b[2] = {stitch_pack16(" << v_element("key") << ", "
       << v_element("key + 1") << "), stitch_pack16(" << v_element("key + 8") << ", "
       << v_element("key + 9") << ")};\n";
  code << "          " << mma << "(acc[c], a, b);\n";
  code << "        }\n      }\n";
  return code.str();
}

// The mma shape of a plan's products, for comments.
std::string mma_name(const AttentionPlan& plan) {
  switch (plan.products) {
    case ir::Precision::kTf32:
      return "m16n8k8 TF32";
    case ir::Precision::kFloat32x3:
      return "m16n8k8 TF32, three per step (3xTF32)";
    default:
      return "m16n8k16";
  }
}

}  // namespace

// The tensor-core variant (schedule.h 1b.): FlashAttention-2's register layout with
// mma.sync (m16n8k16 for float16/bfloat16 cores, m16n8k8 TF32 for float32 ones under
// --precision tf32/fp32x3). A warp owns 16 query rows; for each tile of 32 keys it
// computes S = Q K^T as 4 blocks of 8 keys (scores_mma), applies the score chain to each
// of its 16 elements (lane = 4 group + quad holds rows group and group + 8, keys
// 2 quad + {0, 1} of each block), runs the online softmax per row (the row's max and
// sum over the 4 lanes of a group by shuffles), and multiplies P by V (values_mma).
Result<std::string> Composition<AttentionPlan>::attention_mma_code(KernelWriter& w,
                                                                   const Written& written) {
  const AttentionPlan& plan = w.plan<AttentionPlan>();
  const ir::AttentionCore& core = plan.core;
  const int64_t lq = core.lq, lk = core.lk, d = core.d, dv = core.dv;
  const int64_t tile_q = plan.tile_q();
  const int64_t q_stride = d + plan.row_pad(), k_stride = d + plan.row_pad();
  const int64_t v_stride = dv + plan.row_pad();
  const int64_t n_blocks = dv / 8;
  const bool partial_keys = lk % 32 != 0;
  const bool partial_rows = lq % tile_q != 0;
  const ir::DType t = core.dtype;
  STITCH_ASSIGN_OR_RETURN(AttentionParts parts,
                          attention_parts(w, "tensor cores (mma " + mma_name(plan) +
                                                 ", float accumulators), a warp per 16 query rows, "
                                                 "keys in tiles of 32, online softmax"));

  std::ostringstream code;
  code << parts.loop_header;
  code << "    for (index_t e = threadIdx.x; e < " << tile_q * d << "; e += blockDim.x) {\n";
  code << "      const index_t m = q0 + e / " << d << ";\n";
  code << "      tile_q[(e / " << d << ") * " << q_stride << " + e % " << d << "] = "
       << store(t, (partial_rows ? "m < " + num(lq) + " ? " : std::string()) +
                       "static_cast<float>(" + parts.q_value + ")" +
                       (partial_rows ? " : 0.0f" : ""))
       << ";\n    }\n";
  code << "    float row_max[2] = {neg_inf, neg_inf}, row_sum[2] = {0.0f, 0.0f};\n";
  code << "    float acc[" << n_blocks << "][4];\n";
  code << "#pragma unroll\n    for (int c = 0; c < " << n_blocks
       << "; ++c) acc[c][0] = acc[c][1] = acc[c][2] = acc[c][3] = 0.0f;\n";
  code << "    const index_t r0 = warp * 16 + group;  // this lane's rows: r0 and r0 + 8\n";
  code << "    for (index_t k0 = 0; k0 < " << lk << "; k0 += 32) {\n";
  code << "      __syncthreads();  // the previous K/V tile's readers are done\n";
  code << "      for (index_t e = threadIdx.x; e < " << 32 * d << "; e += blockDim.x) {\n";
  code << "        const index_t j = k0 + e / " << d << ";\n";
  code << "        tile_k[(e / " << d << ") * " << k_stride << " + e % " << d << "] = "
       << store(t, (partial_keys ? "j < " + num(lk) + " ? " : std::string()) +
                       "static_cast<float>(" + parts.k_value + ")" +
                       (partial_keys ? " : 0.0f" : ""))
       << ";\n      }\n";
  code << "      for (index_t e = threadIdx.x; e < " << 32 * dv << "; e += blockDim.x) {\n";
  code << "        const index_t j = k0 + e / " << dv << ";\n";
  code << "        tile_v[(e / " << dv << ") * " << v_stride << " + e % " << dv << "] = "
       << store(t, (partial_keys ? "j < " + num(lk) + " ? " : std::string()) +
                       "static_cast<float>(" + parts.v_value + ")" +
                       (partial_keys ? " : 0.0f" : ""))
       << ";\n      }\n";
  code << "      __syncthreads();\n";
  code << scores_mma(plan);
  // The score chain at each element, then the online softmax of rows r0 and r0 + 8.
  std::string valid;
  if (partial_keys) valid = "j < " + num(lk);
  if (partial_rows) valid += (valid.empty() ? "" : " && ") + std::string("m < ") + num(lq);
  code << "#pragma unroll\n      for (int nb = 0; nb < 4; ++nb) {\n";
  code << "#pragma unroll\n        for (int i = 0; i < 4; ++i) {\n";
  code << "          [[maybe_unused]] const index_t m = q0 + r0 + 8 * (i >> 1);\n";
  code << "          [[maybe_unused]] const index_t j = k0 + nb * 8 + 2 * quad + (i & 1);\n";
  code << "          " << (valid.empty() ? std::string("{") : "if (" + valid + ") {") << "\n";
  code << "            " << parts.scores << " = " << rounded(core.dtype, "s[nb][i]") << ";\n";
  code << "            s[nb][i] = " << parts.logits << "((bh * " << lq << " + m) * " << lk
       << " + j);\n";
  code << "          }"
       << (valid.empty() ? "" : " else {\n            s[nb][i] = neg_inf;\n          }")
       << "\n        }\n      }\n";
  code << "#pragma unroll\n      for (int h = 0; h < 2; ++h) {\n";
  code << "        float tile_max = neg_inf;\n";
  code << "#pragma unroll\n        for (int nb = 0; nb < 4; ++nb) tile_max = fmaxf(tile_max, "
          "fmaxf(s[nb][2 * h], s[nb][2 * h + 1]));\n";
  code << "        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));\n";
  code << "        tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));\n";
  code << "        const float new_max = fmaxf(row_max[h], tile_max);\n";
  code << "        const float shift = new_max == neg_inf ? 0.0f : new_max;\n";
  code << "        const float rescale = expf(row_max[h] - shift);\n";
  code << "        float tile_sum = 0.0f;\n";
  code << "#pragma unroll\n        for (int nb = 0; nb < 4; ++nb) {\n";
  code << "          s[nb][2 * h] = expf(s[nb][2 * h] - shift);\n";
  code << "          s[nb][2 * h + 1] = expf(s[nb][2 * h + 1] - shift);\n";
  code << "          tile_sum += s[nb][2 * h] + s[nb][2 * h + 1];\n";
  code << "        }\n";
  code << "        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 1);\n";
  code << "        tile_sum += __shfl_xor_sync(0xffffffffu, tile_sum, 2);\n";
  code << "        row_sum[h] = row_sum[h] * rescale + tile_sum;\n";
  code << "        row_max[h] = new_max;\n";
  code << "#pragma unroll\n        for (int c = 0; c < " << n_blocks
       << "; ++c) {\n          acc[c][2 * h] *= rescale;\n          acc[c][2 * h + 1] *= "
          "rescale;\n        }\n";
  code << "      }\n";
  code << values_mma(plan) << "    }\n";
  // The output: rows r0 and r0 + 8, columns 8 c + 2 quad + {0, 1}.
  code << "#pragma unroll\n    for (int h = 0; h < 2; ++h) {\n";
  code << "      const index_t m = q0 + r0 + 8 * h;\n";
  if (partial_rows) code << "      if (m >= " << lq << ") continue;\n";
  code << "#pragma unroll\n      for (int c = 0; c < " << n_blocks << "; ++c) {\n";
  code << "#pragma unroll\n        for (int x = 0; x < 2; ++x) {\n";
  code << "          const index_t n = c * 8 + 2 * quad + x;\n";
  code << "          " << parts.output << " = "
       << rounded(core.dtype, "acc[c][2 * h + x] / row_sum[h]") << ";\n";
  code << "          const index_t i = (bh * " << lq << " + m) * " << dv << " + n;\n";
  STITCH_ASSIGN_OR_RETURN(std::string writes, attention_writes(w, written, "          "));
  code << writes << "        }\n      }\n    }\n  }\n";
  return code.str();
}

// The tiles: rows in the core's type padded by AttentionPlan::row_pad on tensor cores
// (16-bit by 8, float by 4), float with the K rows padded by one on CUDA cores.
std::string Composition<AttentionPlan>::prologue(const KernelWriter& w, const AttentionPlan& plan,
                                                 const Written& /*written*/) {
  std::ostringstream body;
  const ir::AttentionCore& core = plan.core;
  const bool tensor_cores = plan.tensor_cores;
  const std::string t = tensor_cores ? storage_type(core.dtype).value() : "float";
  const std::string pad = " + " + num(plan.row_pad());
  const std::string q_pad = tensor_cores ? pad : "", k_pad = tensor_cores ? pad : " + 1";
  body << "  const index_t lane = threadIdx.x % 32;\n";
  body << "  const index_t warp = threadIdx.x / 32;\n";
  if (tensor_cores) {
    body << "  const index_t group = lane / 4;  // the fragments' row within 8\n";
    body << "  const index_t quad = lane % 4;   // the fragments' column pair\n";
  }
  body << "  " << t << "* tile_q = reinterpret_cast<" << t << "*>(smem + 0);  // [" << plan.tile_q()
       << ", " << core.d << q_pad << "] query rows of "
       << support::source_literal(w.graph_.value(core.query).name) << "\n";
  body << "  " << t << "* tile_k = reinterpret_cast<" << t << "*>(smem + " << plan.k_offset
       << ");  // [32, " << core.d << k_pad << "] keys of "
       << support::source_literal(w.graph_.value(core.key).name) << "\n";
  body << "  " << t << "* tile_v = reinterpret_cast<" << t << "*>(smem + " << plan.v_offset
       << ");  // [32, " << core.dv << q_pad << "] values of "
       << support::source_literal(w.graph_.value(core.value).name) << "\n";
  return body.str();
}

// The template entry's attributes: Batch dims over the grid, query rows in tiles per block, keys
// over a warp's lanes.
TemplateAttrs Composition<AttentionPlan>::template_attrs(const TemplateContext& context,
                                                         const AttentionPlan& plan) {
  const std::vector<int64_t>& dims = context.dims;
  TemplateAttrs attrs;
  for (size_t d = 0; d < dims.size(); ++d) {
    attrs.push_back(d + 2 < dims.size()    ? "GRID"
                    : d + 2 == dims.size() ? "GRID-TILE_" + num(plan.tile_q())
                                           : "WARP");
  }
  return attrs;
}

// The .cu header's explanation.
std::string Composition<AttentionPlan>::detail(const ir::Graph& /*graph*/,
                                               const GroupSchedule& /*schedule*/,
                                               const AttentionPlan& plan) {
  std::ostringstream cu;
  const ir::AttentionCore& core = plan.core;
  cu << " (" << core.batch << " x [" << core.lq << ", " << core.d << "] queries against " << core.lk
     << " keys with values of " << core.dv << ": a block per " << plan.tile_q()
     << " query rows of one batch x head, K/V tiles of 32 keys "
     << "in shared memory, online softmax in registers, no scores in memory"
     << (plan.tensor_cores ? "; tensor cores, mma.sync " + mma_name(plan) : "") << ")";
  return cu.str();
}

}  // namespace stitch::emit

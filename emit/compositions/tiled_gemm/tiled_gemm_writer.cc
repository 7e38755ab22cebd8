// The tiled gemm composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {
namespace {

// The k loop of a float16/bfloat16 tile: mma.sync m16n8k16, each register two values
// of the reduced type (the tiles hold them as floats: exact), PTX's layouts
// (stitch_prelude.cuh): a[r] = A[group + 8 (r & 1)][2 quad + 8 (r >> 1) + {0, 1}],
// b[r] = B[2 quad + 8 r + {0, 1}][group].
std::string half_precision_steps(const TiledGemmPlan& tiled) {
  const int64_t as = tiled.a_stride, bs = tiled.b_stride;
  const bool bf16 = tiled.precision == ir::Precision::kBFloat16;
  const std::string convert = bf16 ? "__float2bfloat16_rn" : "__float2half_rn";
  auto pack = [&](const std::string& lo, const std::string& hi) {
    return "stitch_pack16(" + convert + "(" + lo + "), " + convert + "(" + hi + "))";
  };
  std::ostringstream code;
  code << "      const float* a_frag = tile_a + (pm + group) * " << as << " + 2 * quad;\n";
  code << "      const float* b_frag = tile_b + 2 * quad * " << bs << " + pn + group;\n";
  code << "      for (index_t kk = 0; kk < " << tiled.padded_k << "; kk += 16) {\n";
  code << "        const uint32_t a[4] = {" << pack("a_frag[kk]", "a_frag[kk + 1]") << ",\n"
       << "                               "
       << pack("a_frag[kk + " + std::to_string(8 * as) + "]",
               "a_frag[kk + " + std::to_string(8 * as + 1) + "]")
       << ",\n                               " << pack("a_frag[kk + 8]", "a_frag[kk + 9]")
       << ",\n                               "
       << pack("a_frag[kk + " + std::to_string(8 * as + 8) + "]",
               "a_frag[kk + " + std::to_string(8 * as + 9) + "]")
       << "};\n";
  code << "        const uint32_t b[2] = {"
       << pack("b_frag[kk * " + std::to_string(bs) + "]",
               "b_frag[(kk + 1) * " + std::to_string(bs) + "]")
       << ",\n                               "
       << pack("b_frag[(kk + 8) * " + std::to_string(bs) + "]",
               "b_frag[(kk + 9) * " + std::to_string(bs) + "]")
       << "};\n";
  code << "        " << (bf16 ? "stitch_mma_m16n8k16_bf16" : "stitch_mma_m16n8k16_f16")
       << "(acc, a, b);\n      }\n";
  return code.str();
}

}  // namespace

std::string tf32_mma_step(bool split, const std::string& indent, const std::string& acc) {
  std::string code = indent + "uint32_t a[4], b[2];\n";
  code += indent + "for (int r = 0; r < 4; ++r) a[r] = stitch_tf32(a_in[r]);\n";
  code += indent + "for (int r = 0; r < 2; ++r) b[r] = stitch_tf32(b_in[r]);\n";
  if (split) {
    code +=
        indent + "// 3xTF32: the small parts (x - tf32(x), rounded) against the big ones first\n";
    code += indent + "uint32_t a_small[4], b_small[2];\n";
    code += indent +
            "for (int r = 0; r < 4; ++r) a_small[r] = stitch_tf32(a_in[r] - "
            "stitch_tf32_value(a[r]));\n";
    code += indent +
            "for (int r = 0; r < 2; ++r) b_small[r] = stitch_tf32(b_in[r] - "
            "stitch_tf32_value(b[r]));\n";
    code += indent + "stitch_mma_m16n8k8_tf32(" + acc + ", a_small, b);\n";
    code += indent + "stitch_mma_m16n8k8_tf32(" + acc + ", a, b_small);\n";
  }
  return code + indent + "stitch_mma_m16n8k8_tf32(" + acc + ", a, b);\n";
}

// The tile's product on tensor cores: each warp takes 16 x 8 pieces of the [tm, tn]
// tile in turn; per k step of 8 every lane loads its fragment elements from the shared
// tiles (PTX's m16n8k8 layouts, stitch_prelude.cuh), rounds them to TF32 (and, for
// fp32x3, splits off the small parts) and issues mma.sync; then each lane finishes its
// four accumulators as the scalar path finishes one element.
Result<std::string> Composition<TiledGemmPlan>::tensor_core_pieces(KernelWriter& w,
                                                                   const TiledGemmPlan& tiled,
                                                                   const Written& written) {
  const ir::Node& matmul = w.graph_.node(tiled.gemm);
  const ir::ValueId c = matmul.outputs[0];
  const int64_t m = tiled.shape.m, n = tiled.shape.n;
  const int64_t tm = tiled.tile_m, tn = tiled.tile_n;
  const int64_t as = tiled.a_stride, bs = tiled.b_stride;
  const bool split = tiled.precision == ir::Precision::kFloat32x3;
  const std::string ct = compute_type(w.dtype(c));
  std::ostringstream code;
  code << "    // " << ir::precision_name(tiled.precision)
       << " on tensor cores: " << (tm / 16) * (tn / 8)
       << " pieces of 16 x 8 per tile, a warp per piece in turn\n";
  code << "    const int lane = static_cast<int>(threadIdx.x % 32);\n";
  code << "    const int group = lane / 4, quad = lane % 4;\n";
  code << "    for (index_t piece = threadIdx.x / 32; piece < " << (tm / 16) * (tn / 8)
       << "; piece += blockDim.x / 32) {\n";
  code << "      const index_t pm = piece / " << tn / 8 << " * 16, pn = piece % " << tn / 8
       << " * 8;\n";
  code << "      float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
  if (tiled.half_precision()) {
    code << half_precision_steps(tiled);
  } else {
    code << "      const float* a_frag = tile_a + (pm + group) * " << as << " + quad;\n";
    code << "      const float* b_frag = tile_b + quad * " << bs << " + pn + group;\n";
    code << "      for (index_t kk = 0; kk < " << tiled.padded_k << "; kk += 8) {\n";
    code << "        // A[pm + group + 8 (r & 1)][kk + quad + 4 (r >> 1)], B[kk + quad + 4 r][pn + "
            "group]\n";
    code << "        const float a_in[4] = {a_frag[kk], a_frag[kk + " << 8 * as
         << "], a_frag[kk + 4], "
         << "a_frag[kk + " << 8 * as + 4 << "]};\n";
    code << "        const float b_in[2] = {b_frag[kk * " << bs << "], b_frag[(kk + 4) * " << bs
         << "]};\n";
    code << tf32_mma_step(split, "        ");
    code << "      }\n";
  }
  code << "      for (int r = 0; r < 4; ++r) {  // D[group + 8 (r >> 1)][2 quad + (r & 1)]\n";
  code << "        const index_t m = m0 + pm + group + 8 * (r >> 1);\n";
  code << "        const index_t n = n0 + pn + 2 * quad + (r & 1);\n";
  code << "        if (m >= " << m << " || n >= " << n << ") continue;\n";
  code << "        r_" << w.names_.at(c) << " = "
       << load(w.dtype(c), store(w.dtype(c), "static_cast<" + ct + ">(acc[r])")) << ";\n";
  code << "        const index_t i = (batch * " << m << " + m) * " << n << " + n;\n";
  STITCH_ASSIGN_OR_RETURN(std::string writes, w.output_writes(written, "        "));
  code << writes << "      }\n    }\n";
  return code.str();
}

Result<std::string> Composition<TiledGemmPlan>::stages(KernelWriter& w, const TiledGemmPlan& plan,
                                                       const Written& written) {
  const TiledGemmPlan& tiled = plan;
  const ir::Node& matmul = w.graph_.node(tiled.gemm);
  const ir::ValueId c = matmul.outputs[0];
  const ir::GemmShape& shape = tiled.shape;
  const int64_t m = shape.m, n = shape.n, k = shape.k;
  const int64_t tm = tiled.tile_m, tn = tiled.tile_n;
  const int64_t m_tiles = (m + tm - 1) / tm, n_tiles = (n + tn - 1) / tn;
  const int64_t tiles = shape.batch * m_tiles * n_tiles;
  const std::vector<int64_t>& a_batch = shape.left_batch_dims;
  const std::vector<int64_t>& b_batch = shape.right_batch_dims;
  const std::vector<int64_t>& batch = shape.batch_dims;
  // The tensor-core path's tiles are [tm, padded_k] and [padded_k, tn] in rows of
  // a_stride and b_stride floats, zeros past k (TiledGemmPlan).
  const bool mma = tiled.tensor_cores();
  const int64_t kp = mma ? tiled.padded_k : k;
  STITCH_ASSIGN_OR_RETURN(
      std::string a_value,
      w.operand_value(matmul.inputs[0], "a_base + m * " + num(k) + " + e % " + num(kp)));
  STITCH_ASSIGN_OR_RETURN(
      std::string b_value,
      w.operand_value(matmul.inputs[1], "b_base + (e / " + num(tn) + ") * " + num(n) + " + n"));
  STITCH_RETURN_IF_ERROR(w.accessor(c).status());
  const std::string ct = compute_type(w.dtype(c));
  std::ostringstream code;
  code << "  // " << comment_name(matmul) << " -> " << ir::to_string(w.graph_.value(c).type)
       << ": tiles of [" << tm << ", " << tn << "] outputs of one batch per block\n";
  code << "  for (index_t tile = blockIdx.x; tile < " << tiles << "; tile += gridDim.x) {\n";
  code << "    const index_t batch = tile / " << m_tiles * n_tiles << ";\n";
  if (n_tiles == 1) {
    code << "    const index_t m0 = tile % " << m_tiles << " * " << tm << ";\n";
    code << "    const index_t n0 = 0;\n";
  } else {
    code << "    const index_t m0 = (tile / " << n_tiles << ") % " << m_tiles << " * " << tm
         << ";\n";
    code << "    const index_t n0 = tile % " << n_tiles << " * " << tn << ";\n";
  }
  code << "    const index_t a_base = (" << broadcast_index(batch, a_batch, "batch") << ") * "
       << m * k << ";\n";
  code << "    const index_t b_base = (" << broadcast_index(batch, b_batch, "batch") << ") * "
       << k * n << ";\n";
  if (mma) {
    const std::string k_test = kp == k ? "" : " && e % " + num(kp) + " < " + num(k);
    code << w.tile_load_loop(
        "tile_a[(e / " + num(kp) + ") * " + num(tiled.a_stride) + " + e % " + num(kp) + "]",
        tm * kp, "const index_t m = m0 + e / " + num(kp) + ";",
        "m < " + num(m) + k_test + " ? static_cast<float>(" + a_value + ") : 0.0f", "    ");
    const std::string b_slot =
        tiled.b_stride == tn
            ? "tile_b[e]"
            : "tile_b[(e / " + num(tn) + ") * " + num(tiled.b_stride) + " + e % " + num(tn) + "]";
    const std::string kb_test = kp == k ? "" : " && e / " + num(tn) + " < " + num(k);
    code << w.tile_load_loop(
        b_slot, kp * tn, "const index_t n = n0 + e % " + num(tn) + ";",
        "n < " + num(n) + kb_test + " ? static_cast<float>(" + b_value + ") : 0.0f", "    ");
    code << "    __syncthreads();\n";
    STITCH_ASSIGN_OR_RETURN(std::string pieces, tensor_core_pieces(w, tiled, written));
    code << pieces << "    __syncthreads();\n  }\n";
    return code.str();
  }
  code << w.tile_load_loop("tile_a[e]", tm * k, "const index_t m = m0 + e / " + num(k) + ";",
                           "m < " + num(m) + " ? static_cast<float>(" + a_value + ") : 0.0f",
                           "    ");
  code << w.tile_load_loop("tile_b[e]", k * tn, "const index_t n = n0 + e % " + num(tn) + ";",
                           "n < " + num(n) + " ? static_cast<float>(" + b_value + ") : 0.0f",
                           "    ");
  code << "    __syncthreads();\n";
  code << "    for (index_t e = threadIdx.x; e < " << tm * tn << "; e += blockDim.x) {\n";
  code << "      const index_t m = m0 + e / " << tn << ";\n";
  code << "      const index_t n = n0 + e % " << tn << ";\n";
  code << "      if (m >= " << m << " || n >= " << n << ") continue;\n";
  code << "      float sum = 0;\n";
  code << "      for (index_t kk = 0; kk < " << k << "; ++kk) {\n";
  code << "        sum += tile_a[(e / " << tn << ") * " << k << " + kk] * tile_b[kk * " << tn
       << " + e % " << tn << "];\n      }\n";
  code << "      r_" << w.names_.at(c) << " = "
       << load(w.dtype(c), store(w.dtype(c), "static_cast<" + ct + ">(sum)")) << ";\n";
  code << "      const index_t i = (batch * " << m << " + m) * " << n << " + n;\n";
  STITCH_ASSIGN_OR_RETURN(std::string writes, w.output_writes(written, "      "));
  code << writes << "    }\n    __syncthreads();\n  }\n";
  return code.str();
}

std::string Composition<TiledGemmPlan>::prologue(const KernelWriter& w, const TiledGemmPlan& plan,
                                                 const Written& /*written*/) {
  std::ostringstream body;
  const ir::Node& matmul = w.graph_.node(plan.gemm);
  const int64_t k = plan.tensor_cores() ? plan.padded_k : plan.shape.k;
  const std::string a_rows =
      plan.tensor_cores() ? " in rows of " + std::to_string(plan.a_stride) + " floats" : "";
  const std::string b_rows = plan.tensor_cores() && plan.b_stride != plan.tile_n
                                 ? " in rows of " + std::to_string(plan.b_stride) + " floats"
                                 : "";
  body << "  float* tile_a = reinterpret_cast<float*>(smem + " << plan.a_offset << ");  // ["
       << plan.tile_m << ", " << k << "] rows of "
       << support::source_literal(w.graph_.value(matmul.inputs[0]).name) << a_rows << "\n";
  body << "  float* tile_b = reinterpret_cast<float*>(smem + " << plan.b_offset << ");  // [" << k
       << ", " << plan.tile_n << "] columns of "
       << support::source_literal(w.graph_.value(matmul.inputs[1]).name) << b_rows << "\n";
  return body.str();
}

// The .cu header's explanation.
std::string Composition<TiledGemmPlan>::detail(const ir::Graph& /*graph*/,
                                               const GroupSchedule& /*schedule*/,
                                               const TiledGemmPlan& plan) {
  std::ostringstream cu;
  const ir::GemmShape& shape = plan.shape;
  cu << " (" << shape.batch << " x [" << shape.m << ", " << shape.k << "] x [" << shape.k << ", "
     << shape.n << "] MatMul in [" << plan.tile_m << ", " << plan.tile_n
     << "] output tiles, A and B tiles in shared memory"
     << (plan.tensor_cores() ? ", " + std::string(ir::precision_name(plan.precision)) +
                                   " products on tensor cores (mma.sync " +
                                   (plan.half_precision() ? "m16n8k16)" : "m16n8k8)")
                             : "")
     << ")";
  return cu.str();
}

// The template entry's attributes: the MatMul's batch dims over the grid, its output in
// [tile_m, tile_n] tiles per block, a thread per element of a tile row; every other
// value by its own mapping.
TemplateAttrs Composition<TiledGemmPlan>::template_attrs(const TemplateContext& context,
                                                         const TiledGemmPlan& plan) {
  const ReductionMapping mapping = context.value.mapping;
  if (context.node.id != plan.gemm || mapping == ReductionMapping::kWarp ||
      mapping == ReductionMapping::kColumn) {
    return stage_template_attrs(context);
  }
  TemplateAttrs attrs;
  const size_t rank = context.dims.size();
  for (size_t d = 0; d < rank; ++d) {
    attrs.push_back(d + 2 == rank   ? "GRID-TILE_" + num(plan.tile_m) + "x" + num(plan.tile_n)
                    : d + 1 == rank ? "THREAD"
                                    : "GRID");
  }
  return attrs;
}

}  // namespace stitch::emit

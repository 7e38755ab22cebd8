// The tiled gemm composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

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
  STITCH_ASSIGN_OR_RETURN(
      std::string a_value,
      w.operand_value(matmul.inputs[0], "a_base + m * " + num(k) + " + e % " + num(k)));
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
  body << "  float* tile_a = reinterpret_cast<float*>(smem + " << plan.a_offset << ");  // ["
       << plan.tile_m << ", " << plan.shape.k << "] rows of "
       << support::source_literal(w.graph_.value(matmul.inputs[0]).name) << "\n";
  body << "  float* tile_b = reinterpret_cast<float*>(smem + " << plan.b_offset << ");  // ["
       << plan.shape.k << ", " << plan.tile_n << "] columns of "
       << support::source_literal(w.graph_.value(matmul.inputs[1]).name) << "\n";
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
     << "] output tiles, A and B tiles in shared memory)";
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

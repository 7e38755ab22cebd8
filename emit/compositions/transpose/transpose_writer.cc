// The transpose composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// Transpose composition (schedule.h): a block per 32 x 32 tile of one batch. The
// block's 8 warps read 4 tile rows each along the input's contiguous axis, then write
// 4 tile columns each along the output's; the tile's rows are padded by one element,
// so a warp reading a column hits 32 different banks.
Result<std::string> Composition<TransposePlan>::stages(KernelWriter& w,
                                                       const TransposePlan& /*plan*/,
                                                       const Written& /*written*/) {
  const ir::Node& node = w.graph_.node(w.schedule_.boundary.ordered_nodes.at(0));
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  STITCH_ASSIGN_OR_RETURN(std::string x, w.accessor(in));
  const std::string type = compute_type(w.dtype(in));
  const TransposePlan& transpose = w.plan<TransposePlan>();
  const int64_t rows = transpose.rows, cols = transpose.cols;
  const int64_t row_tiles = (rows + 31) / 32, col_tiles = (cols + 31) / 32;
  const int64_t tiles = transpose.batch * row_tiles * col_tiles;
  std::ostringstream code;
  code << "  " << type << "* tile = reinterpret_cast<" << type
       << "*>(smem + 0);  // [32, 32 + 1]\n";
  code << "  const index_t x = threadIdx.x % 32;\n";
  code << "  const index_t y = threadIdx.x / 32;\n";
  code << "  // " << comment_name(node) << ": [" << transpose.batch << ", " << rows << ", " << cols
       << "] -> [" << transpose.batch << ", " << cols << ", " << rows << "]\n";
  code << "  for (index_t t = blockIdx.x; t < " << tiles << "; t += gridDim.x) {\n";
  code << "    const index_t b = t / " << row_tiles * col_tiles << ";\n";
  code << "    const index_t r0 = t / " << col_tiles << " % " << row_tiles << " * 32;\n";
  code << "    const index_t c0 = t % " << col_tiles << " * 32;\n";
  code << "    for (index_t k = y; k < 32; k += 8) {\n";
  code << "      if (r0 + k < " << rows << " && c0 + x < " << cols << ") tile[k * 33 + x] = " << x
       << "((b * " << rows << " + r0 + k) * " << cols << " + c0 + x);\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "    for (index_t k = y; k < 32; k += 8) {\n";
  code << "      if (c0 + k < " << cols << " && r0 + x < " << rows << ") " << w.pointer_name(out)
       << "[(b * " << cols << " + c0 + k) * " << rows
       << " + r0 + x] = " << store(w.dtype(out), "tile[x * 33 + k]") << ";\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "  }\n";
  return code.str();
}

// The template entry's attributes: batch dims over the grid, 32 x 32 tiles staged.
TemplateAttrs Composition<TransposePlan>::template_attrs(const TemplateContext& context,
                                                         const TransposePlan& /*plan*/) {
  const std::vector<int64_t>& dims = context.dims;
  TemplateAttrs attrs;
  for (size_t d = 0; d < dims.size(); ++d) {
    attrs.push_back(d + 2 < dims.size() ? "GRID" : "GRID-TILE_32x32S");
  }
  return attrs;
}

// The .cu header's explanation.
std::string Composition<TransposePlan>::detail(const ir::Graph& /*graph*/,
                                               const GroupSchedule& /*schedule*/,
                                               const TransposePlan& plan) {
  std::ostringstream cu;
  cu << " ([" << plan.batch << ", " << plan.rows << ", " << plan.cols << "] -> [" << plan.batch
     << ", " << plan.cols << ", " << plan.rows
     << "]: a block per 32 x 32 tile through shared memory)";
  return cu.str();
}

}  // namespace stitch::emit

// GEMMs in the generated CUDA (see kernel_writer.h): the per-thread body of a
// fine-grained MatMul or Gemm output element (thread composition over k), and the
// block composition of a group's one (batched) MatMul with A and B tiles in shared
// memory and a same-index epilogue (schedule.h, 2b.), and a stage's MatMul a warp per
// output element or, on tensor cores, a warp per 16 x 8 piece. Products accumulate in the
// output's compute type (float for float32), as cuBLAS does.
#include <algorithm>
#include <sstream>

#include "emit/compositions/tiled_gemm/tiled_gemm_plan.h"
#include "emit/cuda_text.h"
#include "emit/kernel_writer.h"
#include "ir/core/gemm_shape.h"
#include "ir/core/precision.h"

namespace stitch::emit {

// Body of compute_<v>(i) for a MatMul or Gemm output element (thread composition
// over k; fine-grained GEMMs only: at most 64x64x64 per batch). With `lanes` (a MatMul
// only), the body of lane `lane`'s part: k from the lane in steps of 32, the raw sum.
Result<std::string> KernelWriter::gemm_body(const ir::Node& node, bool lanes) {
  const ir::ValueId out = node.outputs[0];
  const std::vector<int64_t>& out_dims = dims(out);
  if (product(out_dims) == 0) return empty_value_body(compute_type(dtype(out)));
  STITCH_ASSIGN_OR_RETURN(std::string a, accessor(node.inputs[0]));
  STITCH_ASSIGN_OR_RETURN(std::string b, accessor(node.inputs[1]));
  std::string why_not;
  const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph_, node, &why_not);
  if (!shape) return error(node, "has no GEMM shape to emit: " + why_not);
  const int64_t m = shape->m, n = shape->n, k = shape->k;
  // Float products accumulate in float (float64 in double), as cuBLAS does: the
  // fine-grained GEMMs here have k <= 64, so the error stays near k u sum|a b|.
  const std::string acc = compute_type(dtype(out));
  if (gemm_form(node) == GemmForm::kGemm) {
    const bool ta = shape->transpose_left;
    const bool tb = shape->transpose_right;
    std::string a_index = ta ? "kk * " + num(m) + " + m" : "m * " + num(k) + " + kk";
    std::string b_index = tb ? "n * " + num(k) + " + kk" : "kk * " + num(n) + " + n";
    std::string body =
        "    const index_t n = i % " + num(n) + ";\n    const index_t m = i / " + num(n) + ";\n";
    const ir::DType t = dtype(out);
    body += "    " + acc + " sum = 0;\n    for (index_t kk = 0; kk < " + num(k) + "; ++kk) {\n";
    body += "      sum += " +
            cuda_core_operand("static_cast<" + acc + ">(" + a + "(" + a_index + "))", t) + " * " +
            cuda_core_operand("static_cast<" + acc + ">(" + b + "(" + b_index + "))", t) +
            ";\n    }\n";
    body += "    " + acc + " y = static_cast<" + acc + ">(" +
            float_literal(node.float_attribute("alpha", 1.0f)) + ") * sum;\n";
    if (node.inputs.size() > 2 && node.inputs[2] != ir::kNoId) {
      STITCH_ASSIGN_OR_RETURN(std::string c, accessor(node.inputs[2]));
      body += "    y += static_cast<" + acc + ">(" +
              float_literal(node.float_attribute("beta", 1.0f)) + ") * static_cast<" + acc + ">(" +
              c + "(" + broadcast_index(out_dims, dims(node.inputs[2]), "i") + "));\n";
    }
    return body + "    return static_cast<" + compute_type(dtype(out)) + ">(y);\n";
  }
  // MatMul: a 1-D operand is a row (A) or a column (B); batch dims broadcast (ir::GemmShape).
  const std::vector<int64_t>& batch = shape->batch_dims;
  const std::vector<int64_t>& a_batch = shape->left_batch_dims;
  const std::vector<int64_t>& b_batch = shape->right_batch_dims;
  std::string body = "    const index_t n = i % " + num(n) + ";\n    const index_t m = (i / " +
                     num(n) + ") % " + num(m) + ";\n    const index_t batch = i / " + num(m * n) +
                     ";\n";
  body += "    const index_t a_base = (" + broadcast_index(batch, a_batch, "batch") + ") * " +
          num(m * k) + " + m * " + num(k) + ";\n";
  body += "    const index_t b_base = (" + broadcast_index(batch, b_batch, "batch") + ") * " +
          num(k * n) + " + n;\n";
  body += "    " + acc + " sum = 0;\n    for (index_t kk = " + (lanes ? "lane" : "0") + "; kk < " +
          num(k) + (lanes ? "; kk += 32) {\n" : "; ++kk) {\n");
  const ir::DType t = dtype(out);
  body +=
      "      sum += " + cuda_core_operand("static_cast<" + acc + ">(" + a + "(a_base + kk))", t) +
      " * " +
      cuda_core_operand("static_cast<" + acc + ">(" + b + "(b_base + kk * " + num(n) + "))", t) +
      ";\n    }\n";
  return body + (lanes ? "    return sum;\n"
                       : "    return static_cast<" + compute_type(dtype(out)) + ">(sum);\n");
}

// A stage writing MatMul `id` a warp per output element (ValueSchedule::lanes_over_k):
// lanes_<v>(i, lane) sums the lane's k terms, shuffles combine the 32 sums in a fixed
// tree order, and lane 0 writes the element.
Result<std::string> KernelWriter::lane_gemm_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  if (gemm_form(node) != GemmForm::kMatMul) {
    return Status::internal("lanes over k planned for " + node.display_name() +
                            ", which is not a MatMul");
  }
  STITCH_ASSIGN_OR_RETURN(std::string body, gemm_body(node, /*lanes=*/true));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::string acc = compute_type(dtype(id));
  const std::string lanes = "lanes_" + names_.at(id);
  defs_ << "  // MatMul " << comment_name(node) << ": lane `lane`'s part of element i\n"
        << "  auto " << lanes << " = [&](index_t i, index_t lane) -> " << acc << " {\n"
        << body << "  };\n";
  const std::string in_ = indent + "  ";
  const int64_t outputs = elements_of(graph_, id);
  std::string code = indent + "// a warp per output element: lanes over k, shuffles combine\n";
  code += indent + "for (index_t i = " + loop_start(outputs, /*per_warp=*/true) + "; i < " +
          num(outputs) + "; i += threads / 32) {\n";
  code += in_ + "const index_t lane = threadIdx.x % 32;\n";
  code += in_ + acc + " a = " + lanes + "(i, lane);\n";
  code += shuffle_combine(ReduceCombine::kSum, acc, 1, in_);
  STITCH_ASSIGN_OR_RETURN(std::string epilogues, epilogue_writes(id, in_ + "  "));
  if (epilogues.empty()) {
    code += in_ + "if (lane == 0) " + target_array(id) + "[i] = " + store(dtype(id), "a") + ";\n";
  } else {
    code += in_ + "if (lane == 0) {\n" + in_ + "  " + target_array(id) +
            "[i] = " + store(dtype(id), "a") + ";\n" + epilogues + in_ + "}\n";
  }
  return code + indent + "}\n";
}

// A stage writing MatMul `id` on tensor cores a warp per 16 x 8 piece of the product
// (ValueSchedule::warp_mma): per k step each lane reads its fragment elements of A and
// B through their accessors (PTX's layouts, stitch_prelude.cuh; zeros past m, n and
// k), converts them to the precision's operands and issues mma.sync; then it writes its
// four elements (and their same-index epilogues).
Result<std::string> KernelWriter::warp_mma_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  std::string why_not;
  const std::optional<ir::GemmShape> shape = ir::gemm_shape(graph_, node, &why_not);
  if (gemm_form(node) != GemmForm::kMatMul || !shape) {
    return Status::internal("tensor-core pieces planned for " + node.display_name() +
                            ", which is not a MatMul with a GEMM shape: " + why_not);
  }
  const ir::Precision precision = tiled_gemm_precision(dtype(id), schedule_.products);
  if (!ir::uses_tensor_cores(precision) && !ir::reduces_storage(precision)) {
    return Status::internal("tensor-core pieces planned for " + node.display_name() +
                            " at fp32 products");
  }
  STITCH_ASSIGN_OR_RETURN(std::string a, accessor(node.inputs[0]));
  STITCH_ASSIGN_OR_RETURN(std::string b, accessor(node.inputs[1]));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const int64_t m = shape->m, n = shape->n, k = shape->k;
  const int64_t pieces_m = (m + 15) / 16, pieces_n = (n + 7) / 8;
  const int64_t pieces = shape->batch * pieces_m * pieces_n;
  const bool half = ir::reduces_storage(precision);
  const int64_t k_step = half ? 16 : 8;
  const std::string in1 = indent + "  ", in2 = indent + "    ", in3 = indent + "      ";
  std::string code = indent + "// " + std::string(ir::precision_name(precision)) +
                     " on tensor cores: a warp per 16 x 8 piece, mma.sync m16n8k" + num(k_step) +
                     "\n";
  code += indent + "for (index_t piece = " + loop_start(pieces, /*per_warp=*/true) + "; piece < " +
          num(pieces) + "; piece += threads / 32) {\n";
  code += in1 + "const int lane = static_cast<int>(threadIdx.x % 32);\n";
  code += in1 + "const int group = lane / 4, quad = lane % 4;\n";
  code += in1 + "const index_t batch = piece / " + num(pieces_m * pieces_n) + ";\n";
  code += in1 + "const index_t m0 = piece / " + num(pieces_n) + " % " + num(pieces_m) +
          " * 16, n0 = piece % " + num(pieces_n) + " * 8;\n";
  code += in1 + "const index_t a_base = (" +
          broadcast_index(shape->batch_dims, shape->left_batch_dims, "batch") + ") * " +
          num(m * k) + ";\n";
  code += in1 + "const index_t b_base = (" +
          broadcast_index(shape->batch_dims, shape->right_batch_dims, "batch") + ") * " +
          num(k * n) + ";\n";
  // A[row][col] and B[row][col] of the piece's operands, zero outside the product.
  auto a_at = [&](const std::string& row, const std::string& col) {
    return "(" + row + " < " + num(m) + " && " + col + " < " + num(k) + " ? static_cast<float>(" +
           a + "(a_base + (" + row + ") * " + num(k) + " + " + col + ")) : 0.0f)";
  };
  auto b_at = [&](const std::string& row, const std::string& col) {
    return "(" + row + " < " + num(k) + " && " + col + " < " + num(n) + " ? static_cast<float>(" +
           b + "(b_base + (" + row + ") * " + num(n) + " + " + col + ")) : 0.0f)";
  };
  code += in1 + "float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};\n";
  code += in1 + "for (index_t kk = 0; kk < " + num(k) + "; kk += " + num(k_step) + ") {\n";
  if (half) {
    // a[r] = A[group + 8 (r & 1)][kk + 2 quad + 8 (r >> 1) + {0, 1}],
    // b[r] = B[kk + 2 quad + 8 r + {0, 1}][n0 + group]
    const std::string convert =
        precision == ir::Precision::kBFloat16 ? "__float2bfloat16_rn" : "__float2half_rn";
    code += in2 + "uint32_t a[4], b[2];\n";
    code += in2 + "for (int r = 0; r < 4; ++r) {\n";
    code +=
        in3 + "const index_t row = m0 + group + 8 * (r & 1), col = kk + 2 * quad + 8 * (r >> 1);\n";
    code += in3 + "a[r] = stitch_pack16(" + convert + "(" + a_at("row", "col") + "), " + convert +
            "(" + a_at("row", "col + 1") + "));\n";
    code += in2 + "}\n";
    code += in2 + "for (int r = 0; r < 2; ++r) {\n";
    code += in3 + "const index_t row = kk + 2 * quad + 8 * r, col = n0 + group;\n";
    code += in3 + "b[r] = stitch_pack16(" + convert + "(" + b_at("row", "col") + "), " + convert +
            "(" + b_at("row + 1", "col") + "));\n";
    code += in2 + "}\n";
    code += in2 +
            (precision == ir::Precision::kBFloat16 ? "stitch_mma_m16n8k16_bf16"
                                                   : "stitch_mma_m16n8k16_f16") +
            "(acc, a, b);\n";
  } else {
    // a[r] = A[m0 + group + 8 (r & 1)][kk + quad + 4 (r >> 1)], b[r] = B[kk + quad + 4 r][n0 +
    // group]
    code += in2 + "float a_in[4], b_in[2];\n";
    code += in2 + "for (int r = 0; r < 4; ++r) a_in[r] = " +
            a_at("m0 + group + 8 * (r & 1)", "kk + quad + 4 * (r >> 1)") + ";\n";
    code += in2 +
            "for (int r = 0; r < 2; ++r) b_in[r] = " + b_at("kk + quad + 4 * r", "n0 + group") +
            ";\n";
    code += tf32_mma_step(precision == ir::Precision::kFloat32x3, in2);
  }
  code += in1 + "}\n";
  const std::string ct = compute_type(dtype(id));
  code +=
      in1 + "for (int r = 0; r < 4; ++r) {  // D[m0 + group + 8 (r >> 1)][n0 + 2 quad + (r & 1)]\n";
  code += in2 + "const index_t row = m0 + group + 8 * (r >> 1), col = n0 + 2 * quad + (r & 1);\n";
  code += in2 + "if (row >= " + num(m) + " || col >= " + num(n) + ") continue;\n";
  code += in2 + "const index_t i = (batch * " + num(m) + " + row) * " + num(n) + " + col;\n";
  code += in2 + target_array(id) + "[i] = " + store(dtype(id), "static_cast<" + ct + ">(acc[r])") +
          ";\n";
  STITCH_ASSIGN_OR_RETURN(std::string epilogues, epilogue_writes(id, in2));
  code += epilogues + in1 + "}\n";
  return code + indent + "}\n";
}

// The value of a MatMul operand at flat index `index` for a tile load: a reduction
// read only by the MatMul is computed here (one thread per element, rounded to its
// dtype as its storage would), anything else through its accessor.
Result<std::string> KernelWriter::operand_value(ir::ValueId id, const std::string& index) {
  if (produced_inside(id) && schedule_.values.at(id).materialized) {
    const ir::Node& node = graph_.node(graph_.value(id).producer);
    STITCH_ASSIGN_OR_RETURN(std::string body, reduction_body(node));
    std::string function = define_compute(id, body, " (computed into the shared tile)");
    return load(dtype(id), store(dtype(id), function + "(" + index + ")"));
  }
  STITCH_ASSIGN_OR_RETURN(std::string name, accessor(id));
  return name + "(" + index + ")";
}

std::string KernelWriter::cuda_core_operand(const std::string& value, ir::DType dtype) const {
  if (schedule_.products != ir::Precision::kTf32 || dtype != ir::DType::kFloat32) return value;
  return "stitch_round_tf32(" + value + ")";
}

// Stores of the group outputs among `written` at flat index `i` (their accessors read
// the element computed in registers).
Result<std::string> KernelWriter::output_writes(const std::vector<ir::ValueId>& written,
                                                const std::string& indent) {
  std::string code;
  for (ir::ValueId id : written) {
    if (!output_index_.count(id)) continue;
    STITCH_ASSIGN_OR_RETURN(std::string name, accessor(id));
    code += indent + "// " + comment_name(graph_.node(graph_.value(id).producer)) + " -> " +
            ir::to_string(graph_.value(id).type) + " (output)\n";
    code += indent + pointer_name(id) + "[i] = " + store(dtype(id), name + "(i)") + ";\n";
  }
  return code;
}

// Block composition of the group's MatMul: tiles of A and B through shared memory.
// The loop that fills a float tile of the arena with `elements` values: `value` at the
// tile index e, after `index` (declarations the value reads), stored to `slot` (the
// tile element of e: "tile_a[e]"). Where a
// thread fills several, it loads kTileLoadBatch of them into registers before storing
// any: independent loads in flight together rather than one load round each (the
// stores to shared memory and the loop's exit test sit between them otherwise, and
// nvcc does not move a load past either).
std::string KernelWriter::tile_load_loop(const std::string& slot, int64_t elements,
                                         const std::string& index, const std::string& value,
                                         const std::string& indent) const {
  constexpr int64_t kTileLoadBatch = 4;
  const int64_t block = schedule_.block;
  const std::string& i1 = indent;
  const std::string i2 = indent + "  ", i3 = indent + "    ", i4 = indent + "      ";
  std::ostringstream code;
  if (elements <= block) {
    code << i1 << "for (index_t e = threadIdx.x; e < " << elements << "; e += blockDim.x) {\n";
    code << i2 << index << "\n" << i2 << slot << " = " << value << ";\n" << i1 << "}\n";
    return code.str();
  }
  const int64_t batch = std::min(kTileLoadBatch, (elements + block - 1) / block);
  const bool exact = elements % (batch * block) == 0;
  code << i1 << "for (index_t e0 = threadIdx.x; e0 < " << elements << "; e0 += " << batch * block
       << ") {  // " << batch << " loads in flight per thread\n";
  code << i2 << "float loaded[" << batch << "];\n";
  code << "#pragma unroll\n" << i2 << "for (int u = 0; u < " << batch << "; ++u) {\n";
  code << i3 << "const index_t e = e0 + u * " << block << ";\n";
  if (exact) {
    code << i3 << index << "\n" << i3 << "loaded[u] = " << value << ";\n";
  } else {
    code << i3 << "loaded[u] = 0.0f;\n";
    code << i3 << "if (e < " << elements << ") {\n";
    code << i4 << index << "\n" << i4 << "loaded[u] = " << value << ";\n" << i3 << "}\n";
  }
  code << i2 << "}\n";
  code << "#pragma unroll\n" << i2 << "for (int u = 0; u < " << batch << "; ++u) {\n";
  code << i3 << "const index_t e = e0 + u * " << block << ";\n";
  code << i3 << (exact ? "" : "if (e < " + num(elements) + ") ") << slot << " = loaded[u];\n";
  code << i2 << "}\n" << i1 << "}\n";
  return code.str();
}

}  // namespace stitch::emit

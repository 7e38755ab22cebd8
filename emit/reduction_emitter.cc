// Reductions in the generated CUDA (see kernel_writer.h): the per-thread loop of the
// thread composition, the warp- and column-mapped reductions of schedule.h step 5 with
// their sliced partials, and the row-local shuffle reductions of the warp and block
// compositions (split rows included). How elements combine comes from the op's
// ReductionLowering (op_lowering.h); accumulation order is fixed, so results are
// deterministic.
#include <algorithm>

#include "emit/cuda_text.h"
#include "emit/kernel_writer.h"
#include "ir/core/reduction_axes.h"
#include "ir/reference/interpreter.h"

namespace stitch::emit {
namespace {

using ir::DType;

// 1 / count as a literal of the accumulator's type: a mean multiplies by it instead
// of dividing (an IEEE division by a value that is not a power of two is a call to a
// slow path; the product is within an ulp of the quotient).
std::string reciprocal(int64_t count, bool in_float) {
  const double value = 1.0 / static_cast<double>(count);
  return in_float ? float_literal(value) : double_literal(value);
}

// The reduction's result from its accumulator `a`, in double or in float math.
std::string reduce_result(const ReductionLowering& spec, bool in_float) {
  if (spec.post.empty()) return "a";
  return spec.post + (in_float ? "f(a)" : "(a)");
}

// The accumulation of a Reduce* node; an error for other reductions.
Result<ReductionLowering> reduce_spec(const ir::Node& node) {
  const ReductionLowering* lowering = find_reduction_lowering(node);
  if (lowering == nullptr || lowering->form != ReductionForm::kAccumulate) {
    return Status::invalid_input("node " + node.display_name() + ": no CUDA reduction for " +
                                 node.op_type);
  }
  return *lowering;
}

// Row-local reductions: the statements turning the row's combined accumulator `a`
// (float) into the register r_<base>.
std::string row_result(const ReductionLowering& spec, int64_t length, const std::string& base,
                       DType dtype, const std::string& indent) {
  std::string code;
  if (spec.mean) code += indent + "a = a * " + reciprocal(length, true) + ";\n";
  return code + indent + "r_" + base + " = " + rounded(dtype, reduce_result(spec, true)) + ";\n";
}

// The identity of an accumulator of `kind` and `type`, valid in every compile mode.
std::string identity(ReduceCombine kind, const std::string& type) {
  const std::string suffix = type == "float" ? "f" : "";
  if (kind == ReduceCombine::kSum) return "0.0" + suffix;
  if (kind == ReduceCombine::kProd) return "1.0" + suffix;
  // -inf, +inf
  return kind == ReduceCombine::kMax ? "__uint_as_float(0xff800000u)"
                                     : "__uint_as_float(0x7f800000u)";
}

// Row-local block reductions: after shuffle_combine, every thread of the block gets the
// combination of the warps' float results, through the 32-float scratch at
// `scratch_offset` of the arena, in warp order.
std::string float_block_combine(ReduceCombine kind, int64_t scratch_offset,
                                const std::string& indent) {
  return indent + "float* partials = reinterpret_cast<float*>(smem + " + num(scratch_offset) +
         ");\n" + indent + "if (threadIdx.x % 32 == 0) partials[threadIdx.x / 32] = a;\n" + indent +
         "__syncthreads();\n" + indent + "a = partials[0];\n" + indent +
         "for (unsigned int w = 1; w < blockDim.x / 32; ++w) a = " +
         combine_text(kind, "a", "partials[w]", true) + ";\n" + indent + "__syncthreads();\n";
}

// The stored result of a warp-mapped reduction's accumulator `a` of `type` (mean and
// post function applied) for an element of `dtype`.
std::string mapped_result(const ReductionLowering& spec, int64_t reduced, const std::string& type,
                          DType dtype) {
  const bool in_float = type == "float";
  std::string value = spec.mean ? "(a * " + reciprocal(reduced, in_float) + ")" : "a";
  if (!spec.post.empty()) value = spec.post + (in_float ? "f(" : "(") + value + ")";
  return store(dtype, in_float ? value : "static_cast<float>(" + value + ")");
}

// Sequential sums of more elements than this use Kahan compensation.
constexpr int64_t kKahanLength = 32;

// The statements adding `term` to the accumulator `a` with Kahan compensation (the
// low bits the sum lost kept in `compensation`), in `type`.
std::string kahan_step(const std::string& type, const std::string& term,
                       const std::string& indent) {
  return indent + "const " + type + " y = (" + term + ") - compensation;\n" + indent + "const " +
         type + " t = a + y;\n" + indent + "compensation = (t - a) - y;\n" + indent + "a = t;\n";
}

// `a`, the sum over r in [0, count) of `term`, an expression of `v` (the element
// `element`, an expression of r), in `type`. A plain loop has error up to
// (count - 1) u sum|x| (u = 2^-24 in float); compensated summation (Kahan) bounds it
// by about 2u sum|x| whatever the length.
std::string kahan_sum(const std::string& type, int64_t count, const std::string& element,
                      const std::string& term, bool compensated) {
  std::string code = "    " + type + " a = 0;\n";
  if (compensated) {
    code += "    " + type + " compensation = 0;  // Kahan: the low bits the sum lost\n";
  }
  code += "    for (index_t r = 0; r < " + num(count) + "; ++r) {\n";
  code += "      const " + type + " v = " + element + ";\n";
  code += compensated ? kahan_step(type, term, "      ") : "      a += " + term + ";\n";
  return code + "    }\n";
}

// The statements adding `v` (already defined) to the accumulator `a` of a mapped
// reduction; with `kahan`, also updating `compensation`.
std::string accumulate(const ReductionLowering& spec, bool kahan, const std::string& acc,
                       const std::string& indent) {
  if (kahan) return kahan_step(acc, spec.pre, indent);
  return indent + "a = " + combine_text(spec.combine, "a", "(" + spec.pre + ")", true) + ";\n";
}

}  // namespace

std::string accumulator_type(int bytes) { return bytes == 8 ? "double" : "float"; }

// Body of compute_<v>(i) for a reduction output element i (thread composition: one
// thread loops over the reduced elements).
Result<std::string> KernelWriter::reduction_body(const ir::Node& node) {
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ir::reduction_axes(graph_, node, &noop));
  const ir::ValueId x_id = node.inputs[0];
  const std::string out_ct = compute_type(dtype(node.outputs[0]));
  if (elements_of(graph_, node.outputs[0]) == 0) return empty_value_body(out_ct);
  if (!noop && elements_of(graph_, x_id) == 0) {
    STITCH_ASSIGN_OR_RETURN(std::string result, empty_reduction_result(node, axes));
    return "    static_cast<void>(i);  // every element reduces an empty set\n    return " +
           result + ";\n";
  }
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
  if (noop) return std::string("    return " + x + "(i);\n");
  const std::vector<int64_t>& in = dims(x_id);
  std::vector<int64_t> strides = row_major_strides(in);
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  for (size_t d = 0; d < in.size(); ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (reduced ? red_dims : kept_dims).push_back(in[d]);
    (reduced ? red_strides : kept_strides).push_back(strides[d]);
  }
  const int64_t count = product(red_dims);
  const DType in_type = dtype(x_id);
  const bool floating = ir::dtype_is_float(in_type);
  const std::string ct = compute_type(in_type);
  std::string body =
      "    const index_t base = " + strided_index(kept_dims, kept_strides, "i") + ";\n";
  std::string element = x + "(base + " + strided_index(red_dims, red_strides, "r") + ")";
  const ReductionLowering* lowering = find_reduction_lowering(node);
  const ReductionForm form = lowering != nullptr ? lowering->form : ReductionForm::kAccumulate;
  if (form == ReductionForm::kArgMax || form == ReductionForm::kArgMin) {
    bool last = node.int_attribute("select_last_index", 0) != 0;
    std::string cmp = form == ReductionForm::kArgMax ? ">" : "<";
    body += "    " + ct + " best = " + x + "(base);\n    index_t best_index = 0;\n";
    body += "    for (index_t r = 1; r < " + num(count) + "; ++r) {\n";
    body += "      const " + ct + " v = " + element + ";\n";
    body += "      if (v " + cmp + " best" + (last ? " || v == best" : std::string()) +
            ") {\n        best = v;\n        best_index = r;\n      }\n    }\n";
    return body + "    return best_index;\n";
  }
  // Float inputs accumulate in their compute type (float for float32, float16 and
  // bfloat16: no FP64 instruction), sums with Kahan compensation past kKahanLength
  // elements (docs/codegen.md, "Accumulation").
  const bool in_float = ct == "float";
  if (form == ReductionForm::kLogSumExp) {
    const std::string exp_fn = in_float ? "expf" : "exp";
    const std::string log_fn = in_float ? "logf" : "log";
    body += "    " + ct + " m = " + x + "(base);\n";
    body += "    for (index_t r = 1; r < " + num(count) + "; ++r) {\n      const " + ct +
            " v = " + element + ";\n      m = v > m ? v : m;\n    }\n";
    body += "    if (isinf(m)) m = 0;\n";
    body += kahan_sum(ct, count, element, exp_fn + "(v - m)", count > kKahanLength);
    return body + "    return static_cast<" + ct + ">(" + log_fn + "(a) + m);\n";
  }
  STITCH_ASSIGN_OR_RETURN(ReductionLowering spec, reduce_spec(node));
  const std::string& acc = ct;
  if (spec.combine == ReduceCombine::kSum && floating) {
    body += kahan_sum(acc, count, element, spec.pre, count > kKahanLength);
  } else {
    if (spec.combine == ReduceCombine::kSum || spec.combine == ReduceCombine::kProd) {
      body += "    " + acc + " a = " + (spec.combine == ReduceCombine::kSum ? "0" : "1") + ";\n";
      body += "    for (index_t r = 0; r < " + num(count) + "; ++r) {\n";
    } else {
      body += "    " + acc + " a = " + x + "(base);\n";
      body += "    for (index_t r = 1; r < " + num(count) + "; ++r) {\n";
    }
    body += "      const " + acc + " v = " + element + ";\n";
    body += "      a = " + combine_text(spec.combine, "a", "(" + spec.pre + ")", floating) +
            ";\n    }\n";
  }
  if (spec.mean) body += "    a = a * " + reciprocal(count, in_float) + ";\n";
  return body + "    return static_cast<" + ct + ">(" + reduce_result(spec, in_float) + ");\n";
}

// The result of a reduction over an empty set (every output element is the same): the
// reference interpreter's, so emitted code and the reference agree by construction
// (docs/semantics.md), computed on an input with the kept dims cut to 1.
Result<std::string> KernelWriter::empty_reduction_result(const ir::Node& node,
                                                         const std::vector<int64_t>& axes) {
  const ir::ValueId x_id = node.inputs[0];
  std::vector<int64_t> empty_dims = dims(x_id);
  for (size_t d = 0; d < empty_dims.size(); ++d) {
    if (!std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d))) empty_dims[d] = 1;
  }
  ir::Tensor empty;
  empty.dtype = dtype(x_id);
  empty.dims = std::move(empty_dims);
  std::vector<const ir::Tensor*> inputs = {&empty};
  for (size_t k = 1; k < node.inputs.size(); ++k) {
    inputs.push_back(node.inputs[k] == ir::kNoId ? nullptr
                                                 : graph_.value(node.inputs[k]).constant.get());
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::Tensor> results,
                          ir::evaluate_node(node, node.opset, inputs));
  STITCH_CHECK(!results.empty() && results[0].num_elements() > 0)
      << "an empty reduction without a result";
  return element_literal(results[0], compute_type(dtype(node.outputs[0])));
}

// Row-local reduction `id` inside the row loop (warp/block composition): the thread's
// elements of the row (or of the block's slice), shuffles, for a block the warps'
// results through the scratch, then the result in the register r_<name> (split rows:
// the slice's partial).
Result<std::string> KernelWriter::row_reduction_code(ir::ValueId id, const std::string& indent,
                                                     ir::ValueId stored) {
  const ir::Node& node = producer(id);
  const bool warp = plan<RowPlan>().warp;
  const bool split = plan<RowPlan>().split();
  const std::string& base = names_.at(id);
  std::string code =
      indent + "// " + comment_name(node) + " -> " + ir::to_string(graph_.value(id).type) + "\n";
  STITCH_ASSIGN_OR_RETURN(ReductionLowering spec, reduce_spec(node));
  const ir::ValueId x_id = node.inputs[0];
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const int64_t length = product(dims(x_id)) / std::max<int64_t>(plan<RowPlan>().rows, 1);
  std::string element = x + "(row * " + num(length) + " + j)";
  code += indent + "{\n";
  std::string in = indent + "  ";
  if (spec.combine == ReduceCombine::kSum || spec.combine == ReduceCombine::kProd) {
    code += in + "float a = " + (spec.combine == ReduceCombine::kSum ? "0.0f" : "1.0f") + ";\n";
  } else {
    code += in + "float a = " + x + "(row * " + num(length) + (split ? " + j0" : "") + ");\n";
  }
  const std::string step =
      "a = " + combine_text(spec.combine, "a", "(" + spec.pre + ")", true) + ";\n";
  if (stored != ir::kNoId && row_runs(length) && dtype(stored) == ir::DType::kFloat32) {
    // With 128-bit row accesses, the stored float32 input goes out a run at a time.
    code += in + row_run_loop(length) + " {\n";
    code += in + "  float4 run{};\n";
    code += in + "  for (index_t j = j4; j < j4 + 4; ++j) {\n";
    code += in + "    const float v = " + element + ";\n";
    code += in + "    stitch_set_lane4(run, static_cast<int>(j - j4), v);\n";
    code += in + "    " + step;
    code += in + "  }\n";
    code += in + "  stitch_store4(" + pointer_name(stored) + " + row * " + num(length) +
            " + j4, run, vec4);\n";
  } else {
    code += in + row_loop(length) + " {\n";
    code += in + "  const float v = " + element + ";\n";
    if (stored != ir::kNoId) {
      // The reduction's input, written for outside as it is read (a loop of its own would
      // evaluate it again).
      code += in + "  " + pointer_name(stored) + "[row * " + num(length) +
              " + j] = " + store(dtype(stored), "v") + ";\n";
    }
    code += in + "  " + step;
  }
  code += in + "}\n";
  code +=
      shuffle_combine(spec.combine, "float", 1, in, warp ? plan<RowPlan>().lanes_per_row / 2 : 16);
  if (!warp) {
    code += float_block_combine(spec.combine, schedule_.shared_bytes - kBlockScratchBytes, in);
  }
  if (split) {
    // The slice's partial; the phase after the next grid barrier combines them, or with
    // no phase after this one, the row's last block to get here.
    code += in + "if (threadIdx.x == 0) pt_" + base + "[row * " +
            num(plan<RowPlan>().blocks_per_row) + " + part] = a;\n";
    if (plan<RowPlan>().last_block_done && schedule_.values.at(id).level + 1 == schedule_.levels) {
      STITCH_ASSIGN_OR_RETURN(std::string last, last_block_code(id, in));
      code += last;
    }
    return code + indent + "}\n";
  }
  code += row_result(spec, length, base, dtype(id), in);
  if (output_index_.count(id)) {
    code += in + "if (" + row_lane() + " == 0" + (row_guarded() ? " && row_in" : "") + ") " +
            pointer_name(id) + "[row] = " + store(dtype(id), "r_" + base) + ";\n";
  }
  return code + indent + "}\n";
}

std::string KernelWriter::partials_pointer(ir::ValueId id) {
  const std::string name = "pt_" + names_.at(id);
  if (partials_declared_.insert(id).second) {
    const ValueSchedule& value = schedule_.values.at(id);
    const std::string acc = accumulator_type(value.accumulator_bytes);
    defs_ << "  " << acc << "* " << name << " = reinterpret_cast<" << acc << "*>(workspace + "
          << value.partial_offset << ");  // [" << elements_of(graph_, id) << ", " << value.slices
          << "] partials of " << comment_name(graph_.node(graph_.value(id).producer)) << "\n";
  }
  return name;
}

// A reduction with a warp or column mapping (schedule.h, 5.), writing its result, or
// with slices its partials ([output, slice] in the workspace).
//   warp:   a warp per (output, slice): lanes stride over the slice's reduced
//           elements, combined by shuffles.
//   column: a block per (column tile, slice): each warp's lanes are W consecutive
//           columns x 32 / W rows, the block's threads stride over the slice's rows
//           (coalesced across the columns); row lanes combine by shuffles inside a
//           warp, then the warps' results through shared memory in warp order.
Result<std::string> KernelWriter::mapped_reduction_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  STITCH_ASSIGN_OR_RETURN(ReductionLowering spec, reduce_spec(node));
  bool noop = false;
  STITCH_ASSIGN_OR_RETURN(std::vector<int64_t> axes, ir::reduction_axes(graph_, node, &noop));
  const ir::ValueId x_id = node.inputs[0];
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(x_id));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::vector<int64_t>& in = dims(x_id);
  const std::vector<int64_t> strides = row_major_strides(in);
  const bool column = value.mapping == ReductionMapping::kColumn;
  // Kept dims (outside the trailing run C for a column reduction) and reduced dims.
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  const size_t trailing = column ? static_cast<size_t>(axes.back()) + 1 : in.size();
  for (size_t d = 0; d < trailing; ++d) {
    bool reduced = std::binary_search(axes.begin(), axes.end(), static_cast<int64_t>(d));
    (reduced ? red_dims : kept_dims).push_back(in[d]);
    (reduced ? red_strides : kept_strides).push_back(strides[d]);
  }
  const int64_t slices = value.slices;
  const bool split = slices >= 2;
  const int64_t w_cols = value.columns;
  const int64_t col_tiles = column ? (value.inner + w_cols - 1) / w_cols : 1;
  const std::string acc = accumulator_type(value.accumulator_bytes);
  const std::string in_ = indent + "  ";
  const std::string item = split ? "(item / " + num(slices) + ")" : "item";
  std::string code;
  if (column) {
    code += indent + "// a block per (tile of " + num(w_cols) + " columns, slice of " +
            num(value.slice) + " rows): threads over " + num(w_cols) + " columns x blockDim.x / " +
            num(w_cols) + " rows" + (split ? ", partials to the workspace" : "") + "\n";
    code += indent + "for (index_t item = tid / blockDim.x; item < " + num(value.items) +
            "; item += threads / blockDim.x) {\n";
  } else {
    code += indent + "// a warp per (output, slice of " + num(value.slice) +
            "): lanes over the reduced elements" + (split ? ", partials to the workspace" : "") +
            "\n";
    code += indent + "for (index_t item = " + loop_start(value.items, /*per_warp=*/true) +
            "; item < " + num(value.items) + "; item += threads / 32) {\n";
  }
  code += in_ + "const index_t lane = threadIdx.x % 32;\n";
  code += in_ + "const index_t r0 = " +
          (split ? "(item % " + num(slices) + ") * " + num(value.slice) : std::string("0")) + ";\n";
  code += in_ + "const index_t r1 = " +
          (split ? "r0 + " + num(value.slice) + " < " + num(value.reduced) + " ? r0 + " +
                       num(value.slice) + " : " + num(value.reduced)
                 : num(value.reduced)) +
          ";\n";
  code += in_ + acc + " a = " + identity(spec.combine, acc) + ";\n";
  // Each lane's sequential part of a float sum is compensated (Kahan) when it is
  // longer than kKahanLength terms; lanes then combine by a tree.
  const int64_t slice_rows = split ? value.slice : value.reduced;
  const int64_t lanes_per_slice = column ? std::max<int64_t>(schedule_.block / w_cols, 1) : 32;
  const bool kahan = spec.combine == ReduceCombine::kSum && acc == "float" &&
                     (slice_rows + lanes_per_slice - 1) / lanes_per_slice > kKahanLength;
  if (kahan) code += in_ + acc + " compensation = 0;\n";
  const std::string element_offset = strided_index(red_dims, red_strides, "r");
  if (column) {
    const std::string column_lane =
        w_cols < 32 ? "threadIdx.x % " + num(w_cols) : std::string("lane");
    code += in_ + "const index_t o = " + item + " / " + num(col_tiles) + ";\n";
    code +=
        in_ + "const index_t c0 = " + item + " % " + num(col_tiles) + " * " + num(w_cols) + ";\n";
    code += in_ + "const index_t base = " + strided_index(kept_dims, kept_strides, "o") + ";\n";
    code += in_ + "if (c0 + " + column_lane + " < " + num(value.inner) + ") {\n";
    code += in_ + "  const index_t c = c0 + " + column_lane + ";\n";
    code += in_ + "  for (index_t r = r0 + threadIdx.x / " + num(w_cols) +
            "; r < r1; r += blockDim.x / " + num(w_cols) + ") {\n";
    code += in_ + "    const " + acc + " v = " + x + "(base + " + element_offset + " + c);\n";
    code += accumulate(spec, kahan, acc, in_ + "    ");
    code += in_ + "  }\n" + in_ + "}\n";
    if (w_cols < 32) code += shuffle_combine(spec.combine, acc, static_cast<int>(w_cols), in_);
    code += in_ + acc + "* columns = reinterpret_cast<" + acc + "*>(smem);  // [warps, " +
            num(w_cols) + "]\n";
    code += in_ + (w_cols < 32 ? "if (lane < " + num(w_cols) + ") " : "") +
            "columns[threadIdx.x / 32 * " + num(w_cols) + " + lane] = a;\n";
    code += in_ + "__syncthreads();\n";
    code += in_ + "if (threadIdx.x < " + num(w_cols) + " && c0 + threadIdx.x < " +
            num(value.inner) + ") {\n";
    code += in_ + "  a = columns[threadIdx.x];\n";
    code +=
        in_ + "  for (unsigned int q = 1; q < blockDim.x / 32; ++q) a = " +
        combine_text(spec.combine, "a", "columns[q * " + num(w_cols) + " + threadIdx.x]", true) +
        ";\n";
    code += in_ + "  const index_t i = o * " + num(value.inner) + " + c0 + threadIdx.x;\n";
    if (split) {
      code += in_ + "  " + partials_pointer(id) + "[i * " + num(slices) + " + item % " +
              num(slices) + "] = a;\n";
    } else {
      const std::string target = target_array(id);
      code += in_ + "  " + target + "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) +
              ";\n";
    }
    code += in_ + "}\n" + in_ + "__syncthreads();\n";
    return code + indent + "}\n";
  }
  code += in_ + "const index_t i = " + item + ";\n";
  code += in_ + "const index_t base = " + strided_index(kept_dims, kept_strides, "i") + ";\n";
  code += in_ + "for (index_t r = r0 + lane; r < r1; r += 32) {\n";
  code += in_ + "  const " + acc + " v = " + x + "(base + " + element_offset + ");\n";
  code += accumulate(spec, kahan, acc, in_ + "  ");
  code += in_ + "}\n";
  code += shuffle_combine(spec.combine, acc, 1, in_);
  if (split) {
    code += in_ + "if (lane == 0) " + partials_pointer(id) + "[i * " + num(slices) + " + item % " +
            num(slices) + "] = a;\n";
  } else {
    const std::string target = target_array(id);
    code += in_ + "if (lane == 0) " + target +
            "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) + ";\n";
  }
  return code + indent + "}\n";
}

// The stage after a sliced reduction's partials: each output combines its slices'
// partials in slice order (deterministic), by a thread, or by a warp when there are
// more than 32, and writes the result.
Result<std::string> KernelWriter::partials_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  STITCH_ASSIGN_OR_RETURN(ReductionLowering spec, reduce_spec(node));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::string pt = partials_pointer(id);
  const int64_t slices = value.slices;
  const int64_t outputs = elements_of(graph_, id);
  const std::string in_ = indent + "  ";
  const std::string target = target_array(id);
  std::string code =
      indent + "// combine the " + num(slices) + " partials of each output in slice order\n";
  std::string writer;
  const std::string acc = accumulator_type(value.accumulator_bytes);
  if (value.warp_combine()) {
    code += indent + "for (index_t i = tid / 32; i < " + num(outputs) + "; i += threads / 32) {\n";
    code += in_ + "const index_t lane = threadIdx.x % 32;\n";
    code += in_ + acc + " a = " + identity(spec.combine, acc) + ";\n";
    code += in_ + "for (index_t q = lane; q < " + num(slices) + "; q += 32) a = " +
            combine_text(spec.combine, "a", pt + "[i * " + num(slices) + " + q]", true) + ";\n";
    code += shuffle_combine(spec.combine, acc, 1, in_);
    writer = "if (lane == 0) ";
  } else {
    code += indent + "for (index_t i = tid; i < " + num(outputs) + "; i += threads) {\n";
    code += in_ + acc + " a = " + pt + "[i * " + num(slices) + "];\n";
    code += in_ + "for (index_t q = 1; q < " + num(slices) + "; ++q) a = " +
            combine_text(spec.combine, "a", pt + "[i * " + num(slices) + " + q]", true) + ";\n";
  }
  code +=
      in_ + writer + target + "[i] = " + mapped_result(spec, value.reduced, acc, dtype(id)) + ";\n";
  return code + indent + "}\n";
}

// Split rows: combines the partials of reduction `id` for the current row into its
// register (every thread of the block, in slice order, so the result is
// deterministic); part 0 writes it when it is a group output and `write` is set.
// The row's last block to write its partial of `id` (counted in done[row] after a
// fence that publishes the partial) combines the row's partials and writes the result
// (RowPlan::last_block_done). Every block of the row computes the same
// combination whichever is last, so the result does not depend on the arrival order.
Result<std::string> KernelWriter::last_block_code(ir::ValueId id, const std::string& indent) {
  const int64_t parts = plan<RowPlan>().blocks_per_row;
  std::string code;
  code += indent + "unsigned int* arrivals = reinterpret_cast<unsigned int*>(smem + 0);\n";
  code += indent + "if (threadIdx.x == 0) {\n";
  code += indent + "  __threadfence();\n";
  code += indent + "  arrivals[0] = atomicAdd(&done[row], 1u);\n";
  code += indent + "}\n";
  code += indent + "__syncthreads();\n";
  code += indent + "if (arrivals[0] == " + num(parts - 1) + "u) {\n";
  code += indent + "  __threadfence();\n";
  STITCH_ASSIGN_OR_RETURN(std::string combine, combine_code(id, true, indent + "  ", true));
  code += combine;
  code += indent + "}\n";
  code += indent + "__syncthreads();\n";
  return code;
}

Result<std::string> KernelWriter::combine_code(ir::ValueId id, bool write,
                                               const std::string& indent, bool any_part) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  STITCH_ASSIGN_OR_RETURN(ReductionLowering spec, reduce_spec(node));
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  const std::string& base = names_.at(id);
  const int64_t parts = plan<RowPlan>().blocks_per_row;
  const int64_t length = product(dims(node.inputs[0])) / std::max<int64_t>(plan<RowPlan>().rows, 1);
  std::string code = indent + "// " + comment_name(node) + ": combine the " + num(parts) +
                     " partials of the row\n";
  code += indent + "{\n";
  std::string in = indent + "  ";
  if (parts <= 32) {
    // Lane q loads partial q (one request of the row's contiguous partials per warp,
    // not one per partial per thread), then the warp's butterfly: every warp of every
    // block combines the same values in the same order, so all get the same result.
    code += in + "float a = threadIdx.x % 32 < " + num(parts) + " ? pt_" + base + "[row * " +
            num(parts) + " + threadIdx.x % 32] : " + identity(spec.combine, "float") + ";\n";
    code += shuffle_combine(spec.combine, "float", 1, in);
  } else {
    // Many partials (a scalar over the whole GPU): the block's threads share the loads,
    // then a block reduction in a fixed order, so every block gets the same value.
    code += in + "float a = " + identity(spec.combine, "float") + ";\n";
    code += in + "for (index_t q = threadIdx.x; q < " + num(parts) + "; q += blockDim.x) a = " +
            combine_text(spec.combine, "a", "pt_" + base + "[row * " + num(parts) + " + q]", true) +
            ";\n";
    code += shuffle_combine(spec.combine, "float", 1, in);
    code += float_block_combine(spec.combine, schedule_.shared_bytes - kBlockScratchBytes, in);
  }
  code += row_result(spec, length, base, dtype(id), in);
  if (write && output_index_.count(id)) {
    code += in + (any_part ? "if (threadIdx.x == 0) " : "if (part == 0 && threadIdx.x == 0) ") +
            pointer_name(id) + "[row] = " + store(dtype(id), "r_" + base) + ";\n";
  }
  return code + indent + "}\n";
}

}  // namespace stitch::emit

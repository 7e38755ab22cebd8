// Op lowerings of the broadcast and injective ops (see op_lowering.h): Expand,
// Transpose, Slice, Concat, Split, Gather, GatherElements, Tile, Pad, Trilu, and
// Dropout's pass-through. Each output element reads one element of an operand at an
// index computed from its own flat index `i`; shapes and constant operands (starts,
// pads, k) are folded into the text, so a non-constant one is an error naming the fix.
#include <algorithm>
#include <string>
#include <vector>

#include "emit/cuda_text.h"
#include "emit/op_lowering.h"

namespace stitch::emit {
namespace {

using Context = OpLoweringContext;

std::string ret(const std::string& expr) { return "    return " + expr + ";\n"; }

int64_t normalized_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Operand 0 of an injective op: its accessor, dims and row-major strides.
struct Source {
  std::string x;
  std::vector<int64_t> dims;
  std::vector<int64_t> strides;
  int64_t rank = 0;
};

Result<Source> source(const Context& c) {
  Source source;
  source.dims = c.dims(c.input(0));
  source.strides = row_major_strides(source.dims);
  source.rank = static_cast<int64_t>(source.dims.size());
  STITCH_ASSIGN_OR_RETURN(source.x, c.accessor(c.input(0)));
  return source;
}

Result<std::string> expand(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(std::string expanded, c.read(0, "i"));
  return ret(expanded);
}

Result<std::string> transpose(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  std::vector<int64_t> perm = c.node.ints_attribute("perm", {});
  if (perm.empty()) {
    for (int64_t d = in.rank; d-- > 0;) perm.push_back(d);
  }
  std::vector<int64_t> strides;
  for (int64_t p : perm) strides.push_back(in.strides[static_cast<size_t>(p)]);
  return ret(in.x + "(" + strided_index(c.dims(c.output()), strides, "i") + ")");
}

Result<std::string> slice(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  std::vector<int64_t> starts, ends, axes, steps;
  bool present = false;
  if (c.node.opset < 10) {
    starts = c.node.ints_attribute("starts", {});
    ends = c.node.ints_attribute("ends", {});
    axes = c.node.ints_attribute("axes", {});
  } else {
    starts = constant_ints(c.graph, c.node, 1, &present);
    if (!present) return c.error("starts is not a constant; fold it before emitting");
    ends = constant_ints(c.graph, c.node, 2, &present);
    if (!present) return c.error("ends is not a constant; fold it before emitting");
    axes = constant_ints(c.graph, c.node, 3, &present);
    steps = constant_ints(c.graph, c.node, 4, &present);
  }
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> start(in.dims.size(), 0), step(in.dims.size(), 1);
  for (size_t k = 0; k < axes.size(); ++k) {
    auto a = static_cast<size_t>(normalized_axis(axes[k], in.rank));
    int64_t dim = in.dims[a];
    int64_t s = k < steps.size() ? steps[k] : 1;
    int64_t b = starts[k];
    if (b < 0) b += dim;
    b = s > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
    start[a] = b;
    step[a] = s;
  }
  int64_t offset = 0;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    offset += start[d] * in.strides[d];
    strides.push_back(step[d] * in.strides[d]);
  }
  std::string index = strided_index(c.dims(c.output()), strides, "i");
  if (offset != 0) index = num(offset) + " + " + index;
  return ret(in.x + "(" + index + ")");
}

// Concat and Split: the output index as (outer, a, inner) around the axis.
struct AxisSplit {
  size_t axis = 0;
  int64_t inner = 1;
  std::string body;  // declares inner, a and outer
};

AxisSplit split_around_axis(const Context& c) {
  const std::vector<int64_t>& out_dims = c.dims(c.output());
  AxisSplit split;
  split.axis = static_cast<size_t>(
      normalized_axis(c.node.int_attribute("axis", 0), static_cast<int64_t>(out_dims.size())));
  for (size_t d = split.axis + 1; d < out_dims.size(); ++d) split.inner *= out_dims[d];
  split.body = "    const index_t inner = i % " + num(split.inner) + ";\n" +
               "    const index_t a = (i / " + num(split.inner) + ") % " +
               num(out_dims[split.axis]) + ";\n" + "    const index_t outer = i / " +
               num(split.inner * out_dims[split.axis]) + ";\n";
  return split;
}

Result<std::string> split_op(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  AxisSplit split = split_around_axis(c);
  int64_t begin = 0;
  for (size_t k = 0; k < c.slot; ++k) begin += c.dims(c.node.outputs[k])[split.axis];
  return split.body + ret(in.x + "((outer * " + num(in.dims[split.axis]) + " + a + " + num(begin) +
                          ") * " + num(split.inner) + " + inner)");
}

// Concat reads only its non-empty parts.
Result<std::string> concat(const Context& c) {
  AxisSplit split = split_around_axis(c);
  std::string body = split.body;
  int64_t begin = 0;
  for (size_t k = 0; k < c.node.inputs.size(); ++k) {
    int64_t size = c.dims(c.input(k))[split.axis];
    if (size == 0) continue;
    STITCH_ASSIGN_OR_RETURN(std::string part, c.accessor(c.input(k)));
    std::string pick = part + "((outer * " + num(size) + " + a - " + num(begin) + ") * " +
                       num(split.inner) + " + inner)";
    if (k + 1 == c.node.inputs.size()) {
      body += "    return " + pick + ";\n";
    } else {
      body += "    if (a < " + num(begin + size) + ") return " + pick + ";\n";
    }
    begin += size;
  }
  return body;
}

// The statements that make a gathered index `g` an element of an axis of `dim`:
// negative indices count from the end, and an index still outside [0, dim) reads the
// nearest element (as XLA clamps gather indices), so an index from an untrusted
// model never reads outside the operand. ONNX calls such an index an error; the
// reference interpreter refuses it. Gathering from an empty axis is refused here.
Result<std::string> bounded_index(const Context& c, int64_t dim, int64_t indices) {
  if (dim == 0 && indices > 0) {
    return c.error("gathers " + std::to_string(indices) +
                   " indices from an empty axis; every index is out of range");
  }
  return "    if (g < 0) g += " + num(dim) + ";\n" + "    g = g < 0 ? 0 : (g > " + num(dim - 1) +
         " ? " + num(dim - 1) + " : g);\n";
}

Result<std::string> gather(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  auto a = static_cast<size_t>(normalized_axis(c.node.int_attribute("axis", 0), in.rank));
  int64_t inner = 1;
  for (size_t d = a + 1; d < in.dims.size(); ++d) inner *= in.dims[d];
  int64_t count = product(c.dims(c.input(1)));
  STITCH_ASSIGN_OR_RETURN(std::string indices, c.accessor(c.input(1)));
  STITCH_ASSIGN_OR_RETURN(std::string bound, bounded_index(c, in.dims[a], count));
  int64_t outer = 1;
  for (size_t d = 0; d < a; ++d) outer *= in.dims[d];
  const std::string lookup = "    long long g = static_cast<long long>(" + indices + "(j));\n";
  if (outer == 1) {
    // Gathering along the first axis (embeddings): i < count x inner, so no outer
    // coordinate and no wrap of j.
    return "    const index_t inner = i % " + num(inner) + ";\n" + "    const index_t j = i / " +
           num(inner) + ";\n" + lookup + bound +
           ret(in.x + "(static_cast<index_t>(g) * " + num(inner) + " + inner)");
  }
  return "    const index_t inner = i % " + num(inner) + ";\n" + "    const index_t j = (i / " +
         num(inner) + ") % " + num(count) + ";\n" + "    const index_t outer = i / " +
         num(inner * count) + ";\n" + lookup + bound +
         ret(in.x + "((outer * " + num(in.dims[a]) + " + static_cast<index_t>(g)) * " + num(inner) +
             " + inner)");
}

Result<std::string> gather_elements(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  auto axis = static_cast<size_t>(normalized_axis(c.node.int_attribute("axis", 0), in.rank));
  STITCH_ASSIGN_OR_RETURN(std::string indices, c.accessor(c.input(1)));
  std::vector<int64_t> strides = in.strides;
  strides[axis] = 0;
  STITCH_ASSIGN_OR_RETURN(std::string bound,
                          bounded_index(c, in.dims[axis], product(c.dims(c.input(1)))));
  return "    long long g = static_cast<long long>(" + indices + "(i));\n" + bound +
         ret(in.x + "(" + strided_index(c.dims(c.output()), strides, "i") +
             " + static_cast<index_t>(g) * " + num(in.strides[axis]) + ")");
}

Result<std::string> tile(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  const std::vector<int64_t>& out_dims = c.dims(c.output());
  std::string body = "    index_t index = 0;\n";
  std::vector<int64_t> out_strides = row_major_strides(out_dims);
  for (size_t d = 0; d < out_dims.size(); ++d) {
    if (in.dims[d] == 1) continue;
    body += "    index += ((i / " + num(out_strides[d]) + ") % " + num(out_dims[d]) + " % " +
            num(in.dims[d]) + ") * " + num(in.strides[d]) + ";\n";
  }
  return body + ret(in.x + "(index)");
}

// Pad's per-dim coordinate `c` mapped into the input (edge, reflect) or tested
// (constant); an error for other modes.
Result<std::string> pad_coordinate(const Context& c, const std::string& mode,
                                   const std::string& coordinate, int64_t n) {
  if (mode == "constant") {
    return "    inside = inside && " + coordinate + " >= 0 && " + coordinate + " < " + num(n) +
           ";\n";
  }
  if (mode == "edge") {
    return "    " + coordinate + " = " + coordinate + " < 0 ? 0 : (" + coordinate +
           " >= " + num(n) + " ? " + num(n - 1) + " : " + coordinate + ");\n";
  }
  // The period 2 * (n - 1) is 0 when n == 1: every position reflects to 0.
  if (mode == "reflect" && n == 1) return "    " + coordinate + " = 0;\n";
  if (mode == "reflect") {
    return "    while (" + coordinate + " < 0 || " + coordinate + " >= " + num(n) + ") " +
           coordinate + " = " + coordinate + " < 0 ? -" + coordinate + " : " + num(2 * (n - 1)) +
           " - " + coordinate + ";\n";
  }
  return c.error("pad mode \"" + mode + "\" has no CUDA implementation");
}

Result<std::string> pad(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  const std::vector<int64_t>& out_dims = c.dims(c.output());
  std::string mode = c.node.string_attribute("mode", "constant");
  std::vector<int64_t> pads;
  bool present = false;
  if (c.node.opset < 11) {
    pads = c.node.ints_attribute("pads", {});
  } else {
    pads = constant_ints(c.graph, c.node, 1, &present);
    if (!present) return c.error("pads is not a constant; fold it before emitting");
  }
  bool has_axes = false;
  std::vector<int64_t> pad_axes = constant_ints(c.graph, c.node, 3, &has_axes);
  if (!has_axes) {
    for (int64_t d = 0; d < in.rank; ++d) pad_axes.push_back(d);
  }
  std::vector<int64_t> begin(in.dims.size(), 0);
  for (size_t k = 0; k < pad_axes.size(); ++k) {
    begin[static_cast<size_t>(normalized_axis(pad_axes[k], in.rank))] = pads[k];
  }
  std::vector<int64_t> out_strides = row_major_strides(out_dims);
  std::string body = "    index_t index = 0;\n";
  if (mode == "constant") body += "    bool inside = true;\n";
  for (size_t d = 0; d < in.dims.size(); ++d) {
    std::string coordinate = "c" + num(static_cast<int64_t>(d));
    body += "    index_t " + coordinate + " = (i / " + num(out_strides[d]) + ") % " +
            num(out_dims[d]) + " - " + num(begin[d]) + ";\n";
    STITCH_ASSIGN_OR_RETURN(std::string mapped, pad_coordinate(c, mode, coordinate, in.dims[d]));
    body += mapped + "    index += " + coordinate + " * " + num(in.strides[d]) + ";\n";
  }
  if (mode != "constant") return body + ret(in.x + "(index)");
  const std::string ct = c.compute();
  std::string fill = "static_cast<" + ct + ">(0)";
  if (c.node.opset < 11) {
    fill = "static_cast<" + ct + ">(" + float_literal(c.node.float_attribute("value", 0.0f)) + ")";
  } else if (c.input(2) != ir::kNoId) {
    STITCH_ASSIGN_OR_RETURN(std::string value, c.accessor(c.input(2)));
    fill = value + "(0)";
  }
  return body + ret("inside ? " + in.x + "(index) : " + fill);
}

Result<std::string> trilu(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(Source in, source(c));
  const std::vector<int64_t>& out_dims = c.dims(c.output());
  bool upper = c.node.int_attribute("upper", 1) != 0;
  int64_t k = 0;
  bool present = false;
  std::vector<int64_t> given = constant_ints(c.graph, c.node, 1, &present);
  if (c.input(1) != ir::kNoId && !present) {
    return c.error("k is not a constant; fold it before emitting");
  }
  if (present && !given.empty()) k = given[0];
  int64_t cols = out_dims.back();
  int64_t rows = out_dims[out_dims.size() - 2];
  return "    const index_t col = i % " + num(cols) + ";\n    const index_t row_index = (i / " +
         num(cols) + ") % " + num(rows) + ";\n" +
         ret("(col - row_index " + std::string(upper ? ">=" : "<=") + " " + num(k) + ") ? " + in.x +
             "(i) : static_cast<" + c.compute() + ">(0)");
}

}  // namespace

Result<std::string> pass_through_body(const OpLoweringContext& c) {
  if (c.slot != 0) return c.error("only output 0 of " + c.node.op_type + " can be emitted");
  STITCH_ASSIGN_OR_RETURN(std::string x, c.accessor(c.input(0)));
  return ret(x + "(i)");
}

void register_injective_lowerings(OpLoweringRegistrations& table) {
  OpLowering dropout = inline_entry(pass_through_body);
  dropout.passes_through = true;
  table.emplace_back("Dropout", std::move(dropout));
  table.emplace_back("Expand", inline_entry(expand));
  OpLowering permutation = inline_entry(transpose);
  permutation.permutes_axes = true;
  table.emplace_back("Transpose", std::move(permutation));
  table.emplace_back("Slice", inline_entry(slice));
  table.emplace_back("Concat", inline_entry(concat));
  table.emplace_back("Split", inline_entry(split_op));
  table.emplace_back("Gather", inline_entry(gather));
  table.emplace_back("GatherElements", inline_entry(gather_elements));
  table.emplace_back("Tile", inline_entry(tile));
  table.emplace_back("Pad", inline_entry(pad));
  table.emplace_back("Trilu", inline_entry(trilu));
}

}  // namespace stitch::emit

// Op lowerings of the stencils (see op_lowering.h and ir/core/window.h): a grouped or
// depthwise Conv, MaxPool and AveragePool. Each output element walks its window: the
// statements decompose the flat index `i` into (n, channel, spatial position), loop
// over the kernel positions (and a grouped Conv's input channels) with every bound a
// literal, skip the taps that fall in the padding, and read the input through its
// accessor, so an inlined producer (a Clip, a folded BatchNorm, a Transpose) is
// evaluated at each tap. The window is ir::sliding_window's, as the reference
// interpreter computes it.
//
// Example: Conv(x: f32[1,8,6,6], w: f32[8,1,3,3]) {group=8, pads=[1,1,1,1]} gives
//     const index_t o1 = i % 6;
//     const index_t o0 = (i / 6) % 6;
//     const index_t m = (i / 36) % 8;
//     const index_t n = i / 288;
//     float acc = static_cast<float>(0);
//     for (index_t k0 = 0; k0 < 3; ++k0) {
//       const index_t p0 = o0 - 1 + k0;
//       if (p0 < 0 || p0 >= 6) continue;
//       for (index_t k1 = 0; k1 < 3; ++k1) {
//         ...
//           acc += v_x((n * 8 + m) * 36 + p0 * 6 + p1) * v_w(m * 9 + k0 * 3 + k1);
#include <limits>
#include <string>
#include <vector>

#include "emit/cuda_text.h"
#include "emit/op_lowering.h"
#include "ir/core/window.h"

namespace stitch::emit {
namespace {

using Context = OpLoweringContext;

// The window of the node, checked against the output the graph gives it.
Result<ir::Stencil> checked_stencil(const Context& c) {
  if (c.slot != 0) return c.error("only output 0 of " + c.node.op_type + " can be emitted");
  if (!ir::dtype_is_float(c.dtype(c.output()))) {
    return c.error("a stencil of " + std::string(ir::dtype_name(c.dtype(c.output()))) +
                   " elements has no generated kernel");
  }
  std::optional<ir::Stencil> stencil = ir::stencil_of(c.graph, c.node);
  if (!stencil) return c.error("its window does not fit the input's static shape");
  // Every index the code computes comes from these dims: the output must be the
  // window's, over the input's batch and its channels (a pool) or the weight's filters.
  const std::vector<int64_t>& out = c.dims(c.output());
  const std::vector<int64_t>& in = c.dims(c.input(0));
  const int64_t channels = c.node.op_type == "Conv" ? c.dims(c.input(1))[0] : in[1];
  if (out.size() != stencil->window.output.size() + 2 || out[0] != in[0] || out[1] != channels ||
      !std::equal(stencil->window.output.begin(), stencil->window.output.end(), out.begin() + 2)) {
    return c.error("the output " + dims_text(out) + " is not the window's");
  }
  return *stencil;
}

// The statements naming the output coordinates: o0 ... o{r-1} (spatial), m (channel
// or filter) and n (batch), from the flat index `i`.
std::string output_coordinates(const std::vector<int64_t>& out) {
  std::string text;
  int64_t inner = 1;
  const size_t rank = out.size() - 2;
  for (size_t d = rank; d-- > 0;) {
    const std::string name = "o" + std::to_string(d);
    const std::string quotient = inner == 1 ? "i" : "(i / " + num(inner) + ")";
    text += "    const index_t " + name + " = " + quotient + " % " + num(out[d + 2]) + ";\n";
    inner *= out[d + 2];
  }
  text += "    const index_t m = " + (inner == 1 ? std::string("i") : "(i / " + num(inner) + ")") +
          " % " + num(out[1]) + ";\n";
  text += "    const index_t n = i / " + num(inner * out[1]) + ";\n";
  return text;
}

// Opens one loop per kernel axis (input position p{d} of tap k{d}, skipped in the
// padding) and returns the closing braces; `offset` becomes the tap's spatial input
// offset and `kernel_offset` its offset in the kernel.
std::string open_window_loops(const ir::Window& w, const std::string& indent, std::string* text,
                              std::string* offset, std::string* kernel_offset) {
  std::string close;
  std::string pad = indent;
  *offset = "";
  *kernel_offset = "";
  const std::vector<int64_t> in_strides = row_major_strides(w.input);
  const std::vector<int64_t> k_strides = row_major_strides(w.kernel);
  for (size_t d = 0; d < w.input.size(); ++d) {
    const std::string k = "k" + std::to_string(d);
    const std::string p = "p" + std::to_string(d);
    const std::string o = "o" + std::to_string(d);
    std::string position = w.strides[d] == 1 ? o : o + " * " + num(w.strides[d]);
    if (w.pad_begin[d] != 0) position += " - " + num(w.pad_begin[d]);
    position += w.dilations[d] == 1 ? " + " + k : " + " + k + " * " + num(w.dilations[d]);
    *text += pad + "#pragma unroll\n";
    *text +=
        pad + "for (index_t " + k + " = 0; " + k + " < " + num(w.kernel[d]) + "; ++" + k + ") {\n";
    pad += "  ";
    *text += pad + "const index_t " + p + " = " + position + ";\n";
    *text += pad + "if (" + p + " < 0 || " + p + " >= " + num(w.input[d]) + ") continue;\n";
    close = pad.substr(2) + "}\n" + close;
    auto term = [](const std::string& var, int64_t stride) {
      return stride == 1 ? var : var + " * " + num(stride);
    };
    *offset += (offset->empty() ? "" : " + ") + term(p, in_strides[d]);
    *kernel_offset += (kernel_offset->empty() ? "" : " + ") + term(k, k_strides[d]);
  }
  return close;
}

// The tap's input position on each window axis ("p0, p1"), for the staged tile's
// accessor (KernelWriter::stencil_tile_code).
std::string positions(const ir::Window& w) {
  std::string text;
  for (size_t d = 0; d < w.input.size(); ++d) {
    text += (d ? ", p" : "p") + std::to_string(d);
  }
  return text;
}

// Grouped Conv(X, W, B?): acc = B[m] + sum over the group's input channels c and the
// taps of X[n, g * C/group + c, p] * W[m, c, k], g = m / (M / group).
Result<std::string> grouped_conv(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(ir::Stencil stencil, checked_stencil(c));
  const ir::Window& w = stencil.window;
  const std::vector<int64_t>& x_dims = c.dims(c.input(0));
  const std::vector<int64_t>& out = c.dims(c.output());
  const int64_t channels = x_dims[1];
  const int64_t filters = out[1];
  // ir::stencil_of checked that the group divides the filters and the channels.
  const int64_t group = c.node.int_attribute("group", 1);
  const int64_t cg = stencil.channels_per_group;
  const int64_t filters_per_group = filters / group;
  const int64_t plane = product(w.input);
  const int64_t window = product(w.kernel);
  STITCH_ASSIGN_OR_RETURN(std::string x, c.accessor(c.input(0)));
  // Staged filters: read from the arena by output plane (the staging reads the weights).
  std::string weight = c.staged_filters;
  if (weight.empty()) {
    STITCH_ASSIGN_OR_RETURN(weight, c.accessor(c.input(1)));
  }
  const std::string ct = c.compute();
  std::string text = output_coordinates(out);
  std::string first_channel = filters_per_group == 1 ? "m" : "m / " + num(filters_per_group);
  if (cg != 1) first_channel = "(" + first_channel + ") * " + num(cg);
  if (c.input(2) != ir::kNoId) {
    STITCH_ASSIGN_OR_RETURN(std::string bias, c.accessor(c.input(2)));
    text += "    " + ct + " acc = " + bias + "(m);\n";
  } else {
    text += "    " + ct + " acc = static_cast<" + ct + ">(0);\n";
  }
  std::string indent = "    ";
  std::string channel = first_channel;
  std::string filter_row = "m";
  if (cg != 1) {
    text += indent + "for (index_t c = 0; c < " + num(cg) + "; ++c) {\n";
    indent += "  ";
    channel = first_channel + " + c";
    filter_row = "m * " + num(cg) + " + c";
  }
  if (c.staged.empty()) {
    text += indent + "const index_t plane = (n * " + num(channels) + " + " + channel + ") * " +
            num(plane) + ";\n";
  }
  const std::string row = cg == 1 ? filter_row : "(" + filter_row + ")";
  if (c.staged_filters.empty()) {
    text += indent + "const index_t taps = " + row + " * " + num(window) + ";\n";
  }
  std::string offset, kernel_offset;
  std::string close = open_window_loops(w, indent, &text, &offset, &kernel_offset);
  const std::string inner = indent + std::string(2 * w.input.size(), ' ');
  // Staged: the tap from the shared tile, which holds the group's input planes.
  const std::string tap = c.staged.empty() ? x + "(plane + " + offset + ")"
                                           : c.staged + "(n * " + num(channels) + " + " + channel +
                                                 ", " + positions(w) + ")";
  const std::string weight_read =
      c.staged_filters.empty()
          ? weight + "(taps + " + kernel_offset + ")"
          : weight + "(n * " + num(filters) + " + m, " +
                (cg == 1 ? std::string() : "c * " + num(window) + " + ") + kernel_offset + ")";
  text += inner + "acc += " + tap + " * " + weight_read + ";\n";
  text += close;
  if (cg != 1) text += "    }\n";
  return text + "    return acc;\n";
}

// MaxPool (the first tap, then any larger one, as the reference keeps it) and
// AveragePool (the sum over the taps inside the input, divided by their count, or by
// the whole window with count_include_pad).
Result<std::string> pool(const Context& c, bool max) {
  STITCH_ASSIGN_OR_RETURN(ir::Stencil stencil, checked_stencil(c));
  const ir::Window& w = stencil.window;
  const std::vector<int64_t>& out = c.dims(c.output());
  const int64_t channels = out[1];
  STITCH_ASSIGN_OR_RETURN(std::string x, c.accessor(c.input(0)));
  const std::string ct = c.compute();
  std::string text = output_coordinates(out);
  if (c.staged.empty()) {
    text += "    const index_t plane = (n * " + num(channels) + " + m) * " + num(product(w.input)) +
            ";\n";
  }
  if (max) {
    const double lowest = -std::numeric_limits<double>::infinity();
    text += "    " + ct +
            " best = " + (ct == "double" ? double_literal(lowest) : float_literal(lowest)) +
            ";\n    bool found = false;\n";
  } else {
    text += "    " + ct + " sum = static_cast<" + ct + ">(0);\n    int count = 0;\n";
  }
  std::string offset, kernel_offset;
  std::string close = open_window_loops(w, "    ", &text, &offset, &kernel_offset);
  const std::string inner = "    " + std::string(2 * w.input.size(), ' ');
  const std::string tap = c.staged.empty()
                              ? x + "(plane + " + offset + ")"
                              : c.staged + "(n * " + num(channels) + " + m, " + positions(w) + ")";
  text += inner + "const " + ct + " v = " + tap + ";\n";
  if (max) {
    text += inner + "if (!found || v > best) {\n" + inner + "  best = v;\n" + inner +
            "  found = true;\n" + inner + "}\n";
  } else {
    text += inner + "sum += v;\n" + inner + "++count;\n";
  }
  text += close;
  if (max) return text + "    return best;\n";
  if (c.node.int_attribute("count_include_pad", 0) != 0) {
    return text + "    return sum / static_cast<" + ct + ">(" + num(product(w.kernel)) + ");\n";
  }
  return text + "    return count > 0 ? sum / static_cast<" + ct + ">(count) : static_cast<" + ct +
         ">(0);\n";
}

Result<std::string> max_pool(const Context& c) { return pool(c, true); }
Result<std::string> average_pool(const Context& c) { return pool(c, false); }

}  // namespace

void register_stencil_lowerings(OpLoweringRegistrations& table) {
  table.emplace_back("Conv", inline_entry(grouped_conv));
  table.emplace_back("MaxPool", inline_entry(max_pool));
  table.emplace_back("AveragePool", inline_entry(average_pool));
}

}  // namespace stitch::emit

// The stencil composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>
#include <string>
#include <utility>

#include "emit/cuda_text.h"
#include "ir/core/window.h"
#include "support/escape.h"

namespace stitch::emit {

// The most filter elements a thread of a staged stencil loads into registers before
// the input tile's loop (filter_staging_code).
constexpr int64_t kPrefetchedFilterElements = 4;

// Stencil composition (schedule.h 3c.): a block per tile of [planes, tile_h, tile_w]
// outputs, grid-stride over the tiles. The block's threads stage the input elements
// the tile's windows cover (zero outside the input: the taps there are skipped), each
// evaluating the stencil's input accessor (its inlined producers) once; after a
// barrier, thread t computes output (plane t / (tile_h x tile_w), row, column) of the
// tile, whose stencil reads its taps from the tile (s_<input>), and writes every
// group output at that index (an output through a Transpose where the Transpose puts
// it); a second barrier before the next tile overwrites it. A grouped Conv's tile
// holds whole groups: its output planes and the input planes they read start at
// group g0 x filters_per_group and g0 x channels_per_group.
Result<std::string> Composition<StencilPlan>::stencil_tile_code(KernelWriter& w,
                                                                const Written& written) {
  const StencilTile& tile = *emit::staged_tile(w.schedule_);
  const ir::Node& node = w.graph_.node(tile.stencil);
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const std::optional<ir::Stencil> stencil = ir::stencil_of(w.graph_, node);
  if (!stencil) return w.error(node, "has no window for the staged tile (emitter bug)");
  const ir::Window window = ir::planar_window(stencil->window);  // a 1-D window: one row
  STITCH_ASSIGN_OR_RETURN(std::string x, w.accessor(in));
  const std::string name = w.names_.at(in);
  const std::string t = compute_type(w.dtype(in));
  const std::vector<int64_t>& out_dims = w.dims(out);
  const int64_t planes = out_dims[0] * out_dims[1];
  const int64_t in_planes = w.dims(in)[0] * w.dims(in)[1];
  const int64_t in_h = window.input[0], in_w = window.input[1];
  const int64_t out_h = window.output[0], out_w = window.output[1];
  const int64_t tp = tile.planes, th = tile.tile_h, tw = tile.tile_w;
  const int64_t tip = tile.in_planes;
  const int64_t sh = tile.tile_in_h, sw = tile.tile_in_w;
  const int64_t per_planes = tile.tiles_h * tile.tiles_w;
  std::ostringstream code;
  // A 1-D window's tiles run along its one row: no row terms.
  const bool one_row = staged_stencil_is_1d(w.graph_, tile);
  code << "  // " << comment_name(node) << ": " << planes << " planes of "
       << (one_row ? "[" + num(out_w) : "[" + num(out_h) + ", " + num(out_w))
       << "] outputs in tiles of [" << tp << ", " << (one_row ? "" : num(th) + ", ") << tw << "]\n";
  if (w.schedule_.as<StencilPlan>()) {
    code << "  for (index_t t = blockIdx.x; t < " << tile.tiles << "; t += gridDim.x) {\n";
  } else {
    // A stage of the global composition (4b.), whose grid is sized for its largest
    // stage: block b takes tiles [b T / G, (b + 1) T / G), so the busy blocks spread
    // over the grid (the emulated profile's block sampling assumes they do).
    const std::string tiles = num(tile.tiles) + "LL";
    code << "  for (index_t t = static_cast<index_t>(blockIdx.x * " << tiles
         << " / gridDim.x), t_end = static_cast<index_t>((blockIdx.x + 1) * " << tiles
         << " / gridDim.x); t < t_end; ++t) {\n";
  }
  // t = (plane group, row tile, column tile); factors of 1 are left out.
  auto term = [](std::string text, int64_t divisor, int64_t modulus, int64_t scale) {
    if (divisor != 1) text += " / " + num(divisor);
    if (modulus != 0) text = modulus == 1 ? "0" : text + " % " + num(modulus);
    return text == "0" || scale == 1 ? text : text + " * " + num(scale);
  };
  code << "    tile_plane0 = " << term("t", per_planes, 0, tip) << ";\n";
  // The tile's first output plane: its first input plane unless a group has more
  // filters than channels, or fewer.
  const std::string plane0 =
      tip == tp ? std::string("tile_plane0") : "(" + term("t", per_planes, 0, tp) + ")";
  if (!one_row) {
    code << "    const index_t r0 = " << term("t", tile.tiles_w, tile.tiles_h, th)
         << ";  // the tile's first output row and column\n";
  }
  code << "    const index_t c0 = " << term("t", 1, tile.tiles_w, tw)
       << (one_row ? ";  // the tile's first output\n" : ";\n");
  auto origin = [&](const std::string& first, size_t d) {
    std::string text = window.strides[d] == 1 ? first : first + " * " + num(window.strides[d]);
    return window.pad_begin[d] == 0 ? text : text + " - " + num(window.pad_begin[d]);
  };
  if (!one_row) code << "    tile_row0 = " << origin("r0", 0) << ";\n";
  code << "    tile_col0 = " << origin("c0", 1) << ";\n";
  std::pair<std::string, std::string> filters;  // the filters' loads and their stores
  if (tile.filter_offset >= 0) {
    STITCH_ASSIGN_OR_RETURN(filters, filter_staging_code(w, plane0, planes, out_dims[1]));
  }
  code << filters.first;
  code << "    for (index_t e = threadIdx.x; e < " << tip * sh * sw << "; e += blockDim.x) {\n";
  code << "      const index_t plane = tile_plane0 + e / " << sh * sw << ";\n";
  if (!one_row) {
    code << "      const index_t p0 = tile_row0 + e / " << sw << " % " << sh << ";\n";
  }
  code << "      const index_t p1 = tile_col0 + e % " << sw << ";\n";
  code << "      tile_" << name << "[e] = plane < " << in_planes;
  if (!one_row) code << " && p0 >= 0 && p0 < " << in_h;
  code << " && p1 >= 0 && p1 < " << in_w << " ? " << x << "(plane * " << in_h * in_w
       << (one_row ? "" : " + p0 * " + num(in_w)) << " + p1) : static_cast<" << t << ">(0);\n";
  code << "    }\n";
  code << filters.second;
  code << "    __syncthreads();\n";
  const bool sums = !tile.plane_reductions.empty();  // 4d.
  code << "    {\n";
  code << "      const index_t plane = " << plane0 << " + threadIdx.x / " << th * tw << ";\n";
  if (sums) code << "      float plane_sum = 0.0f;  // this thread's output, summed per plane\n";
  if (!one_row) {
    code << "      const index_t o0 = r0 + threadIdx.x / " << tw << " % " << th << ";\n";
  }
  code << "      const index_t o1 = c0 + threadIdx.x % " << tw << ";\n";
  code << "      if (threadIdx.x < " << tp * th * tw << " && plane < " << planes
       << (one_row ? "" : " && o0 < " + num(out_h)) << " && o1 < " << out_w << ") {\n";
  if (one_row) {
    code << "        const index_t i = plane * " << out_w << " + o1;\n";
  } else {
    code << "        const index_t i = (plane * " << out_h << " + o0) * " << out_w << " + o1;\n";
  }
  // 4b.'s stage moves no output; the stencil composition may.
  static const std::map<ir::ValueId, ir::NodeId> kNone;
  const StencilPlan* staged = w.schedule_.as<StencilPlan>();
  const std::map<ir::ValueId, ir::NodeId>& moved = staged ? staged->moved_outputs : kNone;
  for (ir::ValueId id : written) {
    auto through = moved.find(id);
    if (through != moved.end()) {
      // Written through a Transpose (and views): the element at i of its input lands
      // where the Transpose puts it.
      const ir::Node& transpose = w.graph_.node(through->second);
      STITCH_ASSIGN_OR_RETURN(std::string write, w.write_through_transpose(id, transpose));
      code << "        " << write << ";  // " << comment_name(transpose) << "\n";
      continue;
    }
    STITCH_ASSIGN_OR_RETURN(std::string function, w.value_function(id));
    if (sums && id == tile.staged_value) {  // float32 (fold_plane_reductions): no rounding
      code << "        plane_sum = " << function << "(i);\n";
      code << "        " << w.target_array(id) << "[i] = plane_sum;  // "
           << comment_name(w.producer(id)) << "\n";
      continue;
    }
    code << "        " << w.target_array(id) << "[i] = " << store(w.dtype(id), function + "(i)")
         << ";  // " << comment_name(w.producer(id)) << "\n";
  }
  code << "      }\n";
  if (sums) {
    STITCH_ASSIGN_OR_RETURN(std::string sum_code, plane_sums_code(w, plane0, planes));
    code << sum_code;
  } else {
    code << "    }\n";
  }
  code << "    __syncthreads();\n";
  code << "  }\n";
  return code.str();
}

// A tile's filters ([planes, row]) from the Conv's weights, each output plane's from
// its channel's row (an output plane is n x `channels` + channel): the code before the
// input tile's loop and after it. When each thread stages at most
// kPrefetchedFilterElements, it loads them into registers before the input tile's loop,
// so that they are in flight with its first loads, and stores them after it; more are
// staged by a loop after the input tile's.
Result<std::pair<std::string, std::string>> Composition<StencilPlan>::filter_staging_code(
    KernelWriter& w, const std::string& plane0, int64_t planes, int64_t channels) {
  const StencilTile& tile = *emit::staged_tile(w.schedule_);
  const ir::ValueId weights = w.graph_.node(tile.stencil).inputs[1];
  STITCH_ASSIGN_OR_RETURN(std::string filters, w.accessor(weights));
  const int64_t row = tile.filter_row;
  const int64_t count = tile.planes * row;
  const int64_t block = std::max(w.schedule_.block, 1);
  const std::string array = "tile_f_" + w.names_.at(weights);
  const std::string type = compute_type(w.dtype(weights));
  // Element e of the tile's filters (zero past the last plane), read when `also` holds.
  auto load = [&](const std::string& e, const std::string& also) {
    return also + "tile_out0 + " + e + " / " + num(row) + " < " + num(planes) + " ? " + filters +
           "((tile_out0 + " + e + " / " + num(row) + ") % " + num(channels) + " * " + num(row) +
           " + " + e + " % " + num(row) + ") : static_cast<" + type + ">(0)";
  };
  std::string before = "    tile_out0 = " + plane0 + ";\n", after;
  const int64_t per_thread = (count + block - 1) / block;
  if (per_thread > kPrefetchedFilterElements) {
    after += "    for (index_t e = threadIdx.x; e < " + num(count) + "; e += blockDim.x) {\n";
    after += "      " + array + "[e] = " + load("e", "") + ";\n";
    after += "    }\n";
    return std::make_pair(before, after);
  }
  for (int64_t k = 0; k < per_thread; ++k) {
    const std::string e = "e" + num(k), f = "f" + num(k);
    const std::string index = k == 0 ? "threadIdx.x" : "threadIdx.x + " + num(k * block);
    before += "    const index_t " + e + " = " + index + ";  // filter element\n";
    before +=
        "    const " + type + " " + f + " = " + load(e, e + " < " + num(count) + " && ") + ";\n";
    after += "    if (" + e + " < " + num(count) + ") " + array + "[" + e + "] = " + f + ";\n";
  }
  return std::make_pair(before, after);
}

// 4d.: what a folded ReduceMean or ReduceSum writes from the `sum` of a plane of
// `plane_size` elements (a mean multiplies by the reciprocal, as the reduction
// emitter's means do).
namespace {

std::string plane_reduction_result(const ir::Node& node, const std::string& sum,
                                   int64_t plane_size) {
  return node.op_type == "ReduceMean"
             ? sum + " * " + float_literal(1.0 / static_cast<double>(plane_size))
             : sum;
}

}  // namespace

// 4d.: after a tile's outputs (each thread's in `plane_sum`, 0 past the planes), the
// sum of the tile's part of each plane for the spatial ReduceMean/ReduceSum of the
// staged value: a part of at most a warp whose size divides 32 is summed by shuffles
// among its lanes; a larger one through the arena's [block] floats, a warp per plane.
// Whole planes: the sums are the reductions; parts: each goes to the workspace's
// partials for the reductions' stage (plane_partials_code). Closes the block
// stencil_tile_code opened.
Result<std::string> Composition<StencilPlan>::plane_sums_code(KernelWriter& w,
                                                              const std::string& plane0,
                                                              int64_t planes) {
  const StencilTile& tile = *emit::staged_tile(w.schedule_);
  const int64_t size = tile.tile_h * tile.tile_w;  // the tile's part of a plane
  const int64_t threads = tile.planes * size;
  const int64_t parts = tile.tiles_h * tile.tiles_w;  // 1: whole planes
  const std::string writes_indent = "        ";
  auto writes = [&](const std::string& sum, const std::string& plane) -> Result<std::string> {
    if (parts > 1) {
      return writes_indent + "plane_partials[(" + plane + ") * " + num(parts) + " + t % " +
             num(parts) + "] = " + sum + ";  // this tile's part of the plane\n";
    }
    std::string text;
    for (ir::ValueId id : tile.plane_reductions) {
      STITCH_RETURN_IF_ERROR(w.accessor(id).status());
      const ir::Node& node = w.producer(id);
      text += writes_indent + w.target_array(id) + "[" + plane +
              "] = " + plane_reduction_result(node, sum, size) + ";  // " + comment_name(node) +
              "\n";
    }
    return text;
  };
  std::ostringstream code;
  if (tile.sum_offset < 0) {
    code << "      // each plane's " << size << " outputs in the tile summed by its lanes\n";
    if (size > 1) {
      code << "      for (int offset = " << size / 2 << "; offset > 0; offset /= 2) {\n";
      code << "        plane_sum += __shfl_xor_sync(0xffffffffu, plane_sum, offset);\n";
      code << "      }\n";
    }
    code << "      if (threadIdx.x % " << size << " == 0 && threadIdx.x < " << threads
         << " && plane < " << planes << ") {\n";
    STITCH_ASSIGN_OR_RETURN(std::string text, writes("plane_sum", "plane"));
    code << text << "      }\n";
    code << "    }\n";
    return code.str();
  }
  code << "      plane_sums[threadIdx.x] = plane_sum;\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "    // each plane's " << size << " outputs in the tile summed by a warp\n";
  code << "    for (index_t q = threadIdx.x / 32; q < " << tile.planes
       << "; q += blockDim.x / 32) {\n";
  code << "      const index_t lane = threadIdx.x % 32;\n";
  code << "      float a = 0.0f;\n";
  code << "      for (index_t e = lane; e < " << size << "; e += 32) a += plane_sums[q * " << size
       << " + e];\n";
  code << "      for (int offset = 16; offset > 0; offset /= 2) {\n";
  code << "        a += __shfl_xor_sync(0xffffffffu, a, offset);\n";
  code << "      }\n";
  code << "      if (lane == 0 && " << plane0 << " + q < " << planes << ") {\n";
  STITCH_ASSIGN_OR_RETURN(std::string text, writes("a", plane0 + " + q"));
  code << text << "      }\n";
  code << "    }\n";
  return code.str();
}

// 4d. with tiles that cut planes: the stage of reduction `id` adds each plane's parts,
// which the staged stage's tiles wrote, a thread per plane.
Result<std::string> Composition<StencilPlan>::plane_partials_code(KernelWriter& w, ir::ValueId id,
                                                                  const std::string& indent) {
  const StencilTile& tile = *emit::staged_tile(w.schedule_);
  const int64_t parts = tile.tiles_h * tile.tiles_w;
  const int64_t planes = elements_of(w.graph_, id);
  STITCH_RETURN_IF_ERROR(w.accessor(id).status());
  const ir::Node& node = w.producer(id);
  const int64_t plane_size =
      elements_of(w.graph_, tile.staged_value) / std::max<int64_t>(planes, 1);
  std::ostringstream code;
  code << indent << "// " << comment_name(node) << " -> " << ir::to_string(w.graph_.value(id).type)
       << ": each plane's " << parts << " parts, summed by the tiles that wrote it\n";
  code << indent << "for (index_t i = " << w.loop_start(planes, /*per_warp=*/false) << "; i < "
       << planes << "; i += threads) {\n";
  code << indent << "  float a = 0.0f;\n";
  code << indent << "  for (index_t k = 0; k < " << parts << "; ++k) a += plane_partials[i * "
       << parts << " + k];\n";
  code << indent << "  " << w.target_array(id)
       << "[i] = " << plane_reduction_result(node, "a", plane_size) << ";\n";
  code << indent << "}\n";
  return code.str();
}

// The staged stencil's tile and its accessor (stencil_tile_code fills the tile).
std::string Composition<StencilPlan>::stencil_tile_prologue(const KernelWriter& w,
                                                            const StencilTile& tile) {
  std::ostringstream body;
  const bool one_row = staged_stencil_is_1d(w.graph_, tile);
  const ir::ValueId in = w.graph_.node(tile.stencil).inputs[0];
  const std::string t = compute_type(w.dtype(in));
  const std::string name = w.names_.at(in);
  body << "  " << t << "* tile_" << name << " = reinterpret_cast<" << t << "*>(smem + "
       << tile.offset << ");  // [" << tile.in_planes << ", "
       << (one_row ? std::string() : num(tile.tile_in_h) + ", ") << tile.tile_in_w
       << "] elements of " << support::source_literal(w.graph_.value(in).name)
       << " the tile's windows read\n";
  if (tile.sum_offset >= 0) {
    body << "  float* plane_sums = reinterpret_cast<float*>(smem + " << tile.sum_offset
         << ");  // a tile's outputs, summed per plane (4d.)\n";
  }
  if (tile.filter_offset >= 0) {
    const ir::ValueId weights = w.graph_.node(tile.stencil).inputs[1];
    const std::string wt = compute_type(w.dtype(weights));
    const std::string filters = w.names_.at(weights);
    body << "  " << wt << "* tile_f_" << filters << " = reinterpret_cast<" << wt << "*>(smem + "
         << tile.filter_offset << ");  // [" << tile.planes << ", " << tile.filter_row
         << "] filters of the tile's output planes\n";
    body << "  index_t tile_out0 = 0;  // the tile's first output plane\n";
    body << "  auto f_" << filters << " = [&](index_t plane, index_t r) -> " << wt
         << " {\n    return tile_f_" << filters << "[(plane - tile_out0) * " << tile.filter_row
         << " + r];\n  };\n";
  }
  if (tile.partials_offset >= 0) {
    body << "  float* plane_partials = reinterpret_cast<float*>(workspace + "
         << tile.partials_offset << ");  // [planes, " << tile.tiles_h * tile.tiles_w
         << "] sums of the tiles' parts of each plane (4d.)\n";
  }
  if (one_row) {
    // A 1-D window: its position is the tile's column (the tile has one row).
    body << "  index_t tile_plane0 = 0, tile_col0 = 0;  // its first plane and column\n";
    body << "  auto s_" << name << " = [&](index_t plane, index_t p0) -> " << t
         << " {\n    return tile_" << name << "[(plane - tile_plane0) * " << tile.tile_in_w
         << " + p0 - tile_col0];\n  };\n";
  } else {
    body << "  index_t tile_plane0 = 0, tile_row0 = 0, tile_col0 = 0;  // its first plane, "
            "row, column\n";
    body << "  auto s_" << name << " = [&](index_t plane, index_t p0, index_t p1) -> " << t
         << " {\n    return tile_" << name << "[((plane - tile_plane0) * " << tile.tile_in_h
         << " + p0 - tile_row0) * " << tile.tile_in_w << " + p1 - tile_col0];\n  };\n";
  }
  return body.str();
}

// The template entry's attributes. The outputs are the stencil's [N, C, H, W] elements (or views or
// a Transpose of them), by the stencil's axes: planes over the grid (several per block when small),
// H and W in tiles. A 1-D stencil's one spatial axis is the tile's columns.
TemplateAttrs Composition<StencilPlan>::template_attrs(const TemplateContext& context,
                                                       const StencilPlan& plan) {
  const ir::Graph& graph = context.graph;
  const StencilTile& tile = plan.tile;
  TemplateAttrs attrs;
  const std::vector<int64_t>& dims = graph.value(graph.node(tile.stencil).outputs[0]).type.dims;
  for (size_t d = 0; d < dims.size(); ++d) {
    attrs.push_back(
        d < 2 ? (d == 1 && tile.planes > 1 ? "GRID-CTA_" + num(tile.planes) : std::string("GRID"))
              : "GRID-TILE_" +
                    num(d == 2 && !staged_stencil_is_1d(graph, tile) ? tile.tile_h : tile.tile_w));
  }
  return attrs;
}

// A 1-D stencil ([N, C, L]) has no rows.
std::string Composition<StencilPlan>::detail(const ir::Graph& graph,
                                             const GroupSchedule& /*schedule*/,
                                             const StencilPlan& plan) {
  const StencilTile& tile = plan.tile;
  std::ostringstream cu;
  const bool one_row = staged_stencil_is_1d(graph, tile);
  auto rows = [&](int64_t count) { return one_row ? std::string() : num(count) + ", "; };
  cu << " (a block per " << tile.planes << (tile.planes == 1 ? " plane" : " planes") << " x ["
     << rows(tile.tile_h) << tile.tile_w << "] outputs, " << tile.tiles
     << " tiles; the window's input tile [" << tile.in_planes << ", " << rows(tile.tile_in_h)
     << tile.tile_in_w << "] staged in shared memory)";
  return cu.str();
}

}  // namespace stitch::emit

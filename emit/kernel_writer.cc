// The kernel writer's accessors, inlined values and stages (see kernel_writer.h).
#include "emit/kernel_writer.h"

#include <algorithm>

#include "emit/cuda_text.h"
#include "ir/core/op_registry.h"
#include "ir/core/window.h"
#include "support/escape.h"

namespace stitch::emit {

using ir::DType;

namespace {

// A flat index is never negative; saying so lets nvcc divide and take remainders by
// constants as unsigned (a shift or a multiply-high) instead of with the sign
// corrections a signed int needs (three more instructions per / or %). Only bodies
// that divide need it.
std::string assume_index(const std::string& body) {
  if (body.find(" / ") == std::string::npos && body.find(" % ") == std::string::npos) return "";
  return "    STITCH_ASSUME(i >= 0);\n";
}

}  // namespace

KernelWriter::KernelWriter(const ir::Graph& graph, const GroupSchedule& schedule)
    : graph_(graph), schedule_(schedule) {
  for (size_t i = 0; i < schedule.boundary.outputs.size(); ++i) {
    output_index_[schedule.boundary.outputs[i]] = i;
  }
  for (ir::NodeId id : schedule.boundary.ordered_nodes) inside_.insert(id);
  std::set<std::string> used;
  auto assign = [&](ir::ValueId id) {
    if (names_.count(id)) return;
    std::string base = support::identifier_slug(graph.value(id).name);
    std::string candidate = base;
    for (int k = 1; used.count(candidate); ++k) candidate = base + "_" + num(k);
    used.insert(candidate);
    names_[id] = candidate;
  };
  for (ir::ValueId id : schedule.boundary.inputs) assign(id);
  for (ir::NodeId node : schedule.boundary.ordered_nodes) {
    for (ir::ValueId id : graph.node(node).outputs) {
      if (id != ir::kNoId) assign(id);
    }
  }
}

bool KernelWriter::produced_inside(ir::ValueId id) const {
  ir::NodeId producer = graph_.value(id).producer;
  return producer != ir::kNoId && inside_.count(producer) > 0;
}

std::string KernelWriter::target_array(ir::ValueId id) const {
  return output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id);
}

// An inlined value's accessor is defined after its operands' accessors. That order comes
// without recursion (a chain of thousands of inlined ops must not overflow the
// stack): when op_body meets an inlined operand without an accessor, accessor() records
// it in pending_ and fails; the driver below defines the operand first and tries the
// value again. Boundary inputs and materialized values read memory and are defined on
// the spot, so the definitions come out in the order a depth-first recursion writes
// them, and the stack depth does not grow with the chain.
Result<std::string> KernelWriter::accessor(ir::ValueId id) {
  if (defined_.count(id)) return accessor_name(id);
  if (!produced_inside(id) || schedule_.values.at(id).materialized)
    return define_memory_accessor(id);
  if (defining_inlined_) {
    pending_ = id;
    return Status::internal("\"" + graph_.value(id).name + "\" is defined first");
  }
  defining_inlined_ = true;
  std::vector<ir::ValueId> stack = {id};
  Status status = Status::ok();
  while (!stack.empty() && status.is_ok()) {
    pending_ = ir::kNoId;
    status = define_inlined(stack.back());
    if (pending_ != ir::kNoId) {
      stack.push_back(pending_);
      status = Status::ok();
    } else if (status.is_ok()) {
      stack.pop_back();
    }
  }
  defining_inlined_ = false;
  STITCH_RETURN_IF_ERROR(status);
  return accessor_name(id);
}

// A boundary input (read from its pointer) or a materialized value (read from its
// storage).
Result<std::string> KernelWriter::define_memory_accessor(ir::ValueId id) {
  std::string name = accessor_name(id);
  STITCH_ASSIGN_OR_RETURN(std::string storage, storage_type(dtype(id)));
  std::string ct = compute_type(dtype(id));
  if (!produced_inside(id) && is_baked_scalar(graph_.value(id))) {
    // A one-element constant is a literal: no parameter, no load per element.
    defs_ << "  auto " << name << " = [&](index_t) -> " << ct << " { return "
          << element_literal(*graph_.value(id).constant, ct) << "; };  // "
          << support::source_text(graph_.value(id).name, 80) << "\n";
    defined_.insert(id);
    return name;
  }
  if (!produced_inside(id)) {
    auto it = std::find(schedule_.boundary.inputs.begin(), schedule_.boundary.inputs.end(), id);
    STITCH_CHECK(it != schedule_.boundary.inputs.end()) << "value outside the group";
    used_inputs_.push_back(static_cast<size_t>(it - schedule_.boundary.inputs.begin()));
    if (vector().inputs.count(id)) {
      // A 16-byte window, loaded at the start of each run of 4 elements (stage_code);
      // element by element when a pointer is not 16-byte aligned.
      const std::string pointer = pointer_name(id), window = "w_" + names_.at(id);
      defs_ << "  float4 " << window << "{};  // elements [i & ~3, (i & ~3) + 4) of " << pointer
            << " in the current run\n";
      defs_ << "  auto " << name << " = [&](index_t i) -> float { return vec4 ? stitch_lane4("
            << window << ", static_cast<int>(i & 3)) : " << pointer << "[i]; };\n";
      defined_.insert(id);
      return name;
    }
    if (vector().uniform_inputs.count(id)) {
      // One element per run of 4, loaded at the run's start (stage_code).
      const std::string reg = "u_" + names_.at(id);
      defs_ << "  " << ct << " " << reg << " = 0;  // the element of " << pointer_name(id)
            << " the current run reads\n";
      defs_ << "  auto " << name << " = [&](index_t i) -> " << ct << " { return vec4 ? " << reg
            << " : " << load(dtype(id), pointer_name(id) + "[i]") << "; };\n";
      defined_.insert(id);
      return name;
    }
    defs_ << "  auto " << name << " = [&](index_t i) -> " << ct << " { return "
          << load(dtype(id), pointer_name(id) + "[i]") << "; };\n";
    defined_.insert(id);
    return name;
  }
  const ValueSchedule& value = schedule_.values.at(id);
  const std::string& base = names_.at(id);
  switch (value.storage) {
    case Storage::kOutput:
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](index_t i) -> " << ct << " { return "
            << load(dtype(id), pointer_name(id) + "[i]") << "; };\n";
      break;
    case Storage::kWorkspace:
      defs_ << "  " << storage << "* ws_" << base << " = reinterpret_cast<" << storage
            << "*>(workspace + " << value.offset << ");\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](index_t i) -> " << ct << " { return "
            << load(dtype(id), "ws_" + base + "[i]") << "; };\n";
      break;
    case Storage::kShared:
      defs_ << "  " << storage << "* sh_" << base << " = reinterpret_cast<" << storage
            << "*>(smem + row_slot + " << value.offset << ");\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](index_t i) -> " << ct << " { return "
            << load(dtype(id), "sh_" + base + "[i - row * " + num(value.row_elements) + "]")
            << "; };\n";
      break;
    case Storage::kRegister:
      defs_ << "  " << ct << " r_" << base << " = 0;\n";
      defs_ << "  [[maybe_unused]] auto " << name << " = [&](index_t) -> " << ct << " { return r_"
            << base << "; };\n";
      break;
  }
  defined_.insert(id);
  return name;
}

// An inlined value: an index function of its operands (whose accessors exist, or
// pending_ names the first that does not); cached per thread when several ops read it.
Status KernelWriter::define_inlined(ir::ValueId id) {
  STITCH_RETURN_IF_ERROR(storage_type(dtype(id)).status());
  const std::string name = accessor_name(id);
  const std::string ct = compute_type(dtype(id));
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  STITCH_ASSIGN_OR_RETURN(std::string body, op_body(node, output_slot(node, id)));
  int readers = 0;
  for (const ir::Use& use : graph_.value(id).users) readers += inside_.count(use.node) ? 1 : 0;
  defs_ << "  // " << node.op_type << " " << comment_name(node) << ": "
        << ir::to_string(graph_.value(id).type) << "\n";
  if (readers >= 2 && ir::op_kind(node) != ir::OpKind::kView) {
    const std::string& base = names_.at(id);
    defs_ << "  " << ct << " c_" << base << " = 0;\n";
    defs_ << "  index_t ci_" << base << " = -1;\n";
    defs_ << "  auto compute_" << base << " = [&](index_t i) -> " << ct << " {\n"
          << assume_index(body) << body << "  };\n";
    defs_ << "  auto " << name << " = [&](index_t i) -> " << ct << " {\n"
          << "    if (ci_" << base << " != i) {\n      c_" << base << " = compute_" << base
          << "(i);\n      ci_" << base << " = i;\n    }\n    return c_" << base << ";\n  };\n";
  } else {
    defs_ << "  auto " << name << " = [&](index_t i) -> " << ct << " {\n"
          << assume_index(body) << body << "  };\n";
  }
  defined_.insert(id);
  return Status::ok();
}

// Statements computing output `slot` of `node` at flat index `i`, ending in a return;
// a float16/bfloat16 result is rounded to its type (see rounded()).
Result<std::string> KernelWriter::op_body(const ir::Node& node, size_t slot) {
  STITCH_ASSIGN_OR_RETURN(std::string body, op_statements(node, slot));
  const DType out_type = dtype(node.outputs[slot]);
  const OpLowering* lowering = find_op_lowering(node);
  const bool passes_through =
      ir::op_kind(node) == ir::OpKind::kView || (lowering != nullptr && lowering->passes_through);
  if (rounded(out_type, "v") == "v" || passes_through) return body;
  std::string indented;
  for (size_t start = 0; start < body.size();) {
    size_t end = body.find('\n', start);
    indented += "  " + body.substr(start, end - start + 1);
    start = end + 1;
  }
  return "    return " + rounded(out_type, "[&]() -> float {\n" + indented + "    }()") + ";\n";
}

// op_body's statements before the rounding: by the op's kind (a no-op reduction, a
// view), else by its entry in the op-lowering table.
Result<std::string> KernelWriter::op_statements(const ir::Node& node, size_t slot) {
  const ir::ValueId out = node.outputs[slot];
  const DType out_type = dtype(out);
  STITCH_RETURN_IF_ERROR(storage_type(out_type).status());
  if (product(dims(out)) == 0) return empty_value_body(compute_type(out_type));
  // The staged stencil reads its input from the shared tile (stencil_tile_code).
  const std::string staged = staged_tile(schedule_) && node.id == staged_tile(schedule_)->stencil
                                 ? "s_" + names_.at(node.inputs[0])
                                 : std::string();
  OpLoweringContext context{graph_, node, slot, [this](ir::ValueId id) { return accessor(id); },
                            staged};
  const ir::OpKind kind = ir::op_kind(node);
  if (kind == ir::OpKind::kReduction) {
    // Only a no-op reduction (noop_with_empty_axes, no axes) is inlined: the identity.
    STITCH_ASSIGN_OR_RETURN(std::string x, accessor(context.input(0)));
    return "    return " + x + "(i);\n";
  }
  // A GEMM is inlined only into the attention composition's tile loads (its prologue:
  // a fine-grained projection recomputed per element read, schedule.h 1b.).
  if (kind == ir::OpKind::kGemm) {
    if (!schedule_.as<AttentionPlan>())
      return error(node, "is materialized, not inlined (emitter bug)");
    return gemm_body(node);
  }
  if (kind == ir::OpKind::kView) return pass_through_body(context);
  const OpLowering* lowering = find_op_lowering(node);
  if (lowering == nullptr || !lowering->inline_body) {
    // The operand is defined first, as for a supported op, so an unsupported operand
    // is the one reported.
    if (context.input(0) != ir::kNoId) STITCH_RETURN_IF_ERROR(accessor(context.input(0)).status());
    return error(node, "has no CUDA implementation in the emitter; it stays unfused");
  }
  return lowering->inline_body(context);
}

// Defines compute_<v>(i) with `body` (once; `note` ends its comment line) and returns
// its name.
std::string KernelWriter::define_compute(ir::ValueId id, const std::string& body,
                                         const std::string& note) {
  const std::string name = "compute_" + names_.at(id);
  if (computed_.insert(id).second) {
    const ir::Node& node = graph_.node(graph_.value(id).producer);
    defs_ << "  // " << node.op_type << " " << comment_name(node) << ": "
          << ir::to_string(graph_.value(id).type) << note << "\n";
    defs_ << "  auto " << name << " = [&](index_t i) -> " << compute_type(dtype(id)) << " {\n"
          << assume_index(body) << body << "  };\n";
  }
  return name;
}

// The function a stage calls to compute the value `id` at a flat index: compute_<v>
// for a materialized value (whose accessor then reads back what the stage wrote),
// the inlined accessor otherwise.
Result<std::string> KernelWriter::value_function(ir::ValueId id) {
  if (!schedule_.values.at(id).materialized) return accessor(id);
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  std::string body;
  if (ir::op_kind(node) == ir::OpKind::kReduction) {
    STITCH_ASSIGN_OR_RETURN(body, reduction_body(node));
  } else if (ir::op_kind(node) == ir::OpKind::kGemm) {
    STITCH_ASSIGN_OR_RETURN(body, gemm_body(node));
  } else {
    STITCH_ASSIGN_OR_RETURN(body, op_body(node, output_slot(node, id)));
  }
  std::string function = define_compute(id, body, "");
  STITCH_RETURN_IF_ERROR(accessor(id).status());
  return function;
}

// Global/thread/packing stage code writing value `id` (materialized or output).
Result<std::string> KernelWriter::stage_code(ir::ValueId id, const std::string& indent) {
  const ir::Node& node = graph_.node(graph_.value(id).producer);
  const ValueSchedule& value = schedule_.values.at(id);
  std::string code = indent + "// " + comment_name(node) + " -> " +
                     ir::to_string(graph_.value(id).type) +
                     (value.storage == Storage::kWorkspace ? " (workspace)" : " (output)") + "\n";
  if (value.lanes_over_k) {
    STITCH_ASSIGN_OR_RETURN(std::string lanes, lane_gemm_code(id, indent));
    return code + lanes;
  }
  if (value.mapping != ReductionMapping::kThread) {
    STITCH_ASSIGN_OR_RETURN(std::string mapped, value.slices >= 2
                                                    ? partials_code(id, indent)
                                                    : mapped_reduction_code(id, indent));
    return code + mapped;
  }
  STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
  std::string target = (output_index_.count(id) ? pointer_name(id) : "ws_" + names_.at(id)) + "[i]";
  const int64_t elements = elements_of(graph_, id);
  STITCH_ASSIGN_OR_RETURN(std::string epilogues, epilogue_writes(id, indent + "  "));
  code += indent + "for (index_t i = " + loop_start(elements, /*per_warp=*/false) + "; i < " +
          num(elements) + "; i += threads) ";
  if (epilogues.empty()) {
    return code + target + " = " + store(dtype(id), function + "(i)") + ";\n";
  }
  return code + "{\n" + indent + "  " + target + " = " + store(dtype(id), function + "(i)") +
         ";\n" + epilogues + indent + "}\n";
}

// Writes of the values planned as same-index epilogues of GEMM `gemm`
// (ValueSchedule::epilogue_of), at element i, right after the GEMM's element: they read
// it back from its storage, written by this thread.
Result<std::string> KernelWriter::epilogue_writes(ir::ValueId gemm, const std::string& indent) {
  std::string code;
  for (ir::ValueId id : written_values()) {
    if (schedule_.values.at(id).epilogue_of != gemm) continue;
    STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
    code += indent + target_array(id) + "[i] = " + store(dtype(id), function + "(i)") + ";  // " +
            comment_name(producer(id)) + ", a same-index epilogue\n";
  }
  return code;
}

// The thread composition's 128-bit path (GroupSchedule::vector_width): outputs of one
// element count whose inputs are read through the same index maps share one loop, so
// that a run's windows are loaded once and a value two outputs read is computed once
// per element (its compute_ cache). Each iteration loads the run's windows and
// registers, computes four consecutive elements of each output (element by element)
// and stores them with one 128-bit store per output; the scalar loop, when a pointer is
// not 16-byte aligned (`vec4`, the prologue), writes the same outputs element by
// element.
Result<std::string> KernelWriter::vector_stages(const std::vector<ir::ValueId>& written,
                                                const std::string& indent) {
  using Maps = std::map<ir::ValueId, BroadcastSteps>;
  auto maps_of = [&](ir::ValueId id) {
    auto it = vector().maps.find(id);
    return it == vector().maps.end() ? Maps{} : it->second;
  };
  struct Loop {
    int64_t elements;
    Maps maps;
    std::vector<ir::ValueId> outputs;
  };
  std::vector<Loop> loops;
  for (ir::ValueId id : written) {
    const int64_t elements = elements_of(graph_, id);
    const Maps maps = maps_of(id);
    auto fits = [&](const Loop& loop) {
      if (loop.elements != elements) return false;
      for (const auto& [input, steps] : maps) {
        auto it = loop.maps.find(input);
        if (it != loop.maps.end() && it->second != steps) return false;
      }
      return true;
    };
    auto loop = std::find_if(loops.begin(), loops.end(), fits);
    if (loop == loops.end()) {
      loops.push_back({elements, maps, {id}});
    } else {
      loop->maps.insert(maps.begin(), maps.end());
      loop->outputs.push_back(id);
    }
  }
  std::string code;
  const char* lanes[] = {"x", "y", "z", "w"};
  for (const Loop& loop : loops) {
    std::vector<std::string> functions;
    for (ir::ValueId id : loop.outputs) {
      code += indent + "// " + comment_name(producer(id)) + " -> " +
              ir::to_string(graph_.value(id).type) + " (output)\n";
      STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
      functions.push_back(function);
    }
    std::vector<std::string> loads;
    bool broadcast = false;
    for (const auto& [input, steps] : loop.maps) {
      if (!defined_.count(input)) continue;
      std::string index = "i";
      for (const auto& [operand, reader] : steps) {
        index = broadcast_index(reader, operand, index == "i" ? index : "(" + index + ")");
      }
      broadcast = broadcast || index != "i";
      loads.push_back(vector().inputs.count(input)
                          ? "w_" + names_.at(input) + " = *reinterpret_cast<const float4*>(" +
                                pointer_name(input) + " + " + index + ");"
                          : "u_" + names_.at(input) + " = " +
                                load(dtype(input), pointer_name(input) + "[" + index + "]") + ";");
    }
    const int64_t runs = loop.elements / 4;
    code += indent + "if (vec4) {\n";
    code += indent + "  for (index_t q = " + loop_start(runs, /*per_warp=*/false) + "; q < " +
            num(runs) + "; q += threads) {\n";
    code += indent + "    const index_t i = q * 4;\n";
    if (broadcast) code += indent + "    STITCH_ASSUME(i >= 0);\n";
    for (const std::string& line : loads) code += indent + "    " + line + "\n";
    for (size_t o = 0; o < loop.outputs.size(); ++o) {
      code += indent + "    float4 o" + num(static_cast<int64_t>(o)) + ";\n";
    }
    for (int k = 0; k < 4; ++k) {
      for (size_t o = 0; o < loop.outputs.size(); ++o) {
        code += indent + "    o" + num(static_cast<int64_t>(o)) + "." + lanes[k] + " = " +
                functions[o] + "(i" + (k ? " + " + num(k) : std::string()) + ");\n";
      }
    }
    for (size_t o = 0; o < loop.outputs.size(); ++o) {
      code += indent + "    *reinterpret_cast<float4*>(" + pointer_name(loop.outputs[o]) +
              " + i) = o" + num(static_cast<int64_t>(o)) + ";\n";
    }
    code += indent + "  }\n";
    code += indent + "} else {\n";
    code += indent + "  for (index_t i = tid; i < " + num(loop.elements) + "; i += threads) {\n";
    for (size_t o = 0; o < loop.outputs.size(); ++o) {
      code += indent + "    " + pointer_name(loop.outputs[o]) +
              "[i] = " + store(dtype(loop.outputs[o]), functions[o] + "(i)") + ";\n";
    }
    code += indent + "  }\n";
    code += indent + "}\n";
  }
  return code;
}

// The first item of a stage's grid-stride loop over `items` (threads, or warps with
// `per_warp`): the thread or warp after the stage's earlier loops (loop_offset_
// threads), modulo the grid. (tid + threads - offset) % threads is a rotation of the
// grid, so every item still has exactly one thread or warp. Advances loop_offset_.
std::string KernelWriter::loop_start(int64_t items, bool per_warp) {
  const int64_t before = per_warp ? loop_offset_ / 32 : loop_offset_;
  loop_offset_ = (loop_offset_ + (per_warp ? 32 : 1) * items) % (int64_t{1} << 30);
  const std::string id = per_warp ? "tid / 32" : "tid";
  if (before == 0) return id;
  const std::string count = per_warp ? "threads / 32" : "threads";
  const std::string modulus = per_warp ? "(threads / 32)" : "threads";
  return "(" + id + " + " + count + " - " + num(before) + " % " + modulus + ") % " + modulus;
}

std::string KernelWriter::row_lane() const {
  return plan<RowPlan>().warp ? "lane" : "static_cast<index_t>(threadIdx.x)";
}

// Whether a warp's row groups can run past the last row (warps holding several rows
// whose count does not divide the rows): their row is clamped to the last one, read
// but not written (`row_in`), so that every lane stays in the warp's shuffles.
bool KernelWriter::row_guarded() const {
  return plan<RowPlan>().warp && plan<RowPlan>().lanes_per_row < 32 &&
         plan<RowPlan>().rows % (32 / plan<RowPlan>().lanes_per_row) != 0;
}

// The loop over the row positions j this thread visits: the whole row of `length`, or
// the block's slice [j0, j1) when rows are split.
std::string KernelWriter::row_loop(int64_t length) const {
  const bool split = plan<RowPlan>().blocks_per_row >= 2;
  const std::string first = split ? "j0 + static_cast<index_t>(threadIdx.x)" : row_lane();
  const std::string width = plan<RowPlan>().warp ? num(plan<RowPlan>().lanes_per_row)
                                                 : "static_cast<index_t>(blockDim.x)";
  return "for (index_t j = " + first + "; j < " + (split ? std::string("j1") : num(length)) +
         "; j += " + width + ")";
}

// Row-local code for value `id` inside the row loop (warp/block composition).
Result<std::string> KernelWriter::row_code(ir::ValueId id, const std::string& indent) {
  if (ir::op_kind(producer(id)) == ir::OpKind::kReduction) return row_reduction_code(id, indent);
  const ValueSchedule& value = schedule_.values.at(id);
  const std::string sync = plan<RowPlan>().warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
  const std::string& base = names_.at(id);
  std::string code = indent + "// " + comment_name(producer(id)) + " -> " +
                     ir::to_string(graph_.value(id).type) + "\n";
  const int64_t k = value.row_elements;
  const std::string index = "row * " + num(k) + " + j";
  // Rows moved by a Transpose: its operand at this row, written to the row it lands on.
  STITCH_ASSIGN_OR_RETURN(std::string function,
                          value.rows_moved ? accessor(producer(id).inputs[0]) : value_function(id));
  std::string target;
  if (value.rows_moved) {
    target = pointer_name(id) + "[" + moved_row(id) + " * " + num(k) + " + j]";
  } else if (output_index_.count(id)) {
    target = pointer_name(id) + "[" + index + "]";
  } else if (value.storage == Storage::kShared) {
    target = "sh_" + base + "[j]";
  } else {
    target = "ws_" + base + "[" + index + "]";
  }
  // A clamped row group computes but does not write (shared rows are its own).
  const bool guarded =
      row_guarded() && (output_index_.count(id) || value.storage == Storage::kWorkspace);
  code += indent + (guarded ? "if (row_in) " : "") + row_loop(k) + " " + target + " = " +
          store(dtype(id), function + "(" + index + ")") + ";\n";
  if (value.materialized) code += indent + sync + "\n";
  return code;
}

// The row a Transpose that moves whole rows (rows_moved) writes the current row to:
// the row's coordinates over the operand's row axes, each scaled by the stride of
// the output axis it moves to.
std::string KernelWriter::moved_row(ir::ValueId id) const {
  const ir::Node& node = producer(id);
  const std::vector<int64_t>& in = dims(node.inputs[0]);
  const std::vector<int64_t>& out = dims(id);
  const std::vector<int64_t> perm = transpose_perm(node, in.size());
  // The row axes: the leading axes of the rows' elements (schedule.cc checked that
  // the Transpose leaves the others in place).
  size_t q = 0;
  for (int64_t running = 1; q < in.size() && running < plan<RowPlan>().rows; ++q) running *= in[q];
  return "(" + transposed_index(in, out, perm, q, "row") + ")";
}

// Whether computing `written` (its producer's operands, through inlined values) reads
// the value `target`; materialized values other than `target` are read from memory.
bool KernelWriter::reads_through_registers(ir::ValueId written, ir::ValueId target) const {
  std::vector<ir::ValueId> stack(graph_.node(graph_.value(written).producer).inputs);
  std::set<ir::ValueId> seen;
  while (!stack.empty()) {
    ir::ValueId id = stack.back();
    stack.pop_back();
    if (id == ir::kNoId || !seen.insert(id).second || !produced_inside(id)) continue;
    if (id == target) return true;
    if (schedule_.values.at(id).materialized) continue;
    for (ir::ValueId input : graph_.node(graph_.value(id).producer).inputs) stack.push_back(input);
  }
  return false;
}

// Values a stage writes (materialized values and group outputs), in topological order.
std::vector<ir::ValueId> KernelWriter::written_values() const {
  std::set<ir::ValueId> outputs(schedule_.boundary.outputs.begin(),
                                schedule_.boundary.outputs.end());
  std::vector<ir::ValueId> written;
  for (ir::NodeId id : schedule_.boundary.ordered_nodes) {
    for (ir::ValueId output : graph_.node(id).outputs) {
      if (output == ir::kNoId) continue;
      if (schedule_.values.at(output).materialized || outputs.count(output)) {
        written.push_back(output);
      }
    }
  }
  return written;
}

// Split rows: phases separated by grid barriers; in each, a block per (row, part)
// combines the partials of the reductions the phase reads, then writes its values.
Result<std::string> KernelWriter::split_row_stages(const std::vector<ir::ValueId>& written) {
  std::ostringstream stages;
  const int64_t parts = plan<RowPlan>().blocks_per_row;
  const int64_t length = plan<RowPlan>().row_length;
  for (int phase = 0; phase < schedule_.levels; ++phase) {
    if (phase > 0) stages << "  stitch_grid_sync(barrier);\n";
    stages << "  // Phase " << phase << ": block (row, part) over the row slice [j0, j1)\n";
    stages << "  for (index_t vb = blockIdx.x; vb < " << plan<RowPlan>().rows * parts
           << "; vb += gridDim.x) {\n";
    stages << "    row = vb / " << parts << ";\n";
    stages << "    const index_t part = vb % " << parts << ";\n";
    stages << "    [[maybe_unused]] const index_t j0 = part * " << plan<RowPlan>().slice << ";\n";
    stages << "    [[maybe_unused]] const index_t j1 = j0 + " << plan<RowPlan>().slice << " < "
           << length << " ? j0 + " << plan<RowPlan>().slice << " : " << length << ";\n";
    for (ir::ValueId id : written) {
      const ValueSchedule& value = schedule_.values.at(id);
      bool reduction = ir::op_kind(producer(id)) == ir::OpKind::kReduction;
      if (!reduction || value.level + 1 > phase) continue;
      bool needed = value.level + 1 == phase && output_index_.count(id) > 0;
      for (ir::ValueId other : written) {
        if (schedule_.values.at(other).level == phase && reads_through_registers(other, id)) {
          needed = true;
        }
      }
      if (!needed) continue;
      STITCH_ASSIGN_OR_RETURN(std::string code, combine_code(id, value.level + 1 == phase, "    "));
      stages << code;
    }
    for (ir::ValueId id : written) {
      if (schedule_.values.at(id).level != phase) continue;
      STITCH_ASSIGN_OR_RETURN(std::string code, row_code(id, "    "));
      stages << code;
    }
    stages << "    __syncthreads();\n  }\n";
  }
  return stages.str();
}

// A warp or a block per row: one loop over the rows writing every value.
Result<std::string> KernelWriter::row_stages(const std::vector<ir::ValueId>& written) {
  std::ostringstream stages;
  const bool warp = plan<RowPlan>().warp;
  const std::string sync = warp ? "__syncwarp(0xffffffffu);" : "__syncthreads();";
  if (warp && plan<RowPlan>().lanes_per_row < 32) {
    // The loop runs over the warp's first row, the same for all its lanes, so that
    // every lane reaches the shuffles; each group of lanes_per_row takes its row.
    const int lanes = plan<RowPlan>().lanes_per_row;
    stages << "  for (index_t first = static_cast<index_t>(blockIdx.x) * "
           << plan<RowPlan>().rows_per_block << " + threadIdx.x / 32 * " << 32 / lanes
           << "; first < " << plan<RowPlan>().rows
           << "; first += static_cast<index_t>(gridDim.x) * " << plan<RowPlan>().rows_per_block
           << ") {\n";
    stages << "    row = first + threadIdx.x % 32 / " << lanes << ";\n";
    if (row_guarded()) {
      stages << "    const bool row_in = row < " << plan<RowPlan>().rows << ";\n";
      stages << "    if (!row_in) row = " << plan<RowPlan>().rows - 1 << ";\n";
    }
  } else if (warp) {
    stages << "  for (row = static_cast<index_t>(blockIdx.x) * " << plan<RowPlan>().rows_per_block
           << " + threadIdx.x / 32; row < " << plan<RowPlan>().rows
           << "; row += static_cast<index_t>(gridDim.x) * " << plan<RowPlan>().rows_per_block
           << ") {\n";
  } else {
    stages << "  for (row = blockIdx.x; row < " << plan<RowPlan>().rows
           << "; row += gridDim.x) {\n";
  }
  for (ir::ValueId id : written) {
    STITCH_ASSIGN_OR_RETURN(std::string code, row_code(id, "    "));
    stages << code;
  }
  stages << "    " << sync << "\n  }\n";
  return stages.str();
}

// Transpose composition (schedule.h): a block per 32 x 32 tile of one batch. The
// block's 8 warps read 4 tile rows each along the input's contiguous axis, then write
// 4 tile columns each along the output's; the tile's rows are padded by one element,
// so a warp reading a column hits 32 different banks.
Result<std::string> KernelWriter::transpose_code() {
  const ir::Node& node = graph_.node(schedule_.boundary.ordered_nodes.at(0));
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(in));
  const std::string type = compute_type(dtype(in));
  const TransposePlan& transpose = plan<TransposePlan>();
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
  code << "      if (c0 + k < " << cols << " && r0 + x < " << rows << ") " << pointer_name(out)
       << "[(b * " << cols << " + c0 + k) * " << rows
       << " + r0 + x] = " << store(dtype(out), "tile[x * 33 + k]") << ";\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "  }\n";
  return code.str();
}

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
Result<std::string> KernelWriter::stencil_tile_code(const std::vector<ir::ValueId>& written) {
  const StencilTile& tile = *staged_tile(schedule_);
  const ir::Node& node = graph_.node(tile.stencil);
  const ir::ValueId in = node.inputs[0], out = node.outputs[0];
  const std::optional<ir::Stencil> stencil = ir::stencil_of(graph_, node);
  if (!stencil) return error(node, "has no window for the staged tile (emitter bug)");
  const ir::Window w = ir::planar_window(stencil->window);  // a 1-D window: one row
  STITCH_ASSIGN_OR_RETURN(std::string x, accessor(in));
  const std::string name = names_.at(in);
  const std::string t = compute_type(dtype(in));
  const std::vector<int64_t>& out_dims = dims(out);
  const int64_t planes = out_dims[0] * out_dims[1];
  const int64_t in_planes = dims(in)[0] * dims(in)[1];
  const int64_t in_h = w.input[0], in_w = w.input[1];
  const int64_t out_h = w.output[0], out_w = w.output[1];
  const int64_t tp = tile.planes, th = tile.tile_h, tw = tile.tile_w;
  const int64_t tip = tile.in_planes;
  const int64_t sh = tile.tile_in_h, sw = tile.tile_in_w;
  const int64_t per_planes = tile.tiles_h * tile.tiles_w;
  std::ostringstream code;
  // A 1-D window's tiles run along its one row: no row terms.
  const bool one_row = staged_stencil_is_1d(graph_, tile);
  code << "  // " << comment_name(node) << ": " << planes << " planes of "
       << (one_row ? "[" + num(out_w) : "[" + num(out_h) + ", " + num(out_w))
       << "] outputs in tiles of [" << tp << ", " << (one_row ? "" : num(th) + ", ") << tw << "]\n";
  if (schedule_.as<StencilPlan>()) {
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
    std::string text = w.strides[d] == 1 ? first : first + " * " + num(w.strides[d]);
    return w.pad_begin[d] == 0 ? text : text + " - " + num(w.pad_begin[d]);
  };
  if (!one_row) code << "    tile_row0 = " << origin("r0", 0) << ";\n";
  code << "    tile_col0 = " << origin("c0", 1) << ";\n";
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
  code << "    __syncthreads();\n";
  code << "    {\n";
  code << "      const index_t plane = " << plane0 << " + threadIdx.x / " << th * tw << ";\n";
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
  const StencilPlan* staged = schedule_.as<StencilPlan>();
  const std::map<ir::ValueId, ir::NodeId>& moved = staged ? staged->moved_outputs : kNone;
  for (ir::ValueId id : written) {
    auto through = moved.find(id);
    if (through != moved.end()) {
      // Written through a Transpose (and views): the element at i of its input lands
      // where the Transpose puts it.
      const ir::Node& transpose = graph_.node(through->second);
      STITCH_ASSIGN_OR_RETURN(std::string write, write_through_transpose(id, transpose));
      code << "        " << write << ";  // " << comment_name(transpose) << "\n";
      continue;
    }
    STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
    code << "        " << target_array(id) << "[i] = " << store(dtype(id), function + "(i)")
         << ";  // " << comment_name(producer(id)) << "\n";
  }
  code << "      }\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "  }\n";
  return code.str();
}

// The statement writing group output `id`, reached through `transpose` (and views
// after it), from the Transpose's input at flat index `i`: its element lands where the
// Transpose puts it (the attention kernel's head merge, a stencil written channels-last).
Result<std::string> KernelWriter::write_through_transpose(ir::ValueId id,
                                                          const ir::Node& transpose) {
  const std::vector<int64_t>& from = dims(transpose.inputs[0]);
  const std::vector<int64_t> perm = transpose_perm(transpose, from.size());
  STITCH_ASSIGN_OR_RETURN(std::string value, accessor(transpose.inputs[0]));
  return pointer_name(id) + "[" +
         transposed_index(from, dims(transpose.outputs[0]), perm, from.size(), "i") +
         "] = " + store(dtype(id), value + "(i)");
}

// Packing: each independent part over its own range of blocks.
Result<std::string> KernelWriter::packing_stages(const std::vector<ir::ValueId>& written) {
  std::ostringstream stages;
  int64_t first = 0;
  for (size_t p = 0; p < plan<PackingPlan>().parts.size(); ++p) {
    std::set<ir::NodeId> part(plan<PackingPlan>().parts[p].begin(),
                              plan<PackingPlan>().parts[p].end());
    int64_t blocks = plan<PackingPlan>().part_grids[p];
    stages << "  // Part " << p << ": blocks [" << first << ", " << first + blocks << ")\n";
    // (no lower bound for the first part: blockIdx.x >= 0 is a warning in nvcc)
    stages << "  if (" << (first > 0 ? "blockIdx.x >= " + num(first) + " && " : std::string())
           << "blockIdx.x < " << first + blocks << ") {\n";
    stages << "    tid = static_cast<index_t>(blockIdx.x - " << first
           << ") * blockDim.x + threadIdx.x;\n";
    stages << "    threads = static_cast<index_t>(" << blocks << ") * blockDim.x;\n";
    loop_offset_ = 0;
    std::vector<ir::ValueId> part_written;
    for (ir::ValueId id : written) {
      if (part.count(graph_.value(id).producer) &&
          schedule_.values.at(id).epilogue_of == ir::kNoId) {
        part_written.push_back(id);
      }
    }
    if (vector().width == 4) {
      STITCH_ASSIGN_OR_RETURN(std::string code, vector_stages(part_written, "    "));
      stages << code;
    } else {
      for (ir::ValueId id : part_written) {
        STITCH_ASSIGN_OR_RETURN(std::string code, stage_code(id, "    "));
        stages << code;
      }
    }
    stages << "  }\n";
    first += blocks;
  }
  return stages.str();
}

// Thread, warp/column-mapped and global compositions: grid-stride stages by level,
// separated by grid barriers; a sliced reduction writes its partials a level early.
Result<std::string> KernelWriter::global_stages(const std::vector<ir::ValueId>& written) {
  std::ostringstream stages;
  for (int level = 0; level < schedule_.levels; ++level) {
    if (level > 0) stages << "  stitch_grid_sync(barrier);\n";
    if (schedule_.levels > 1) stages << "  // Stage " << level << "\n";
    loop_offset_ = 0;
    if (vector().width == 4) {
      STITCH_ASSIGN_OR_RETURN(std::string code, vector_stages(written, "  "));
      stages << code;
      continue;
    }
    for (ir::ValueId id : written) {
      const ValueSchedule& value = schedule_.values.at(id);
      if (value.slices >= 2 && value.level - 1 == level) {
        STITCH_ASSIGN_OR_RETURN(std::string code, mapped_reduction_code(id, "  "));
        stages << "  // " << comment_name(producer(id)) << ": partials\n" << code;
      }
      if (value.level != level || value.epilogue_of != ir::kNoId) continue;
      if (staged_tile(schedule_) && id == staged_tile(schedule_)->staged_value) {
        // 4b.: this stage evaluates the staged stencil, tile by tile.
        STITCH_ASSIGN_OR_RETURN(std::string code, stencil_tile_code({id}));
        stages << code;
        continue;
      }
      STITCH_ASSIGN_OR_RETURN(std::string code, stage_code(id, "  "));
      stages << code;
    }
  }
  return stages.str();
}

// The declarations before the accessors: the shared arena, the MatMul tiles, the row
// and thread indices, the grid barrier and the split rows' partials.
// 32-bit index math when every tensor the kernel touches has fewer than 2^30
// elements: a flat index, and a grid-stride index plus the thread count, then stay
// below 2^31 (issue 16: 64-bit multiplies and divides cost several instructions, a
// 64-bit divide by a non-power of two a software routine).
bool KernelWriter::narrow_indices() const {
  constexpr int64_t kLimit = int64_t{1} << 30;
  auto fits = [&](ir::ValueId id) {
    if (id == ir::kNoId) return true;
    const int64_t elements = graph_.value(id).type.num_elements();
    return elements >= 0 && elements < kLimit;
  };
  for (ir::NodeId id : schedule_.boundary.ordered_nodes) {
    const ir::Node& node = graph_.node(id);
    if (!std::all_of(node.inputs.begin(), node.inputs.end(), fits) ||
        !std::all_of(node.outputs.begin(), node.outputs.end(), fits)) {
      return false;
    }
  }
  return schedule_.workspace_bytes < kLimit;
}

std::string KernelWriter::prologue(const std::vector<ir::ValueId>& written) const {
  std::ostringstream body;
  body << (narrow_indices()
               ? "  using index_t = int;  // every tensor has fewer than 2^30 elements\n"
               : "  using index_t = long long;  // a tensor has 2^30 elements or more\n");
  if (schedule_.shared_bytes > 0) {
    body << "  STITCH_SHARED_ARENA(smem, " << schedule_.shared_bytes << ");\n";
  }
  body << std::visit(
      Overloaded{[&](const AttentionPlan& plan) { return attention_prologue(plan); },
                 // transpose_code declares its tile and indices.
                 [&](const TransposePlan&) { return std::string(); },
                 // The tile and its indices follow (after the chain).
                 [&](const StencilPlan&) { return std::string(); },
                 [&](const TiledGemmPlan& plan) { return tiled_gemm_prologue(plan); },
                 [&](const RowPlan& plan) { return row_prologue(plan, written); },
                 [&](const auto&) { return stage_prologue(); }},
      schedule_.plan);
  if (const StencilTile* tile = staged_tile(schedule_)) body << stencil_tile_prologue(*tile);
  return body.str();
}

std::string KernelWriter::barrier_declaration() const {
  return "  unsigned int* barrier = reinterpret_cast<unsigned int*>(workspace + " +
         num(schedule_.barrier_offset) + ");\n";
}

// The tiles: 16-bit rows padded by 8 elements on tensor cores, float with the K rows
// padded by one on CUDA cores.
std::string KernelWriter::attention_prologue(const AttentionPlan& plan) const {
  std::ostringstream body;
  const ir::AttentionCore& core = plan.core;
  const bool tensor_cores = plan.tensor_cores;
  const std::string t = tensor_cores ? storage_type(core.dtype).value() : "float";
  const std::string q_pad = tensor_cores ? " + 8" : "", k_pad = tensor_cores ? " + 8" : " + 1";
  body << "  const index_t lane = threadIdx.x % 32;\n";
  body << "  const index_t warp = threadIdx.x / 32;\n";
  if (tensor_cores) {
    body << "  const index_t group = lane / 4;  // the fragments' row within 8\n";
    body << "  const index_t quad = lane % 4;   // the fragments' column pair\n";
  }
  body << "  " << t << "* tile_q = reinterpret_cast<" << t << "*>(smem + 0);  // [" << plan.tile_q()
       << ", " << core.d << q_pad << "] query rows of "
       << support::source_literal(graph_.value(core.query).name) << "\n";
  body << "  " << t << "* tile_k = reinterpret_cast<" << t << "*>(smem + " << plan.k_offset
       << ");  // [32, " << core.d << k_pad << "] keys of "
       << support::source_literal(graph_.value(core.key).name) << "\n";
  body << "  " << t << "* tile_v = reinterpret_cast<" << t << "*>(smem + " << plan.v_offset
       << ");  // [32, " << core.dv << q_pad << "] values of "
       << support::source_literal(graph_.value(core.value).name) << "\n";
  return body.str();
}

std::string KernelWriter::tiled_gemm_prologue(const TiledGemmPlan& plan) const {
  std::ostringstream body;
  const ir::Node& matmul = graph_.node(plan.gemm);
  body << "  float* tile_a = reinterpret_cast<float*>(smem + " << plan.a_offset << ");  // ["
       << plan.tile_m << ", " << plan.k << "] rows of "
       << support::source_literal(graph_.value(matmul.inputs[0]).name) << "\n";
  body << "  float* tile_b = reinterpret_cast<float*>(smem + " << plan.b_offset << ");  // ["
       << plan.k << ", " << plan.tile_n << "] columns of "
       << support::source_literal(graph_.value(matmul.inputs[1]).name) << "\n";
  return body.str();
}

std::string KernelWriter::row_prologue(const RowPlan& plan,
                                       const std::vector<ir::ValueId>& written) const {
  std::ostringstream body;
  if (plan.warp && plan.lanes_per_row < 32) {
    body << "  const index_t lane = threadIdx.x % " << plan.lanes_per_row
         << ";  // within the row's " << plan.lanes_per_row << " lanes\n";
  } else if (plan.warp) {
    body << "  const index_t lane = threadIdx.x % 32;\n";
  }
  body << "  index_t row = 0;\n";
  if (plan.split()) {
    body << barrier_declaration();
    for (ir::ValueId id : written) {
      const ValueSchedule& value = schedule_.values.at(id);
      if (value.partial_offset < 0) continue;
      body << "  float* pt_" << names_.at(id) << " = reinterpret_cast<float*>(workspace + "
           << value.partial_offset << ");  // [" << plan.rows << ", " << plan.blocks_per_row
           << "] partials of " << comment_name(producer(id)) << "\n";
    }
  }
  int64_t slot_bytes = schedule_.shared_bytes - (plan.warp ? 0 : kBlockScratchBytes);
  if (slot_bytes > 0) {
    body << "  const index_t row_slot = "
         << (plan.warp ? "(threadIdx.x / " + num(plan.lanes_per_row) + ") * " +
                             num(slot_bytes / plan.rows_per_block)
                       : std::string("0"))
         << ";\n";
  }
  return body.str();
}

// The thread, packing and global compositions' grid-stride indices.
std::string KernelWriter::stage_prologue() const {
  std::ostringstream body;
  const char* qualifier = schedule_.as<PackingPlan>() ? "" : "const ";
  body << "  " << qualifier
       << "index_t tid = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
  body << "  " << qualifier << "index_t threads = static_cast<index_t>(gridDim.x) * blockDim.x;\n";
  if (schedule_.barrier_offset >= 0) body << barrier_declaration();
  if (vector().width == 4) {
    // The vector path's condition, the same for every thread: every pointer it reads
    // or writes four floats at a time is 16-byte aligned.
    std::string aligned;
    auto add = [&](ir::ValueId id) {
      aligned += (aligned.empty() ? "" : " && ") + std::string("stitch_aligned16(") +
                 pointer_name(id) + ")";
    };
    for (ir::ValueId id : schedule_.boundary.inputs) {
      if (vector().inputs.count(id) && defined_.count(id)) add(id);
    }
    for (ir::ValueId id : schedule_.boundary.outputs) add(id);
    body << "  const bool vec4 = " << aligned
         << ";  // 128-bit loads and stores, else one element per thread\n";
  }
  return body.str();
}

// The staged stencil's tile and its accessor (stencil_tile_code fills the tile).
std::string KernelWriter::stencil_tile_prologue(const StencilTile& tile) const {
  std::ostringstream body;
  const bool one_row = staged_stencil_is_1d(graph_, tile);
  const ir::ValueId in = graph_.node(tile.stencil).inputs[0];
  const std::string t = compute_type(dtype(in));
  const std::string name = names_.at(in);
  body << "  " << t << "* tile_" << name << " = reinterpret_cast<" << t << "*>(smem + "
       << tile.offset << ");  // [" << tile.in_planes << ", "
       << (one_row ? std::string() : num(tile.tile_in_h) + ", ") << tile.tile_in_w
       << "] elements of " << support::source_literal(graph_.value(in).name)
       << " the tile's windows read\n";
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

Result<std::string> KernelWriter::write_body() {
  const std::vector<ir::ValueId> written = written_values();
  Result<std::string> stages =
      std::visit(Overloaded{[&](const AttentionPlan&) { return attention_code(written); },
                            [&](const TransposePlan&) { return transpose_code(); },
                            [&](const StencilPlan&) { return stencil_tile_code(written); },
                            [&](const TiledGemmPlan&) { return tiled_gemm_code(written); },
                            [&](const RowPlan& plan) {
                              return plan.split() ? split_row_stages(written) : row_stages(written);
                            },
                            [&](const PackingPlan&) { return packing_stages(written); },
                            // The thread composition is the global one's single stage.
                            [&](const auto&) { return global_stages(written); }},
                 schedule_.plan);
  if (!stages.is_ok()) return stages.status();
  return prologue(written) + defs_.str() + stages.value();
}

}  // namespace stitch::emit

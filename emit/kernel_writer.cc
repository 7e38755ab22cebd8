// The kernel writer's accessors, inlined values and stages (see kernel_writer.h).
#include "emit/kernel_writer.h"

#include <algorithm>

#include "emit/cuda_text.h"
#include "ir/core/op_registry.h"
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
  written_ = written_values();
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

// The accessor `name` of `id`'s float32 elements through a 16-byte window it loads
// whenever the index it reads leaves it (VectorAccess::windows_follow_reads: a row's
// run of 4 elements loads it once); element by element when a pointer is not 16-byte
// aligned.
std::string KernelWriter::window_accessor(ir::ValueId id, const std::string& name) const {
  const std::string pointer = pointer_name(id), window = "w_" + names_.at(id);
  const std::string at = "wi_" + names_.at(id);
  std::ostringstream text;
  text << "  float4 " << window << "{};  // elements [" << at << ", " << at << " + 4) of "
       << pointer << "\n";
  text << "  index_t " << at << " = -1;\n";
  text << "  auto " << name << " = [&](index_t i) -> float {\n"
       << "    if (!vec4) return " << pointer << "[i];\n"
       << "    if ((i & ~static_cast<index_t>(3)) != " << at << ") {\n"
       << "      " << at << " = i & ~static_cast<index_t>(3);\n"
       << "      " << window << " = *reinterpret_cast<const float4*>(" << pointer << " + " << at
       << ");\n"
       << "    }\n"
       << "    return stitch_lane4(" << window << ", static_cast<int>(i & 3));\n"
       << "  };\n";
  return text.str();
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
    if (vector().inputs.count(id) && vector().windows_follow_reads) {
      defs_ << window_accessor(id, name);
      defined_.insert(id);
      return name;
    }
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
      if (vector().inputs.count(id) && vector().windows_follow_reads) {
        // Read back after the loop that stored it (and the row's barrier).
        defs_ << window_accessor(id, name);
        break;
      }
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
  const StencilTile* tile = staged_tile(schedule_);
  const std::string staged =
      tile && node.id == tile->stencil ? "s_" + names_.at(node.inputs[0]) : std::string();
  const std::string staged_filters = !staged.empty() && tile->filter_offset >= 0
                                         ? "f_" + names_.at(node.inputs[1])
                                         : std::string();
  OpLoweringContext context{
      graph_, node, slot, [this](ir::ValueId id) { return accessor(id); }, staged, staged_filters};
  const ir::OpKind kind = ir::op_kind(node);
  if (kind == ir::OpKind::kReduction) {
    // Only a no-op reduction (noop_with_empty_axes, no axes) is inlined: the identity.
    STITCH_ASSIGN_OR_RETURN(std::string x, accessor(context.input(0)));
    return "    return " + x + "(i);\n";
  }
  // A GEMM is inlined only into the attention composition's tile loads (its prologue:
  // a fine-grained projection recomputed per element read, schedule.h 1b.).
  if (kind == ir::OpKind::kGemm) {
    const bool inlines = visit_composition(
        schedule_.plan, [](auto c, const auto& plan) { return c.inlines_gemms(plan); });
    if (!inlines) return error(node, "is materialized, not inlined (emitter bug)");
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
  if (value.warp_mma) {
    STITCH_ASSIGN_OR_RETURN(std::string pieces, warp_mma_code(id, indent));
    return code + pieces;
  }
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
  std::string target = target_array(id) + "[i]";
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
  for (ir::ValueId id : written_) {
    if (schedule_.values.at(id).epilogue_of != gemm) continue;
    STITCH_ASSIGN_OR_RETURN(std::string function, value_function(id));
    code += indent + target_array(id) + "[i] = " + store(dtype(id), function + "(i)") + ";  // " +
            comment_name(producer(id)) + ", a same-index epilogue\n";
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
  const RowPlan& rows = plan<RowPlan>();
  return rows.warp && rows.lanes_per_row < 32 && rows.rows % (32 / rows.lanes_per_row) != 0;
}

bool KernelWriter::row_runs(int64_t length) const {
  const RowPlan& rows = plan<RowPlan>();
  return rows.vector.width == 4 && !rows.split() && length % 4 == 0;
}

std::string KernelWriter::row_run_loop(int64_t length) const {
  const RowPlan& rows = plan<RowPlan>();
  const std::string width =
      rows.warp ? num(4 * rows.lanes_per_row) : "4 * static_cast<index_t>(blockDim.x)";
  return "for (index_t j4 = 4 * " + row_lane() + "; j4 < " + num(length) + "; j4 += " + width + ")";
}

// The loop over the row positions j this thread visits: the whole row of `length`, or
// the block's slice [j0, j1) when rows are split.
std::string KernelWriter::row_loop(int64_t length) const {
  if (row_runs(length)) return row_run_loop(length) + " for (index_t j = j4; j < j4 + 4; ++j)";
  const RowPlan& rows = plan<RowPlan>();
  const bool split = rows.split();
  const std::string first = split ? "j0 + static_cast<index_t>(threadIdx.x)" : row_lane();
  const std::string width =
      rows.warp ? num(rows.lanes_per_row) : "static_cast<index_t>(blockDim.x)";
  return "for (index_t j = " + first + "; j < " + (split ? std::string("j1") : num(length)) +
         "; j += " + width + ")";
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
  body << "  stitch_wait_for_predecessors();  // the previous kernel is done (PDL on sm_90)\n";
  body << visit_composition(
      schedule_.plan, [&](auto c, const auto& plan) { return c.prologue(*this, plan, written); });
  return body.str();
}

std::string KernelWriter::barrier_declaration() const {
  return "  unsigned int* barrier = reinterpret_cast<unsigned int*>(workspace + " +
         num(schedule_.barrier_offset) + ");\n";
}

Result<std::string> KernelWriter::write_body() {
  const std::vector<ir::ValueId>& written = written_;
  Result<std::string> stages = visit_composition(
      schedule_.plan, [&](auto c, const auto& plan) { return c.stages(*this, plan, written); });
  if (!stages.is_ok()) return stages.status();
  return prologue(written) + defs_.str() + stages.value();
}

}  // namespace stitch::emit

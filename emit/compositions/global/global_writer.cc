// The global composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// Thread, warp/column-mapped and global compositions: grid-stride stages by level,
// separated by grid barriers; a sliced reduction writes its partials a level early.
Result<std::string> Composition<GlobalPlan>::global_stages(KernelWriter& w,
                                                           const Written& written) {
  std::ostringstream stages;
  for (int level = 0; level < w.schedule_.levels; ++level) {
    if (level > 0) stages << "  stitch_grid_sync(barrier);\n";
    if (w.schedule_.levels > 1) stages << "  // Stage " << level << "\n";
    w.loop_offset_ = 0;
    if (w.vector().width == 4) {
      STITCH_ASSIGN_OR_RETURN(std::string code,
                              Composition<ThreadPlan>::vector_stages(w, written, "  "));
      stages << code;
      continue;
    }
    for (ir::ValueId id : written) {
      const ValueSchedule& value = w.schedule_.values.at(id);
      if (value.slices >= 2 && value.level - 1 == level) {
        STITCH_ASSIGN_OR_RETURN(std::string code, w.mapped_reduction_code(id, "  "));
        stages << "  // " << comment_name(w.producer(id)) << ": partials\n" << code;
      }
      if (value.level != level || value.epilogue_of != ir::kNoId) continue;
      if (emit::staged_tile(w.schedule_) && id == emit::staged_tile(w.schedule_)->staged_value) {
        // 4b.: this stage evaluates the staged stencil, tile by tile.
        STITCH_ASSIGN_OR_RETURN(std::string code,
                                Composition<StencilPlan>::stencil_tile_code(w, {id}));
        stages << code;
        continue;
      }
      STITCH_ASSIGN_OR_RETURN(std::string code, w.stage_code(id, "  "));
      stages << code;
    }
  }
  return stages.str();
}

// The thread, packing and global compositions' grid-stride indices.
std::string Composition<GlobalPlan>::stage_prologue(const KernelWriter& w) {
  std::ostringstream body;
  const char* qualifier = w.schedule_.as<PackingPlan>() ? "" : "const ";
  body << "  " << qualifier
       << "index_t tid = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
  body << "  " << qualifier << "index_t threads = static_cast<index_t>(gridDim.x) * blockDim.x;\n";
  if (w.schedule_.barrier_offset >= 0) body << w.barrier_declaration();
  if (w.vector().width == 4) {
    // The vector path's condition, the same for every thread: every pointer it reads
    // or writes four floats at a time is 16-byte aligned.
    std::string aligned;
    auto add = [&](ir::ValueId id) {
      aligned += (aligned.empty() ? "" : " && ") + std::string("stitch_aligned16(") +
                 w.pointer_name(id) + ")";
    };
    for (ir::ValueId id : w.schedule_.boundary.inputs) {
      if (w.vector().inputs.count(id) && w.defined_.count(id)) add(id);
    }
    for (ir::ValueId id : w.schedule_.boundary.outputs) add(id);
    body << "  const bool vec4 = " << aligned
         << ";  // 128-bit loads and stores, else one element per thread\n";
  }
  return body.str();
}

// The .cu header's explanation.
std::string Composition<GlobalPlan>::detail(const ir::Graph& /*graph*/,
                                            const GroupSchedule& schedule,
                                            const GlobalPlan& /*plan*/) {
  return " (" + num(schedule.levels) + " stages separated by grid barriers)";
}

}  // namespace stitch::emit

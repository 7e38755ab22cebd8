// The global composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <algorithm>
#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

namespace {

// What comes before stage `level` of a global kernel: a grid barrier, or around a run
// of stages on the last block (4c.) the arrival count that finds that block, a
// __syncthreads between the run's stages, and the run's end before the next barrier.
std::string before_stage(const GlobalPlan* plan, int level) {
  if (level == 0) return "";
  if (plan == nullptr || !plan->last_block_run() || level < plan->last_block_first ||
      level > plan->last_block_end) {
    return "  stitch_grid_sync(barrier);\n";
  }
  if (level == plan->last_block_end) return "    }\n  }\n  stitch_grid_sync(barrier);\n";
  if (level > plan->last_block_first) return "      __syncthreads();\n";
  std::ostringstream code;
  code << "  // Stages " << plan->last_block_first << " to " << plan->last_block_end - 1
       << " run on the last block to finish stage " << level - 1
       << " (its threads stride over their work), without grid barriers between them\n";
  code << "  {\n";
  code << "    unsigned int* arrival = reinterpret_cast<unsigned int*>(smem + "
       << plan->arrival_offset << ");\n";
  // Every thread's writes of the stage before thread 0's fence and arrival: the fence
  // orders only what its own thread (and, through the barrier, its block) wrote.
  code << "    __syncthreads();  // the block's writes of stage " << level - 1 << " are done\n";
  code << "    if (threadIdx.x == 0) {\n";
  code << "      __threadfence();  // this block's writes before its arrival\n";
  code << "      arrival[0] = atomicAdd(done, 1u);\n";
  code << "    }\n";
  code << "    __syncthreads();\n";
  code << "    if (arrival[0] == gridDim.x - 1) {\n";
  code << "      __threadfence();  // every other block's writes before this block's reads\n";
  code << "      const index_t tid = threadIdx.x;  // the block's threads alone\n";
  code << "      const index_t threads = blockDim.x;\n";
  return code.str();
}

}  // namespace

// Thread, warp/column-mapped and global compositions: grid-stride stages by level,
// separated by grid barriers; a sliced reduction writes its partials a level early.
Result<std::string> Composition<GlobalPlan>::global_stages(KernelWriter& w,
                                                           const Written& written) {
  std::ostringstream stages;
  const GlobalPlan* plan = w.schedule_.as<GlobalPlan>();
  const bool run = plan != nullptr && plan->last_block_run();
  for (int level = 0; level < w.schedule_.levels; ++level) {
    stages << before_stage(plan, level);
    const bool on_last_block =
        run && level >= plan->last_block_first && level < plan->last_block_end;
    const std::string indent = on_last_block ? "      " : "  ";
    if (w.schedule_.levels > 1) stages << indent << "// Stage " << level << "\n";
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
        STITCH_ASSIGN_OR_RETURN(std::string code, w.mapped_reduction_code(id, indent));
        stages << indent << "// " << comment_name(w.producer(id)) << ": partials\n" << code;
      }
      if (value.level != level || value.epilogue_of != ir::kNoId) continue;
      const StencilTile* tile = emit::staged_tile(w.schedule_);
      if (tile && std::count(tile->plane_reductions.begin(), tile->plane_reductions.end(), id)) {
        // 4d.: summed by the staged stencil's stage as it writes the planes, or from the
        // parts its tiles wrote.
        if (tile->whole_planes()) continue;
        STITCH_ASSIGN_OR_RETURN(std::string code,
                                Composition<StencilPlan>::plane_partials_code(w, id, indent));
        stages << code;
        continue;
      }
      if (tile && id == tile->staged_value) {
        // 4b.: this stage evaluates the staged stencil, tile by tile.
        STITCH_ASSIGN_OR_RETURN(std::string code,
                                Composition<StencilPlan>::stencil_tile_code(w, {id}));
        stages << code;
        continue;
      }
      STITCH_ASSIGN_OR_RETURN(std::string code, w.stage_code(id, indent));
      stages << code;
    }
  }
  if (run && plan->last_block_end == w.schedule_.levels) stages << "    }\n  }\n";
  return stages.str();
}

// The thread, packing and global compositions' grid-stride indices.
std::string Composition<GlobalPlan>::stage_prologue(const KernelWriter& w) {
  std::ostringstream body;
  const GlobalPlan* global = w.schedule_.as<GlobalPlan>();
  // A run from stage 1 to the last stage leaves no grid barrier, and so does a stage
  // folded into the one before it (4d.) when it was the second of two. Then stage 0
  // (a staged stencil's tiles) may be the grid's only loop, and it strides by tiles.
  const bool run_to_end =
      global && global->last_block_first == 1 && global->last_block_end == w.schedule_.levels;
  const char* qualifier = w.schedule_.as<PackingPlan>() ? ""
                          : run_to_end                  ? "[[maybe_unused]] const "
                                                        : "const ";
  body << "  " << qualifier
       << "index_t tid = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;\n";
  body << "  " << qualifier << "index_t threads = static_cast<index_t>(gridDim.x) * blockDim.x;\n";
  if (w.schedule_.barrier_offset >= 0 && w.schedule_.levels > 1 && !run_to_end) {
    body << w.barrier_declaration();
  }
  if (const GlobalPlan* plan = global; plan && plan->last_block_run()) {
    body << "  unsigned int* done = reinterpret_cast<unsigned int*>(workspace + "
         << plan->done_offset << ");  // blocks done with stage " << plan->last_block_first - 1
         << " (zeroed by the launcher with the barrier's)\n";
  }
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
                                            const GroupSchedule& schedule, const GlobalPlan& plan) {
  if (!plan.last_block_run()) {
    return " (" + num(schedule.levels) + " stages separated by grid barriers)";
  }
  const int barriers = schedule.levels - 1 - (plan.last_block_end - plan.last_block_first);
  return " (" + num(schedule.levels) + " stages; " +
         num(plan.last_block_end - plan.last_block_first) +
         " of them on the last block to arrive, " + num(barriers) + " grid barrier" +
         (barriers == 1 ? "" : "s") + ")";
}

}  // namespace stitch::emit

// The packing composition's writer (declared in ../composition_writers.h).
#include "emit/compositions/composition_writers.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// Packing: each independent part over its own range of blocks.
Result<std::string> CompositionWriter<PackingPlan>::packing_stages(
    KernelWriter& w, const std::vector<ir::ValueId>& written) {
  std::ostringstream stages;
  int64_t first = 0;
  for (size_t p = 0; p < w.plan<PackingPlan>().parts.size(); ++p) {
    std::set<ir::NodeId> part(w.plan<PackingPlan>().parts[p].begin(),
                              w.plan<PackingPlan>().parts[p].end());
    int64_t blocks = w.plan<PackingPlan>().part_grids[p];
    stages << "  // Part " << p << ": blocks [" << first << ", " << first + blocks << ")\n";
    // (no lower bound for the first part: blockIdx.x >= 0 is a warning in nvcc)
    stages << "  if (" << (first > 0 ? "blockIdx.x >= " + num(first) + " && " : std::string())
           << "blockIdx.x < " << first + blocks << ") {\n";
    stages << "    tid = static_cast<index_t>(blockIdx.x - " << first
           << ") * blockDim.x + threadIdx.x;\n";
    stages << "    threads = static_cast<index_t>(" << blocks << ") * blockDim.x;\n";
    w.loop_offset_ = 0;
    std::vector<ir::ValueId> part_written;
    for (ir::ValueId id : written) {
      if (part.count(w.graph_.value(id).producer) &&
          w.schedule_.values.at(id).epilogue_of == ir::kNoId) {
        part_written.push_back(id);
      }
    }
    if (w.vector().width == 4) {
      STITCH_ASSIGN_OR_RETURN(
          std::string code, CompositionWriter<ThreadPlan>::vector_stages(w, part_written, "    "));
      stages << code;
    } else {
      for (ir::ValueId id : part_written) {
        STITCH_ASSIGN_OR_RETURN(std::string code, w.stage_code(id, "    "));
        stages << code;
      }
    }
    stages << "  }\n";
    first += blocks;
  }
  return stages.str();
}

}  // namespace stitch::emit

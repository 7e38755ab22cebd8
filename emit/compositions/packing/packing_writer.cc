// The packing composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include <sstream>

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// Packing: each independent part over its own range of blocks.
Result<std::string> Composition<PackingPlan>::stages(KernelWriter& w, const PackingPlan& plan,
                                                     const Written& written) {
  std::ostringstream out;
  int64_t first = 0;
  for (size_t p = 0; p < plan.parts.size(); ++p) {
    std::set<ir::NodeId> part(plan.parts[p].begin(), plan.parts[p].end());
    int64_t blocks = plan.part_grids[p];
    out << "  // Part " << p << ": blocks [" << first << ", " << first + blocks << ")\n";
    // (no lower bound for the first part: blockIdx.x >= 0 is a warning in nvcc)
    out << "  if (" << (first > 0 ? "blockIdx.x >= " + num(first) + " && " : std::string())
        << "blockIdx.x < " << first + blocks << ") {\n";
    out << "    tid = static_cast<index_t>(blockIdx.x - " << first
        << ") * blockDim.x + threadIdx.x;\n";
    out << "    threads = static_cast<index_t>(" << blocks << ") * blockDim.x;\n";
    w.loop_offset_ = 0;
    std::vector<ir::ValueId> part_written;
    for (ir::ValueId id : written) {
      if (part.count(w.graph_.value(id).producer) &&
          w.schedule_.values.at(id).epilogue_of == ir::kNoId) {
        part_written.push_back(id);
      }
    }
    if (w.vector().width == 4) {
      STITCH_ASSIGN_OR_RETURN(std::string code,
                              Composition<ThreadPlan>::vector_stages(w, part_written, "    "));
      out << code;
    } else {
      for (ir::ValueId id : part_written) {
        STITCH_ASSIGN_OR_RETURN(std::string code, w.stage_code(id, "    "));
        out << code;
      }
    }
    out << "  }\n";
    first += blocks;
  }
  return out.str();
}

}  // namespace stitch::emit

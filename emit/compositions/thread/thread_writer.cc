// The thread composition's writer (declared in its plan header).
#include "emit/kernel_writer.h"

#include "emit/cuda_text.h"
#include "support/escape.h"

namespace stitch::emit {

// The thread composition's 128-bit path (VectorAccess::width): outputs of one
// element count whose inputs are read through the same index maps share one loop, so
// that a run's windows are loaded once and a value two outputs read is computed once
// per element (its compute_ cache). Each iteration loads the run's windows and
// registers, computes four consecutive elements of each output (element by element)
// and stores them with one 128-bit store per output; the scalar loop, when a pointer is
// not 16-byte aligned (`vec4`, the prologue), writes the same outputs element by
// element.
Result<std::string> Composition<ThreadPlan>::vector_stages(KernelWriter& w, const Written& written,
                                                           const std::string& indent) {
  using Maps = std::map<ir::ValueId, BroadcastSteps>;
  auto maps_of = [&](ir::ValueId id) {
    auto it = w.vector().maps.find(id);
    return it == w.vector().maps.end() ? Maps{} : it->second;
  };
  struct Loop {
    int64_t elements;
    Maps maps;
    std::vector<ir::ValueId> outputs;
  };
  std::vector<Loop> loops;
  for (ir::ValueId id : written) {
    const int64_t elements = elements_of(w.graph_, id);
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
      code += indent + "// " + comment_name(w.producer(id)) + " -> " +
              ir::to_string(w.graph_.value(id).type) + " (output)\n";
      STITCH_ASSIGN_OR_RETURN(std::string function, w.value_function(id));
      functions.push_back(function);
    }
    std::vector<std::string> loads;
    bool broadcast = false;
    for (const auto& [input, steps] : loop.maps) {
      if (!w.defined_.count(input)) continue;
      std::string index = "i";
      for (const auto& [operand, reader] : steps) {
        index = broadcast_index(reader, operand, index == "i" ? index : "(" + index + ")");
      }
      broadcast = broadcast || index != "i";
      loads.push_back(w.vector().inputs.count(input)
                          ? "w_" + w.names_.at(input) + " = *reinterpret_cast<const float4*>(" +
                                w.pointer_name(input) + " + " + index + ");"
                          : "u_" + w.names_.at(input) + " = " +
                                load(w.dtype(input), w.pointer_name(input) + "[" + index + "]") +
                                ";");
    }
    const int64_t runs = loop.elements / 4;
    code += indent + "if (vec4) {\n";
    code += indent + "  for (index_t q = " + w.loop_start(runs, /*per_warp=*/false) + "; q < " +
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
      code += indent + "    *reinterpret_cast<float4*>(" + w.pointer_name(loop.outputs[o]) +
              " + i) = o" + num(static_cast<int64_t>(o)) + ";\n";
    }
    code += indent + "  }\n";
    code += indent + "} else {\n";
    code += indent + "  for (index_t i = tid; i < " + num(loop.elements) + "; i += threads) {\n";
    for (size_t o = 0; o < loop.outputs.size(); ++o) {
      code += indent + "    " + w.pointer_name(loop.outputs[o]) +
              "[i] = " + store(w.dtype(loop.outputs[o]), functions[o] + "(i)") + ";\n";
    }
    code += indent + "  }\n";
    code += indent + "}\n";
  }
  return code;
}

}  // namespace stitch::emit

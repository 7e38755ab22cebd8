// Program: what `stitchopt run` executes, loaded from a stitchopt output directory.
//
// OUT/model.fused.onnx is imported (its shapes are static: stitchopt wrote them) and
// every node becomes one Step, in the model's topological order (the plan order):
//   - kKernel: a generated kernel of OUT/kernels/ (kernels.json names it): a fused node
//     whose "kernel" attribute has an entry there, or an unfused node with a single-op
//     kernel (its kernels.json entry's fused_nodes is exactly that node);
//   - kLibrary: a fused node of category "library" (cuBLASLt/cuDNN with its epilogue),
//     or an unfused MatMul/Gemm/Conv/pooling node the plan left to a library;
//   - kView: an unfused Reshape/Flatten/Squeeze/Unsqueeze/Identity: its output is its
//     input's bytes (the executor aliases the buffers; nothing runs);
//   - kHost: everything else (Opaque ops without a kernel, e.g. LSTM; a fused group the
//     emitter could not express): evaluated by the reference interpreter on the host,
//     its inputs and outputs copied across when the data lives on a device.
// Every step can also be evaluated by the reference interpreter: `body` holds the
// fused node's function body (or the single node) as a model of its own, with the
// step's inputs as graph inputs in order and its outputs as graph outputs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "artifact/kernels_json.h"
#include "artifact/library_epilogue.h"
#include "ir/core/graph.h"
#include "ir/core/precision.h"
#include "ir/core/status.h"
#include "ir/core/tensor.h"

namespace stitch::runtime {

enum class StepKind { kKernel, kLibrary, kView, kHost };
std::string_view step_kind_name(StepKind kind);  // "kernel", "library", "view", "host"

// One tensor a step reads or writes, as the step sees it.
struct StepTensor {
  ir::ValueId value = ir::kNoId;  // in Program::model.graph; kNoId: an omitted optional input
  std::string name;               // the value's name
  ir::TensorType type;            // static
  int64_t bytes = 0;
};

// The counters at the start of a cooperative kernel's workspace: the grid barrier's
// (emit/cuda/stitch_prelude.cuh, stitch_grid_sync) and the last-block run's arrivals.
inline constexpr int64_t kBarrierCounterBytes = artifact::kZeroedWorkspaceBytes;

struct Step {
  StepKind kind = StepKind::kHost;
  ir::NodeId node = ir::kNoId;  // in Program::model.graph
  std::string name;             // the node's name
  std::string op_type;          // "stitch_k3" for fused nodes, the ONNX op otherwise
  std::vector<StepTensor> inputs;
  std::vector<StepTensor> outputs;
  // kKernel: the kernels.json entry (artifact/kernels_json.h).
  std::string kernel;       // launcher "<kernel>_launch"
  std::string kernel_file;  // relative to Program::kernels_dir
  int64_t workspace_bytes = 0;
  // The charges of the schedule the kernel was emitted with, which the profile's
  // analytic estimate takes instead of building a schedule again.
  artifact::KernelCharges charges;
  // kKernel: a cooperative launch, whose grid barrier and last-block run count in the
  // first kBarrierCounterBytes of the workspace: the executor zeroes those (only those:
  // every other workspace byte is written before it is read) before each launch.
  bool grid_barrier = false;
  // kLibrary: the library (cuBLASLt for every GEMM, cuDNN for convolutions, pooling
  // and the GEMMs whose epilogue needs a cuDNN graph) and the epilogue the plan
  // decided (artifact/library_epilogue.h): a fused node's attributes, or
  // artifact::lone_call_epilogue of an unfused node; nullopt for a Gemm whose C is neither a
  // bias nor a residual.
  artifact::Library library = artifact::Library::kCublasLt;
  std::optional<artifact::LibraryEpilogue> epilogue;
  // The step as a model of its own (graph inputs = `inputs` in order, outputs =
  // `outputs`), for the reference interpreter and for library ops to read attributes
  // and the op sequence from.
  ir::Model body;
  std::vector<std::string> body_inputs;   // body graph input name per `inputs` entry
  std::vector<std::string> body_outputs;  // body graph output name per `outputs` entry
  std::string why;                        // kHost: why the step does not run on the device
  // The products of the step's float32 GEMMs and dense Convs (ir/core/precision.h):
  // the program's precision, except on a kHost step (the reference interpreter on the
  // host computes float32 products, on a GPU too). evaluate_step evaluates with it.
  ir::Precision products = ir::Precision::kFloat32;
};

struct Program {
  std::string out_dir;
  std::string kernels_dir;  // OUT/kernels (absent when compiled with --no-codegen)
  ir::Model model;          // model.fused.onnx as imported
  std::vector<Step> steps;  // plan order
  // Graph inputs that have no constant default, and graph outputs, by name.
  std::vector<StepTensor> inputs;
  std::vector<StepTensor> outputs;
  // Kernels kernels.json lists (every one is some step's kernel: load_program checks).
  int64_t listed_kernels = 0;
  // What the model was compiled for (artifact::OutputDirectory::precision).
  ir::Precision precision = ir::Precision::kFloat32;
  int64_t steps_of(StepKind kind) const;
};

// Loads OUT_DIR (model.fused.onnx, kernels/kernels.json). Both are read only as
// regular files reached without a symbolic link inside OUT_DIR, the model up to
// protobuf's 2 GiB, kernels.json up to 64 MiB and checked field by field
// (artifact/kernels_json.h). Errors name the file and what is wrong: kernels.json missing
// while the model says it was compiled with kernels, a field of the wrong type or
// range, written for another model (sha256), naming a source outside OUT/kernels or a
// kernel no node uses; an entry that does not match the node's inputs and outputs; a
// dynamic shape.
Result<Program> load_program(const std::string& out_dir);

// Random inputs for every Program::inputs entry, reproducible from `seed`: floats
// uniform in [-1, 1), integers in [0, bound) where bound is the smallest positive
// dim of any Gather data input the integer feeds (indices stay valid) or 2, bools
// 0/1.
std::map<std::string, ir::Tensor> random_inputs(const Program& program, uint64_t seed);
// The same draw for the graph inputs of `graph` without a constant default, in graph
// order, for a model that is not compiled (no fused bodies to look into): the inputs
// the compiler measures --precision on (driver/precision_check.h).
std::map<std::string, ir::Tensor> random_graph_inputs(const ir::Graph& graph, uint64_t seed);
// The graph inputs of `graph` without a constant default, in graph order, as a
// Program lists its inputs (bytes 0): what feeds for a model not compiled yet are
// checked against (runtime_stub/feeds.h).
std::vector<StepTensor> graph_input_tensors(const ir::Graph& graph);

}  // namespace stitch::runtime

namespace stitch::runtime {

// Evaluates `step`'s body with the reference interpreter, its products at
// step.products. `inputs` follows
// step.inputs (null for an omitted input); the result has one tensor per
// step.outputs entry (empty for an omitted output). Errors name the step.
// `products` overrides step.products (reference_outputs: float32).
Result<std::vector<ir::Tensor>> evaluate_step(const Step& step,
                                              const std::vector<const ir::Tensor*>& inputs,
                                              std::optional<ir::Precision> products = std::nullopt);

// The graph outputs of `program` on `inputs`, each step's body evaluated by the
// reference interpreter with float32 products (the ground truth whatever the
// program's precision) in plan order with every tensor kept by name (no
// memory plan, no backend): what `stitchopt run` compares a backend's outputs with.
Result<std::map<std::string, ir::Tensor>> reference_outputs(
    const Program& program, const std::map<std::string, ir::Tensor>& inputs);

}  // namespace stitch::runtime

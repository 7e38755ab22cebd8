#include "runtime_stub/program.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "artifact/fused_node_attributes.h"
#include "artifact/library_call.h"
#include "artifact/reader/output_directory.h"
#include "ir/core/analysis.h"
#include "ir/core/dtype.h"
#include "ir/core/op_registry.h"
#include "ir/reference/interpreter.h"
#include "support/escape.h"

namespace stitch::runtime {
namespace {

// A node of the registry's View kind (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity) whose output is its first input's bytes unchanged.
bool is_view(const ir::Node& node, const Step& step) {
  const ir::OpSchema* schema = ir::find_op_schema(node.domain, node.op_type);
  return schema != nullptr && schema->kind == ir::OpKind::kView && step.outputs.size() == 1 &&
         !step.inputs.empty() && step.inputs[0].value != ir::kNoId &&
         step.inputs[0].type.dtype == step.outputs[0].type.dtype &&
         step.inputs[0].bytes == step.outputs[0].bytes;
}

Result<StepTensor> step_tensor(const ir::Graph& graph, ir::ValueId id, const std::string& where) {
  StepTensor tensor;
  tensor.value = id;
  if (id == ir::kNoId) return tensor;
  const ir::Value& value = graph.value(id);
  tensor.name = value.name;
  tensor.type = value.type;
  tensor.bytes = value.type.num_bytes();
  if (tensor.bytes < 0) {
    return Status::invalid_input(where + ": value \"" + value.name + "\" has no static type (" +
                                 ir::to_string(value.type) +
                                 "); recompile the model with --input-shape");
  }
  return tensor;
}

// The single node `node` as a model: its present inputs become graph inputs (constants
// keep their data as defaults), its outputs graph outputs.
ir::Model single_node_model(const ir::Model& model, const ir::Node& node) {
  ir::Model body;
  body.ir_version = model.ir_version;
  body.opset_imports = model.opset_imports;
  ir::Graph& graph = body.graph;
  std::vector<ir::ValueId> inputs;
  for (ir::ValueId id : node.inputs) {
    if (id == ir::kNoId) {
      inputs.push_back(ir::kNoId);
      continue;
    }
    const ir::Value& value = model.graph.value(id);
    std::optional<ir::ValueId> existing = graph.find_value(value.name);
    if (existing) {  // the same value read twice (Mul(x, x))
      inputs.push_back(*existing);
      continue;
    }
    ir::ValueId copy = graph.add_value(value.name, value.type);
    graph.add_graph_input(copy);
    if (value.constant != nullptr) graph.value(copy).constant = value.constant;
    inputs.push_back(copy);
  }
  std::vector<ir::ValueId> outputs;
  for (ir::ValueId id : node.outputs) {
    if (id == ir::kNoId) {
      outputs.push_back(ir::kNoId);
      continue;
    }
    outputs.push_back(graph.add_value(model.graph.value(id).name, model.graph.value(id).type));
  }
  ir::NodeId copy = graph.add_node(node.op_type, inputs, outputs, node.domain, node.name);
  graph.node(copy).attributes = node.attributes;
  graph.node(copy).opset = node.opset;
  for (ir::ValueId id : outputs) {
    if (id != ir::kNoId) graph.add_graph_output(id);
  }
  return body;
}

// The entry's inputs/outputs must be the step's, in order, with the same dtypes and
// shapes: the launcher takes pointers in that order and nothing else checks it.
Status check_signature(const std::vector<artifact::TensorRecord>& listed,
                       const std::vector<StepTensor>& tensors, const char* key,
                       const std::string& where) {
  if (listed.size() != tensors.size()) {
    return Status::invalid_input(where + ": kernels.json lists " + std::to_string(listed.size()) +
                                 " " + key + ", the node has " + std::to_string(tensors.size()) +
                                 "; the output directory is inconsistent, recompile the model");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const StepTensor& tensor = tensors[i];
    if (listed[i].dtype != tensor.type.dtype || listed[i].shape != tensor.type.dims) {
      return Status::invalid_input(
          where + ": kernels.json's " + key + " " + std::to_string(i) + " is " +
          ir::to_string(ir::TensorType::make(listed[i].dtype, listed[i].shape)) +
          ", the node's \"" + tensor.name + "\" is " + ir::to_string(tensor.type) +
          "; recompile the model");
    }
  }
  return Status::ok();
}

}  // namespace

std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kKernel:
      return "kernel";
    case StepKind::kLibrary:
      return "library";
    case StepKind::kView:
      return "view";
    case StepKind::kHost:
      return "host";
  }
  return "?";
}

int64_t Program::steps_of(StepKind kind) const {
  return std::count_if(steps.begin(), steps.end(),
                       [kind](const Step& step) { return step.kind == kind; });
}

namespace {

// The kernels kernels.json lists, by name (the manifest's names are unique).
using KernelsByName = std::map<std::string, const artifact::KernelRecord*>;

// Single-op kernels by the outputs of the node they implement (value names are
// unique; kernels.json writes them through support::valid_utf8).
Result<std::map<std::string, std::string>> single_op_kernels(const KernelsByName& kernels,
                                                             const std::string& manifest_path) {
  std::map<std::string, std::string> single_op_kernel;
  auto add = [&](const std::string& output, const std::string& name) -> Status {
    if (!single_op_kernel.emplace(output, name).second) {
      return Status::invalid_input(manifest_path + ": two kernels write " + support::quote(output) +
                                   "; recompile the model");
    }
    return Status::ok();
  };
  for (const auto& [name, kernel] : kernels) {
    if (kernel->fused_nodes.size() != 1) continue;
    for (const artifact::TensorRecord& output : kernel->outputs) {
      STITCH_RETURN_IF_ERROR(add(output.name, name));
    }
    // The other unfused nodes that launch the same kernel (identical single ops).
    for (const artifact::SharedLaunchRecord& launch : kernel->shared_by) {
      for (const std::string& output : launch.outputs) STITCH_RETURN_IF_ERROR(add(output, name));
    }
  }
  return single_op_kernel;
}

// A fused node's step kind: a library call, its group's kernel when kernels.json
// lists it, else the host runs its body. Returns the kernel's name ("" for none).
std::string fused_step(const artifact::FusedNodeAttributes& attributes,
                       const KernelsByName& kernels, Step& step) {
  if (attributes.category == artifact::GroupCategory::kLibrary) {
    step.kind = StepKind::kLibrary;
    step.library = attributes.epilogue->library;
    step.epilogue = attributes.epilogue;
    return "";
  }
  if (!kernels.contains(attributes.kernel)) {
    step.kind = StepKind::kHost;
    step.why =
        "no generated kernel (the emitter could not express the group; see the "
        "report's warnings)";
    return "";
  }
  return attributes.kernel;
}

// Makes `step` a launch of the kernel kernels.json records as `entry`, taking what
// the compile decided for it (launch, workspace, charges), and checks that the
// kernel's signature is the node's.
Status bind_kernel(const artifact::KernelRecord& entry, const std::string& where, Step& step) {
  step.kind = StepKind::kKernel;
  step.kernel = entry.name;
  step.kernel_file = entry.file;
  step.workspace_bytes = entry.workspace_bytes;
  step.grid_barrier = entry.launch.cooperative;
  step.charges = entry.charges;
  STITCH_RETURN_IF_ERROR(check_signature(entry.inputs, step.inputs, "inputs", where));
  return check_signature(entry.outputs, step.outputs, "outputs", where);
}

// Step::products: the program's precision, float32 on the host.
void set_step_products(Program& program) {
  for (Step& step : program.steps) {
    step.products = step.kind == StepKind::kHost ? ir::Precision::kFloat32 : program.precision;
  }
}

}  // namespace

Result<Program> load_program(const std::string& out_dir) {
  Program program;
  program.out_dir = out_dir;
  STITCH_ASSIGN_OR_RETURN(artifact::OutputDirectory directory,
                          artifact::read_output_directory(out_dir));
  program.model = std::move(directory.model);
  program.kernels_dir = directory.kernels_dir;
  program.precision = directory.precision;
  const std::optional<artifact::KernelsArtifact> manifest = std::move(directory.kernels);
  const std::string& manifest_path = directory.kernels_path;
  const std::string& model_path = directory.model_path;
  KernelsByName kernels;
  if (manifest) {
    for (const artifact::KernelRecord& kernel : manifest->kernels)
      kernels.emplace(kernel.name, &kernel);
  }

  STITCH_ASSIGN_OR_RETURN(auto single_op_kernel, single_op_kernels(kernels, manifest_path));
  std::set<std::string> used_kernels;

  const ir::Graph& graph = program.model.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(graph));
  for (ir::NodeId id : order) {
    const ir::Node& node = graph.node(id);
    const std::string where = model_path + ": node " + node.display_name();
    Step step;
    step.node = id;
    step.name = node.name;
    step.op_type = node.op_type;
    for (ir::ValueId value : node.inputs) {
      STITCH_ASSIGN_OR_RETURN(StepTensor tensor, step_tensor(graph, value, where));
      step.inputs.push_back(std::move(tensor));
    }
    for (ir::ValueId value : node.outputs) {
      STITCH_ASSIGN_OR_RETURN(StepTensor tensor, step_tensor(graph, value, where));
      step.outputs.push_back(std::move(tensor));
    }
    std::string kernel;
    if (node.domain == "stitchopt") {
      STITCH_ASSIGN_OR_RETURN(step.body, artifact::fused_node_body(program.model, node));
      Result<artifact::FusedNodeAttributes> attributes =
          artifact::FusedNodeAttributes::from_node(node);
      if (!attributes.is_ok()) return attributes.status().with_prefix(model_path + ": ");
      kernel = fused_step(*attributes, kernels, step);
    } else {
      step.body = single_node_model(program.model, node);
      for (const StepTensor& output : step.outputs) {
        auto single = single_op_kernel.find(support::valid_utf8(output.name));
        if (output.value != ir::kNoId && single != single_op_kernel.end()) {
          kernel = single->second;
          break;
        }
      }
      if (!kernel.empty()) {
        // The kernel takes the node's boundary (emit/group_boundary.h): each value
        // read once, in slot order (Mul(x, x) launches with x alone), and writes the
        // outputs something reads.
        std::vector<StepTensor> distinct;
        for (StepTensor& input : step.inputs) {
          bool seen = std::any_of(distinct.begin(), distinct.end(), [&](const StepTensor& kept) {
            return kept.value == input.value;
          });
          if (input.value != ir::kNoId && !seen) distinct.push_back(std::move(input));
        }
        step.inputs = std::move(distinct);
        std::erase_if(step.outputs, [&](const StepTensor& output) {
          return output.value == ir::kNoId || (!graph.value(output.value).is_graph_output &&
                                               graph.value(output.value).users.empty());
        });
      } else if (is_view(node, step)) {
        step.kind = StepKind::kView;
      } else if (std::optional<artifact::Library> library = artifact::lone_call_library(node)) {
        step.kind = StepKind::kLibrary;
        step.library = *library;
        step.epilogue = artifact::lone_call_epilogue(graph, node);
      } else {
        step.kind = StepKind::kHost;
        step.why = node.op_type + " has neither a generated kernel nor a library implementation";
      }
    }
    const ir::Graph& body = step.body.graph;
    if (node.domain == "stitchopt") {  // the function's formal names, positionally
      for (ir::ValueId id : body.graph_inputs()) step.body_inputs.push_back(body.value(id).name);
      for (ir::ValueId id : body.graph_outputs()) step.body_outputs.push_back(body.value(id).name);
    } else {  // single_node_model keeps the value names
      for (const StepTensor& tensor : step.inputs) step.body_inputs.push_back(tensor.name);
      for (const StepTensor& tensor : step.outputs) step.body_outputs.push_back(tensor.name);
    }
    if (!kernel.empty()) {
      used_kernels.insert(kernel);
      STITCH_RETURN_IF_ERROR(bind_kernel(*kernels.at(kernel), where, step));
    }
    program.steps.push_back(std::move(step));
  }
  for (const auto& [name, entry] : kernels) {
    if (!used_kernels.count(name)) {
      return Status::invalid_input(manifest_path + ": kernel " + name + " is used by no node of " +
                                   model_path +
                                   "; the output directory is inconsistent, recompile the model");
    }
  }
  program.listed_kernels = static_cast<int64_t>(kernels.size());
  set_step_products(program);

  const std::string& where = model_path;
  for (ir::ValueId id : graph.graph_inputs()) {
    if (graph.value(id).constant != nullptr) continue;
    STITCH_ASSIGN_OR_RETURN(StepTensor tensor, step_tensor(graph, id, where));
    program.inputs.push_back(std::move(tensor));
  }
  for (ir::ValueId id : graph.graph_outputs()) {
    STITCH_ASSIGN_OR_RETURN(StepTensor tensor, step_tensor(graph, id, where));
    program.outputs.push_back(std::move(tensor));
  }
  return program;
}

namespace {

// The smallest axis a Gather indexes with `value` (or with what Cast/Reshape/... make
// of it), looking into fused nodes' bodies; 0 when no Gather reads it. A worklist, so a
// chain of thousands of Casts does not deepen the stack.
int64_t gather_bound(const ir::Graph& graph, ir::ValueId value,
                     const std::map<ir::NodeId, const Step*>& steps) {
  int64_t bound = 0;
  auto keep = [&bound](int64_t dim) {
    if (dim > 0 && (bound == 0 || dim < bound)) bound = dim;
  };
  // (graph, value) pairs still to follow: `graph` itself or a fused node's body.
  std::vector<std::pair<const ir::Graph*, ir::ValueId>> work = {{&graph, value}};
  std::set<std::pair<const ir::Graph*, ir::ValueId>> seen(work.begin(), work.end());
  auto follow = [&](const ir::Graph* where, ir::ValueId next) {
    if (seen.insert({where, next}).second) work.emplace_back(where, next);
  };
  while (!work.empty()) {
    auto [where, current] = work.back();
    work.pop_back();
    for (const ir::Use& use : where->value(current).users) {
      const ir::Node& user = where->node(use.node);
      auto step = where == &graph ? steps.find(use.node) : steps.end();
      if (user.op_type == "Gather" && use.slot == 1) {
        const ir::TensorType& data = where->value(user.inputs[0]).type;
        int64_t axis = user.int_attribute("axis", 0);
        if (axis < 0) axis += data.rank();
        keep(data.dims[static_cast<size_t>(axis)]);
      } else if (step != steps.end() && user.domain == "stitchopt") {
        const ir::Graph& body = step->second->body.graph;
        if (static_cast<size_t>(use.slot) < body.graph_inputs().size()) {
          follow(&body, body.graph_inputs()[static_cast<size_t>(use.slot)]);
        }
      } else if (user.op_type == "Cast" || user.op_type == "Reshape" ||
                 user.op_type == "Unsqueeze" || user.op_type == "Squeeze" ||
                 user.op_type == "Flatten" || user.op_type == "Identity") {
        for (ir::ValueId output : user.outputs) {
          if (output != ir::kNoId) follow(where, output);
        }
      }
    }
  }
  return bound;
}

}  // namespace

namespace {

// Draws every input of `inputs` (value, name, type) in order from one generator seeded
// with `seed`; `steps` lets gather_bound look into fused nodes' bodies.
std::map<std::string, ir::Tensor> draw_inputs(const ir::Graph& graph,
                                              const std::vector<StepTensor>& inputs,
                                              const std::map<ir::NodeId, const Step*>& steps,
                                              uint64_t seed) {
  std::map<std::string, ir::Tensor> drawn;
  std::mt19937_64 generator(seed);
  for (const StepTensor& input : inputs) {
    int64_t bound = gather_bound(graph, input.value, steps);
    if (bound == 0) bound = 2;
    int64_t count = input.type.num_elements();
    ir::DType dtype = input.type.dtype;
    if (ir::dtype_is_float(dtype)) {
      std::uniform_real_distribution<double> uniform(-1.0, 1.0);
      std::vector<double> values(static_cast<size_t>(count));
      for (double& value : values) value = uniform(generator);
      drawn[input.name] = ir::Tensor::from_doubles(dtype, input.type.dims, values);
    } else {
      std::uniform_int_distribution<int64_t> uniform(0, dtype == ir::DType::kBool ? 1 : bound - 1);
      ir::Tensor tensor;
      tensor.dtype = dtype;
      tensor.dims = input.type.dims;
      int64_t size = ir::dtype_size(dtype);
      tensor.bytes.resize(static_cast<size_t>(count * size));
      for (int64_t i = 0; i < count; ++i) {
        int64_t value = uniform(generator);
        // Little-endian: the low `size` bytes are the value.
        std::memcpy(tensor.bytes.data() + i * size, &value, static_cast<size_t>(size));
      }
      drawn[input.name] = std::move(tensor);
    }
  }
  return drawn;
}

}  // namespace

std::map<std::string, ir::Tensor> random_inputs(const Program& program, uint64_t seed) {
  std::map<ir::NodeId, const Step*> steps;
  for (const Step& step : program.steps) steps[step.node] = &step;
  return draw_inputs(program.model.graph, program.inputs, steps, seed);
}

std::vector<StepTensor> graph_input_tensors(const ir::Graph& graph) {
  std::vector<StepTensor> inputs;
  for (ir::ValueId id : graph.graph_inputs()) {
    const ir::Value& value = graph.value(id);
    if (value.constant != nullptr) continue;
    inputs.push_back({id, value.name, value.type, 0});
  }
  return inputs;
}

std::map<std::string, ir::Tensor> random_graph_inputs(const ir::Graph& graph, uint64_t seed) {
  return draw_inputs(graph, graph_input_tensors(graph), {}, seed);
}

}  // namespace stitch::runtime

namespace stitch::runtime {

Result<std::vector<ir::Tensor>> evaluate_step(const Step& step,
                                              const std::vector<const ir::Tensor*>& inputs,
                                              std::optional<ir::Precision> products) {
  STITCH_CHECK(inputs.size() == step.inputs.size())
      << "evaluate_step: " << inputs.size() << " inputs";
  std::map<std::string, ir::Tensor> body_inputs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != nullptr) body_inputs.try_emplace(step.body_inputs[i], *inputs[i]);
  }
  ir::EvaluationOptions options;
  options.products = products.value_or(step.products);
  Result<std::map<std::string, ir::Tensor>> evaluated =
      ir::evaluate_graph(step.body, body_inputs, options);
  if (!evaluated.is_ok()) {
    return evaluated.status().with_prefix("step \"" + step.name + "\" (" + step.op_type + "): ");
  }
  std::vector<ir::Tensor> outputs(step.outputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    if (step.outputs[i].value != ir::kNoId) {
      outputs[i] = std::move(evaluated->at(step.body_outputs[i]));
    }
  }
  return outputs;
}

Result<std::map<std::string, ir::Tensor>> reference_outputs(
    const Program& program, const std::map<std::string, ir::Tensor>& inputs) {
  const ir::Graph& graph = program.model.graph;
  std::map<ir::ValueId, ir::Tensor> values;
  for (const StepTensor& input : program.inputs) {
    auto found = inputs.find(input.name);
    if (found == inputs.end()) {
      return Status::invalid_input("graph input \"" + input.name + "\" is not given");
    }
    values[input.value] = found->second;
  }
  for (const Step& step : program.steps) {
    std::vector<const ir::Tensor*> step_inputs;
    for (const StepTensor& input : step.inputs) {
      if (input.value == ir::kNoId) {
        step_inputs.push_back(nullptr);
      } else if (const ir::Value& value = graph.value(input.value); value.constant != nullptr) {
        step_inputs.push_back(value.constant.get());
      } else {
        step_inputs.push_back(&values.at(input.value));
      }
    }
    STITCH_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs,
                            evaluate_step(step, step_inputs, ir::Precision::kFloat32));
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i].value != ir::kNoId) values[step.outputs[i].value] = std::move(outputs[i]);
    }
  }
  std::map<std::string, ir::Tensor> outputs;
  for (const StepTensor& output : program.outputs) {
    const ir::Value& value = graph.value(output.value);
    outputs[output.name] = value.constant != nullptr ? *value.constant : values.at(output.value);
  }
  return outputs;
}

}  // namespace stitch::runtime

#include "runtime_stub/executor.h"

#include <algorithm>
#include <cstring>

namespace stitch::runtime {
namespace {

constexpr int64_t kAlignment = 256;

int64_t align_up(int64_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

std::string step_name(const Step& step) {
  return "step \"" + step.name + "\" (" + step.op_type + ")";
}

// A step whose every output has no elements has nothing to compute: it is not launched
// (zero-size tensors are ordinary inputs, docs/semantics.md). A kernel step is still
// prepared, so its launcher is built and loaded like any other.
bool writes_nothing(const Step& step) {
  return std::all_of(step.outputs.begin(), step.outputs.end(), [](const StepTensor& output) {
    return output.value == ir::kNoId || output.type.num_elements() == 0;
  });
}

// A tensor of `tensor`'s type with room for its bytes, to download into.
ir::Tensor empty_tensor(const StepTensor& tensor) {
  ir::Tensor empty;
  empty.dtype = tensor.type.dtype;
  empty.dims = tensor.type.dims;
  empty.bytes.resize(static_cast<size_t>(tensor.bytes));
  return empty;
}

}  // namespace

Result<std::unique_ptr<Executor>> Executor::create(const Program& program, Backend& backend) {
  std::unique_ptr<Executor> executor(new Executor(program, backend));
  const ir::Graph& graph = program.model.graph;
  executor->value_address_.assign(static_cast<size_t>(graph.value_capacity()), nullptr);
  MemoryReport& memory = executor->memory_;

  // Weights: every constant a step reads, packed in one allocation.
  std::vector<ir::ValueId> weights;
  std::vector<int64_t> weight_offsets;
  std::vector<bool> is_weight(static_cast<size_t>(graph.value_capacity()), false);
  for (const Step& step : program.steps) {
    for (const StepTensor& input : step.inputs) {
      if (input.value == ir::kNoId || graph.value(input.value).constant == nullptr) continue;
      if (is_weight[static_cast<size_t>(input.value)]) continue;
      is_weight[static_cast<size_t>(input.value)] = true;
      weights.push_back(input.value);
      weight_offsets.push_back(memory.weight_bytes);
      memory.weight_bytes += align_up(input.bytes);
    }
  }
  std::vector<int64_t> input_offsets;
  for (const StepTensor& input : program.inputs) {
    input_offsets.push_back(memory.input_bytes);
    memory.input_bytes += align_up(input.bytes);
  }

  // Everything a step writes: lifetime from its step to the last reader (outputs: to
  // the end).
  const int32_t last = static_cast<int32_t>(program.steps.size());
  std::vector<int32_t> request_of(static_cast<size_t>(graph.value_capacity()), -1);
  std::vector<BufferRequest> requests;
  std::vector<ir::ValueId> request_values;
  for (size_t index = 0; index < program.steps.size(); ++index) {
    const Step& step = program.steps[index];
    for (const StepTensor& input : step.inputs) {
      if (input.value == ir::kNoId) continue;
      int32_t request = request_of[static_cast<size_t>(input.value)];
      if (request >= 0) {
        BufferRequest& buffer = requests[static_cast<size_t>(request)];
        buffer.last_step = std::max(buffer.last_step, static_cast<int32_t>(index));
      }
    }
    if (step.kind == StepKind::kView) {
      // The output is the input's buffer: reads of it extend the input's lifetime.
      int32_t request = request_of[static_cast<size_t>(step.inputs[0].value)];
      request_of[static_cast<size_t>(step.outputs[0].value)] = request;
      if (request >= 0 && graph.value(step.outputs[0].value).is_graph_output) {
        requests[static_cast<size_t>(request)].last_step = last;
      }
      continue;
    }
    for (const StepTensor& output : step.outputs) {
      if (output.value == ir::kNoId) continue;
      request_of[static_cast<size_t>(output.value)] = static_cast<int32_t>(requests.size());
      int32_t end = graph.value(output.value).is_graph_output ? last : static_cast<int32_t>(index);
      requests.push_back(BufferRequest{output.bytes, static_cast<int32_t>(index), end});
      request_values.push_back(output.value);
    }
  }
  MemoryPlan plan = plan_memory(requests, kAlignment);
  STITCH_CHECK(memory_plan_is_valid(requests, plan)) << "the memory plan overlaps live tensors";
  memory.arena_bytes = plan.arena_bytes;
  memory.naive_arena_bytes = plan.naive_bytes;
  memory.lower_bound_bytes = plan.lower_bound_bytes;

  // Prepare every step (the backend may place some on the host).
  for (const Step& step : program.steps) {
    Placement placement{false, step.why};
    if (step.kind == StepKind::kView) {
      placement = Placement{true, ""};
    } else if (step.kind == StepKind::kLibrary && writes_nothing(step)) {
      // A library call of an empty shape may not even be describable (cuBLASLt layouts
      // of 0 rows); there is nothing to call.
      placement = Placement{true, ""};
    } else if (step.kind != StepKind::kHost) {
      Result<Placement> prepared = backend.prepare(program, step);
      if (!prepared.is_ok()) return prepared.status().with_prefix(step_name(step) + ": ");
      placement = *prepared;
    }
    if (placement.on_backend) {
      if (step.kind == StepKind::kKernel) {
        memory.workspace_bytes = std::max(memory.workspace_bytes, step.workspace_bytes);
      }
      memory.scratch_bytes = std::max(memory.scratch_bytes, backend.scratch_bytes(step));
    }
    executor->placements_.push_back(std::move(placement));
  }

  STITCH_ASSIGN_OR_RETURN(executor->weights_, backend.allocate(memory.weight_bytes));
  STITCH_ASSIGN_OR_RETURN(executor->inputs_, backend.allocate(memory.input_bytes));
  STITCH_ASSIGN_OR_RETURN(executor->arena_, backend.allocate(memory.arena_bytes));
  STITCH_ASSIGN_OR_RETURN(executor->workspace_, backend.allocate(memory.workspace_bytes));
  STITCH_ASSIGN_OR_RETURN(executor->scratch_, backend.allocate(memory.scratch_bytes));

  auto at = [](void* base, int64_t offset) { return static_cast<char*>(base) + offset; };
  for (size_t i = 0; i < weights.size(); ++i) {
    void* address = at(executor->weights_, weight_offsets[i]);
    executor->value_address_[static_cast<size_t>(weights[i])] = address;
    const ir::Tensor& data = *graph.value(weights[i]).constant;
    STITCH_RETURN_IF_ERROR(
        backend.upload(address, data.bytes.data(), static_cast<int64_t>(data.bytes.size())));
  }
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    executor->value_address_[static_cast<size_t>(program.inputs[i].value)] =
        at(executor->inputs_, input_offsets[i]);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    executor->value_address_[static_cast<size_t>(request_values[i])] =
        at(executor->arena_, plan.offsets[i]);
  }
  for (const Step& step : program.steps) {  // in order: a view of a view
    if (step.kind != StepKind::kView) continue;
    executor->value_address_[static_cast<size_t>(step.outputs[0].value)] =
        executor->address(step.inputs[0].value);
  }
  return executor;
}

Executor::~Executor() {
  for (void* pointer : {weights_, inputs_, arena_, workspace_, scratch_}) {
    if (pointer != nullptr) backend_.release(pointer);
  }
}

void* Executor::address(ir::ValueId value) const {
  return value == ir::kNoId ? nullptr : value_address_[static_cast<size_t>(value)];
}

int64_t Executor::launches_per_run() const {
  int64_t launches = 0;
  for (size_t i = 0; i < placements_.size(); ++i) {
    const Step& step = program_.steps[i];
    launches += placements_[i].on_backend && step.kind != StepKind::kView && !writes_nothing(step);
  }
  return launches;
}

int64_t Executor::host_steps() const {
  return std::count_if(placements_.begin(), placements_.end(),
                       [](const Placement& placement) { return !placement.on_backend; });
}

Status Executor::upload_input(const StepTensor& input, const void* data, bool on_device) {
  if (on_device) return backend_.copy_on_device(address(input.value), data, input.bytes);
  return backend_.upload(address(input.value), data, input.bytes);
}

Status Executor::download_output(const StepTensor& output, void* destination, bool on_device) {
  if (output.bytes == 0) return Status::ok();  // no bytes (its planned buffer may be null)
  const void* source = address(output.value);
  if (source == nullptr) {  // an output that is a constant of the model
    const ir::Value& value = program_.model.graph.value(output.value);
    STITCH_CHECK(value.constant != nullptr)
        << "graph output \"" << output.name << "\" has no buffer";
    if (on_device) return backend_.upload(destination, value.constant->bytes.data(), output.bytes);
    std::memcpy(destination, value.constant->bytes.data(), static_cast<size_t>(output.bytes));
    return Status::ok();
  }
  if (on_device) return backend_.copy_on_device(destination, source, output.bytes);
  return backend_.download(destination, source, output.bytes);
}

Status Executor::set_inputs(const std::map<std::string, ir::Tensor>& inputs) {
  for (const StepTensor& input : program_.inputs) {
    auto found = inputs.find(input.name);
    if (found == inputs.end()) {
      return Status::invalid_input("graph input \"" + input.name + "\" (" +
                                   ir::to_string(input.type) + ") is not given");
    }
    const ir::Tensor& tensor = found->second;
    if (tensor.type() != input.type) {
      return Status::invalid_input("graph input \"" + input.name + "\" is " +
                                   ir::to_string(tensor.type()) + ", the model takes " +
                                   ir::to_string(input.type));
    }
    STITCH_RETURN_IF_ERROR(upload_input(input, tensor.bytes.data()));
  }
  for (const auto& entry : inputs) {
    const std::string& name = entry.first;
    bool known = std::any_of(program_.inputs.begin(), program_.inputs.end(),
                             [&](const StepTensor& input) { return input.name == name; });
    if (!known) return Status::invalid_input("\"" + name + "\" is not a graph input of the model");
  }
  return Status::ok();
}

Status Executor::run_on_host(const Step& step) {
  STITCH_RETURN_IF_ERROR(backend_.synchronize());
  std::vector<ir::Tensor> downloaded(step.inputs.size());
  std::vector<const ir::Tensor*> inputs;
  for (size_t i = 0; i < step.inputs.size(); ++i) {
    const StepTensor& input = step.inputs[i];
    if (input.value == ir::kNoId) {
      inputs.push_back(nullptr);
      continue;
    }
    downloaded[i] = empty_tensor(input);
    STITCH_RETURN_IF_ERROR(
        backend_.download(downloaded[i].bytes.data(), address(input.value), input.bytes));
    inputs.push_back(&downloaded[i]);
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::Tensor> outputs, evaluate_step(step, inputs));
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    const StepTensor& output = step.outputs[i];
    if (output.value == ir::kNoId) continue;
    if (static_cast<int64_t>(outputs[i].bytes.size()) != output.bytes) {
      return Status::internal(step_name(step) + ": the reference wrote " +
                              ir::to_string(outputs[i].type()) + " for \"" + output.name + "\", " +
                              ir::to_string(output.type) + " expected");
    }
    STITCH_RETURN_IF_ERROR(
        backend_.upload(address(output.value), outputs[i].bytes.data(), output.bytes));
  }
  return Status::ok();
}

Status Executor::enqueue_step(size_t index) {
  const Step& step = program_.steps[index];
  if (step.kind == StepKind::kView) return Status::ok();  // aliased in create()
  if (writes_nothing(step)) return Status::ok();
  if (!placements_[index].on_backend) return run_on_host(step);
  std::vector<const void*> inputs;
  std::vector<void*> outputs;
  for (const StepTensor& input : step.inputs) inputs.push_back(address(input.value));
  for (const StepTensor& output : step.outputs) outputs.push_back(address(output.value));
  if (step.kind == StepKind::kKernel && step.grid_barrier &&
      step.workspace_bytes >= kBarrierCounterBytes) {
    // The barrier counter alone (issue 16: zeroing the whole workspace, megabytes, before
    // every cooperative launch was a memset per launch).
    STITCH_RETURN_IF_ERROR(backend_.zero(workspace_, kBarrierCounterBytes));
  }
  return backend_
      .run(step, inputs, outputs, step.kind == StepKind::kKernel ? workspace_ : nullptr, scratch_)
      .with_prefix(step_name(step) + ": ");
}

Status Executor::enqueue() {
  for (size_t index = 0; index < program_.steps.size(); ++index) {
    STITCH_RETURN_IF_ERROR(enqueue_step(index));
  }
  return Status::ok();
}

Result<std::map<std::string, ir::Tensor>> Executor::outputs() {
  STITCH_RETURN_IF_ERROR(backend_.synchronize());
  std::map<std::string, ir::Tensor> outputs;
  for (const StepTensor& output : program_.outputs) {
    ir::Tensor tensor = empty_tensor(output);
    STITCH_RETURN_IF_ERROR(download_output(output, tensor.bytes.data()));
    outputs[output.name] = std::move(tensor);
  }
  return outputs;
}

Result<std::map<std::string, ir::Tensor>> Executor::run(
    const std::map<std::string, ir::Tensor>& inputs) {
  STITCH_RETURN_IF_ERROR(set_inputs(inputs));
  STITCH_RETURN_IF_ERROR(enqueue());
  return outputs();
}

}  // namespace stitch::runtime

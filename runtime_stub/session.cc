// A compiled model opened once and run many times (runtime_stub/session.h).
#include "runtime_stub/session.h"

#include <chrono>
#include <cstdint>
#include <set>
#include <string_view>
#include <utility>

#include "ir/core/dtype.h"
#include "runtime_stub/cuda_loader.h"
#include "runtime_stub/feeds.h"
#include "runtime_stub/host_backend.h"
#include "support/escape.h"

namespace stitch::runtime {
namespace {

Result<std::unique_ptr<Backend>> gpu_backend(const SessionOptions& options) {
  STITCH_ASSIGN_OR_RETURN(const CudaRuntimeApi* api, load_cuda_runtime());
  CudaBackendOptions gpu;
  gpu.device = options.gpu_device;
  gpu.kernels_library = options.kernels_library;
  gpu.verbose = options.verbose;
  return api->create_backend(gpu);
}

Result<std::unique_ptr<Backend>> make_backend(const SessionOptions& options) {
  switch (options.backend) {
    case SessionBackend::kGpu: {
      Result<std::unique_ptr<Backend>> gpu = gpu_backend(options);
      if (!gpu.is_ok()) {
        return Status::unavailable("the GPU backend was asked for, but there is no usable GPU (" +
                                   gpu.status().message() +
                                   "); ask for the emulated or the reference backend");
      }
      return gpu;
    }
    case SessionBackend::kAuto: {
      Result<std::unique_ptr<Backend>> gpu = gpu_backend(options);
      if (gpu.is_ok()) return gpu;
      return make_host_backend(HostBackendOptions{true, "", options.verbose, std::nullopt});
    }
    case SessionBackend::kEmulated:
      return make_host_backend(HostBackendOptions{true, "", options.verbose, std::nullopt});
    case SessionBackend::kReference:
      return make_host_backend(HostBackendOptions{false, "", options.verbose, std::nullopt});
  }
  return Status::internal("unknown session backend");
}

}  // namespace

Result<std::unique_ptr<Session>> Session::open(const std::string& out_dir,
                                               const SessionOptions& options) {
  std::unique_ptr<Session> session(new Session());
  STITCH_ASSIGN_OR_RETURN(Program program, load_program(out_dir));
  session->program_ = std::make_unique<Program>(std::move(program));
  STITCH_ASSIGN_OR_RETURN(session->backend_, make_backend(options));
  session->backend_name_ = session->backend_->device_name();
  STITCH_ASSIGN_OR_RETURN(session->executor_,
                          Executor::create(*session->program_, *session->backend_));
  if (!session->backend_->is_gpu()) {
    session->launch_note_ = "one call per step (CPU)";
  } else if (!options.cuda_graphs) {
    session->launch_note_ = "one launch per step: CUDA graphs were turned off";
  } else if (session->executor_->host_steps() > 0) {
    const std::vector<Placement>& placements = session->executor_->placements();
    for (size_t i = 0; i < placements.size(); ++i) {
      if (placements[i].on_backend) continue;
      session->launch_note_ =
          "one launch per step: step " + support::quote(session->program_->steps[i].name) +
          " runs on the host (" + placements[i].why + "), which a CUDA graph cannot hold";
      break;
    }
  } else {
    session->graphs_wanted_ = true;
  }
  return session;
}

Session::~Session() = default;

std::string Session::launch_mode() const {
  std::lock_guard<std::mutex> lock(run_mutex_);
  if (graph_ != nullptr) {
    return "CUDA graph replay (" + std::to_string(graph_steps_) + " steps in one graph)";
  }
  if (graphs_wanted_) return "CUDA graph capture at the first run";
  return launch_note_;
}

Status Session::check_memory(std::string_view kind, const std::string& name, const void* data,
                             Memory memory, size_t element_size) const {
  const bool aligned = element_size <= 1 || reinterpret_cast<uintptr_t>(data) % element_size == 0;
  if (aligned && memory == Memory::kHost && !backend_->is_gpu()) return Status::ok();
  // The texts only when there is an error: this runs for every tensor of every call.
  auto what = [&]() { return std::string(kind) + support::quote(name); };
  if (!aligned) {
    return Status::invalid_input(what() + ": its data is not aligned to its " +
                                 std::to_string(element_size) +
                                 "-byte elements; pass an aligned copy");
  }
  if (memory == Memory::kDevice && !backend_->is_gpu()) {
    return Status::invalid_input(what() + ": it is device memory, but this session runs on " +
                                 backend_name_ + "; pass host memory");
  }
  Status checked = memory == Memory::kHost ? backend_->check_host_memory(data)
                                           : backend_->check_device_memory(data);
  return checked.is_ok() ? checked : checked.with_prefix(what() + ": ");
}

Result<std::vector<const StepTensor*>> Session::checked_inputs(
    const std::vector<InputTensor>& inputs) const {
  std::vector<FeedType> feeds;
  for (const InputTensor& input : inputs) {
    if (ir::dtype_size(input.dtype) == 0) {
      return Status::invalid_input("input " + support::quote(input.name) +
                                   ": its dtype is none stitchopt runs (numbered as ONNX's "
                                   "TensorProto.DataType)");
    }
    feeds.push_back({input.name, input.dtype, input.shape});
  }
  // Names, dtypes and shapes first: then each input's bytes are its model input's.
  STITCH_ASSIGN_OR_RETURN(std::vector<const StepTensor*> matched,
                          match_feeds(*program_, feeds, "run"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (matched[i]->bytes == 0) continue;
    if (inputs[i].data == nullptr) {
      return Status::invalid_input("input " + support::quote(inputs[i].name) +
                                   ": its data is null");
    }
    STITCH_RETURN_IF_ERROR(check_memory("input ", inputs[i].name, inputs[i].data, inputs[i].memory,
                                        static_cast<size_t>(ir::dtype_size(inputs[i].dtype))));
  }
  return matched;
}

Result<std::vector<const StepTensor*>> Session::checked_outputs(
    const std::vector<OutputBuffer>& buffers) const {
  std::set<std::string> named;
  std::vector<const StepTensor*> outputs;  // per buffer
  for (const OutputBuffer& buffer : buffers) {
    const StepTensor* output = nullptr;
    for (const StepTensor& candidate : program_->outputs) {
      if (candidate.name == buffer.name) output = &candidate;
    }
    if (output == nullptr) {
      std::string names;
      for (const StepTensor& o : program_->outputs) {
        names += (names.empty() ? "" : ", ") + support::printable(o.name);
      }
      return Status::invalid_input("run: the model has no output " + support::quote(buffer.name) +
                                   " (its outputs: " + names + ")");
    }
    if (!named.insert(buffer.name).second) {
      return Status::invalid_input("run: two buffers for output " + support::quote(buffer.name));
    }
    outputs.push_back(output);
    if (static_cast<int64_t>(buffer.capacity_bytes) < output->bytes ||
        (buffer.data == nullptr && output->bytes > 0)) {
      return Status::invalid_input("run: the buffer for output " + support::quote(buffer.name) +
                                   " holds " + std::to_string(buffer.capacity_bytes) +
                                   " bytes; the output (" +
                                   array_text(output->type.dtype, output->type.dims) + ") needs " +
                                   std::to_string(output->bytes));
    }
    if (output->bytes > 0) {
      STITCH_RETURN_IF_ERROR(check_memory("run: the buffer for output ", buffer.name, buffer.data,
                                          buffer.memory,
                                          static_cast<size_t>(ir::dtype_size(output->type.dtype))));
    }
  }
  return outputs;
}

Status Session::enqueue_steps() {
  if (graph_ != nullptr) return graph_->launch();
  if (!graphs_wanted_) return executor_->enqueue();
  // The first run: capture the steps, then launch what was captured (capture runs
  // nothing). A failed capture falls back to one launch per step, for good.
  graphs_wanted_ = false;
  Result<std::unique_ptr<CapturedWork>> captured =
      backend_->capture([this]() { return executor_->enqueue(); });
  if (!captured.is_ok()) {
    launch_note_ = "one launch per step: " + captured.status().message();
    return executor_->enqueue();
  }
  graph_ = std::move(captured).value();
  graph_steps_ = executor_->launches_per_run();
  return graph_->launch();
}

Status Session::run_locked(const std::vector<InputTensor>& inputs,
                           const std::vector<const StepTensor*>& matched,
                           const std::vector<OutputBuffer>& buffers,
                           const std::vector<const StepTensor*>& outputs, void* cuda_stream) {
  if (cuda_stream != nullptr) STITCH_RETURN_IF_ERROR(backend_->wait_for_stream(cuda_stream));
  for (size_t i = 0; i < inputs.size(); ++i) {
    STITCH_RETURN_IF_ERROR(
        executor_->upload_input(*matched[i], inputs[i].data, inputs[i].memory == Memory::kDevice));
  }
  bool host_outputs = false;
  for (const OutputBuffer& buffer : buffers) host_outputs |= buffer.memory == Memory::kHost;
  const auto start = std::chrono::steady_clock::now();
  STITCH_RETURN_IF_ERROR(enqueue_steps());
  // Returning before the steps finished is for a caller's stream with device outputs.
  if (cuda_stream == nullptr || host_outputs) STITCH_RETURN_IF_ERROR(backend_->synchronize());
  last_run_times_.steps_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  for (size_t i = 0; i < buffers.size(); ++i) {
    STITCH_RETURN_IF_ERROR(executor_->download_output(*outputs[i], buffers[i].data,
                                                      buffers[i].memory == Memory::kDevice));
  }
  if (cuda_stream != nullptr) return backend_->signal_stream(cuda_stream);
  return backend_->synchronize();  // device outputs' copies
}

Status Session::run(const std::vector<InputTensor>& inputs,
                    const std::vector<OutputBuffer>& buffers, void* cuda_stream) {
  const auto start = std::chrono::steady_clock::now();
  if (cuda_stream != nullptr && !backend_->is_gpu()) {
    return Status::invalid_input("run: a CUDA stream was given, but this session runs on " +
                                 backend_name_ + "; pass none");
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<const StepTensor*> outputs, checked_outputs(buffers));
  STITCH_ASSIGN_OR_RETURN(std::vector<const StepTensor*> matched, checked_inputs(inputs));
  std::lock_guard<std::mutex> lock(run_mutex_);
  STITCH_RETURN_IF_ERROR(run_locked(inputs, matched, buffers, outputs, cuda_stream));
  last_run_times_.total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return Status::ok();
}

}  // namespace stitch::runtime

// A compiled model opened once and run many times (runtime_stub/session.h).
#include "runtime_stub/session.h"

#include <chrono>
#include <set>
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
  return session;
}

Session::~Session() = default;

Result<std::vector<const StepTensor*>> Session::checked_inputs(
    const std::vector<HostTensor>& inputs) const {
  std::vector<FeedType> feeds;
  for (const HostTensor& input : inputs) {
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
    if (inputs[i].data == nullptr && matched[i]->bytes > 0) {
      return Status::invalid_input("input " + support::quote(inputs[i].name) +
                                   ": its data is null");
    }
  }
  return matched;
}

Status Session::run_locked(const std::vector<HostTensor>& inputs,
                           const std::vector<const StepTensor*>& matched) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    STITCH_RETURN_IF_ERROR(executor_->upload_input(*matched[i], inputs[i].data));
  }
  const auto start = std::chrono::steady_clock::now();
  STITCH_RETURN_IF_ERROR(executor_->enqueue());
  STITCH_RETURN_IF_ERROR(backend_->synchronize());
  last_run_times_.steps_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return Status::ok();
}

Status Session::run(const std::vector<HostTensor>& inputs, const std::vector<HostBuffer>& buffers) {
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> named;
  std::vector<const StepTensor*> outputs;  // per buffer
  for (const HostBuffer& buffer : buffers) {
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
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<const StepTensor*> matched, checked_inputs(inputs));
  std::lock_guard<std::mutex> lock(run_mutex_);
  STITCH_RETURN_IF_ERROR(run_locked(inputs, matched));
  for (size_t i = 0; i < buffers.size(); ++i) {
    STITCH_RETURN_IF_ERROR(executor_->download_output(*outputs[i], buffers[i].data));
  }
  last_run_times_.total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return Status::ok();
}

}  // namespace stitch::runtime

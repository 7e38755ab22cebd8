// A compiled model opened once and run many times (runtime_stub/session.h).
#include "runtime_stub/session.h"

#include <chrono>
#include <cstring>
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

Result<std::map<std::string, ir::Tensor>> Session::checked_inputs(
    const std::vector<HostTensor>& inputs) const {
  std::vector<std::pair<std::string, ir::Tensor>> feeds;
  for (const HostTensor& input : inputs) {
    ir::Tensor tensor;
    tensor.dtype = input.dtype;
    tensor.dims = input.shape;
    const int64_t size = ir::dtype_size(input.dtype);
    int64_t elements = 1;
    for (int64_t dim : input.shape) {
      if (dim < 0 || (dim > 0 && elements > (int64_t{1} << 40) / dim)) {
        return Status::invalid_input("input " + support::quote(input.name) + ": shape " +
                                     ir::dims_text(input.shape) + " is not a tensor's shape");
      }
      elements *= dim;
    }
    if (size == 0) {
      return Status::invalid_input("input " + support::quote(input.name) +
                                   ": its dtype is none stitchopt runs (numbered as ONNX's "
                                   "TensorProto.DataType)");
    }
    if (input.data == nullptr && elements > 0) {
      return Status::invalid_input("input " + support::quote(input.name) + ": its data is null");
    }
    // The check of names, dtypes and shapes comes first (bind_feeds): copying the bytes
    // of a tensor of the wrong shape would read past the caller's buffer.
    feeds.emplace_back(input.name, std::move(tensor));
  }
  Result<std::map<std::string, ir::Tensor>> checked =
      bind_feeds(*program_, std::move(feeds), "run");
  if (!checked.is_ok()) return checked.status();
  std::map<std::string, ir::Tensor> bound = std::move(checked).value();
  for (const HostTensor& input : inputs) {
    ir::Tensor& tensor = bound.at(input.name);
    const size_t bytes = static_cast<size_t>(tensor.num_elements() * ir::dtype_size(tensor.dtype));
    tensor.bytes.assign(static_cast<const char*>(input.data), bytes);
  }
  return bound;
}

Result<std::map<std::string, ir::Tensor>> Session::run_locked(
    const std::map<std::string, ir::Tensor>& inputs) {
  STITCH_RETURN_IF_ERROR(executor_->set_inputs(inputs));
  const auto start = std::chrono::steady_clock::now();
  STITCH_RETURN_IF_ERROR(executor_->enqueue());
  STITCH_RETURN_IF_ERROR(backend_->synchronize());
  last_run_times_.steps_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return executor_->outputs();
}

Result<std::map<std::string, ir::Tensor>> Session::run(const std::vector<HostTensor>& inputs) {
  const auto start = std::chrono::steady_clock::now();
  STITCH_ASSIGN_OR_RETURN(auto bound, checked_inputs(inputs));
  std::lock_guard<std::mutex> lock(run_mutex_);
  Result<std::map<std::string, ir::Tensor>> outputs = run_locked(bound);
  last_run_times_.total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return outputs;
}

Status Session::run(const std::vector<HostTensor>& inputs, const std::vector<HostBuffer>& buffers) {
  const auto start = std::chrono::steady_clock::now();
  std::set<std::string> named;
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
    if (static_cast<int64_t>(buffer.capacity_bytes) < output->bytes ||
        (buffer.data == nullptr && output->bytes > 0)) {
      return Status::invalid_input("run: the buffer for output " + support::quote(buffer.name) +
                                   " holds " + std::to_string(buffer.capacity_bytes) +
                                   " bytes; the output (" +
                                   array_text(output->type.dtype, output->type.dims) + ") needs " +
                                   std::to_string(output->bytes));
    }
  }
  STITCH_ASSIGN_OR_RETURN(auto bound, checked_inputs(inputs));
  std::lock_guard<std::mutex> lock(run_mutex_);
  STITCH_ASSIGN_OR_RETURN(auto outputs, run_locked(bound));
  for (const HostBuffer& buffer : buffers) {
    const ir::Tensor& tensor = outputs.at(buffer.name);
    std::memcpy(buffer.data, tensor.bytes.data(), tensor.bytes.size());
  }
  last_run_times_.total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  return Status::ok();
}

}  // namespace stitch::runtime

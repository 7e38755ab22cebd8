// CudaBackend: runs the steps of a Program on one NVIDIA GPU (runtime_stub/backend.h),
// composing the units of libstitch_runtime_cuda.so:
//   cuda_memory.h          device buffers, copies and memsets on the backend's stream
//   cuda_kernel_library.h  the generated kernels (libstitch_kernels.so) and their launch
//   cublaslt_gemm.h        MatMul / Gemm library steps with their epilogue (cuBLASLt)
//   cudnn_conv.h           Conv library steps with their epilogue (cuDNN)
//   cudnn_pool.h           pooling library steps (cuDNN)
//   cuda_timing.h          CUDA event and CUDA Graph timing for stitchopt bench
//   cuda_graph.h           CUDA graph capture and replay (runtime::Session, bench --graph)
// cuda_library_step.h binds a library step's epilogue, as the plan decided it
// (Step::epilogue), to the step's inputs for the cuBLASLt and cuDNN calls.
//
// Everything is enqueued on one non-blocking stream. A library step the libraries do
// not implement is placed on the host with the reason (Placement::why); so is every
// cuDNN step when cuDNN does not load.
//
// Plans (descriptors, chosen algorithms, launcher pointers) are made in prepare() and
// keyed by the Step's address: run() must get the Step object prepare() got (the
// executor passes program.steps[i] to both).
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/analysis.h"
#include "ir/core/graph.h"
#include "runtime_stub/cuda/cublaslt_gemm.h"
#include "runtime_stub/cuda/cuda_graph.h"
#include "runtime_stub/cuda/cuda_kernel_library.h"
#include "runtime_stub/cuda/cuda_library_step.h"
#include "runtime_stub/cuda/cuda_memory.h"
#include "runtime_stub/cuda/cuda_plugin.h"
#include "runtime_stub/cuda/cuda_timing.h"
#include "runtime_stub/cuda/cudnn_conv.h"
#include "runtime_stub/cuda/cudnn_pool.h"

namespace stitch::runtime::cuda {
namespace {

class CudaBackend final : public Backend {
 public:
  static Result<std::unique_ptr<Backend>> create(const CudaBackendOptions& options);
  ~CudaBackend() override {
    if (stream_) static_cast<void>(cudaStreamSynchronize(stream_.get()));
  }

  std::string device_name() const override {
    return std::string(properties_.name) + " (sm_" + std::to_string(properties_.major) +
           std::to_string(properties_.minor) + ", " +
           std::to_string(properties_.multiProcessorCount) + " SMs)";
  }
  bool is_gpu() const override { return true; }

  Result<void*> allocate(int64_t bytes) override { return memory_->allocate(bytes); }
  void release(void* pointer) override { memory_->release(pointer); }
  Status upload(void* destination, const void* source, int64_t bytes) override {
    return memory_->upload(destination, source, bytes);
  }
  Status download(void* destination, const void* source, int64_t bytes) override {
    return memory_->download(destination, source, bytes);
  }
  Status zero(void* destination, int64_t bytes) override {
    return memory_->zero(destination, bytes);
  }

  Result<Placement> prepare(const Program& program, const Step& step) override;
  int64_t scratch_bytes(const Step& step) const override;
  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* workspace, void* scratch) override;
  Status synchronize() override {
    return cuda_status(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }

  Result<double> time(const std::function<Status()>& enqueue) override {
    return time_on_stream(stream_.get(), enqueue);
  }
  Result<std::vector<double>> time_graph(const std::function<Status()>& enqueue, int warmup,
                                         int iterations) override {
    return time_graph_on_stream(stream_.get(), enqueue, warmup, iterations);
  }

  Status check_device_memory(const void* pointer) const override;
  Status check_host_memory(const void* pointer) const override;
  Status copy_on_device(void* destination, const void* source, int64_t bytes) override {
    if (bytes == 0) return Status::ok();
    return cuda_status(cudaMemcpyAsync(destination, source, static_cast<size_t>(bytes),
                                       cudaMemcpyDeviceToDevice, stream_.get()),
                       "cudaMemcpyAsync(device to device, " + std::to_string(bytes) + " bytes)");
  }
  // One event each way, recorded anew per call (runs on a session are serialized).
  Status wait_for_stream(void* stream) override {
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaEventRecord(caller_ready_.get(), static_cast<cudaStream_t>(stream)),
                    "cudaEventRecord"));
    return cuda_status(cudaStreamWaitEvent(stream_.get(), caller_ready_.get(), 0),
                       "cudaStreamWaitEvent");
  }
  Status signal_stream(void* stream) override {
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaEventRecord(outputs_ready_.get(), stream_.get()), "cudaEventRecord"));
    return cuda_status(
        cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), outputs_ready_.get(), 0),
        "cudaStreamWaitEvent");
  }
  Result<std::unique_ptr<CapturedWork>> capture(const std::function<Status()>& enqueue) override {
    STITCH_ASSIGN_OR_RETURN(std::unique_ptr<CudaGraph> graph,
                            CudaGraph::capture(stream_.get(), enqueue));
    return std::unique_ptr<CapturedWork>(std::move(graph));
  }

 private:
  explicit CudaBackend(const CudaBackendOptions& options) : options_(options) {}

  CudaBackendOptions options_;
  cudaDeviceProp properties_{};
  // Declared first, destroyed last: the kernels' code must outlive the stream's work.
  std::unique_ptr<CudaKernelLibrary> kernels_;
  OwnedStream stream_;
  OwnedEvent caller_ready_;   // wait_for_stream
  OwnedEvent outputs_ready_;  // signal_stream
  std::unique_ptr<CudaMemory> memory_;
  std::unique_ptr<CublasLtGemm> gemm_;
  Owned<cudnnHandle_t, cudnnDestroy> cudnn_;
  Status cudnn_available_;  // ok when usable, else why cuDNN steps go to the host
  std::unique_ptr<CudnnConvolutions> convolutions_;  // null when cuDNN is unavailable
  std::unique_ptr<CudnnPooling> pools_;              // null when cuDNN is unavailable
};

Result<std::unique_ptr<Backend>> CudaBackend::create(const CudaBackendOptions& options) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return Status::unavailable(cuda_error_text("cudaGetDeviceCount", error) +
                               ": no usable CUDA device");
  }
  if (count == 0)
    return Status::unavailable("cudaGetDeviceCount: 0 devices: no usable CUDA device");
  if (options.device < 0 || options.device >= count) {
    return Status::invalid_input("CUDA device " + std::to_string(options.device) +
                                 " does not exist: this machine has " + std::to_string(count) +
                                 " (0 to " + std::to_string(count - 1) + ")");
  }
  std::unique_ptr<CudaBackend> backend(new CudaBackend(options));
  error = cudaSetDevice(options.device);
  if (error != cudaSuccess) {
    return Status::unavailable(cuda_error_text("cudaSetDevice", error) + ": device " +
                               std::to_string(options.device) + " is not usable");
  }
  STITCH_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&backend->properties_, options.device),
                                     "cudaGetDeviceProperties"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaStreamCreateWithFlags(backend->stream_.receive(), cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags"));
  for (OwnedEvent* event : {&backend->caller_ready_, &backend->outputs_ready_}) {
    STITCH_RETURN_IF_ERROR(cuda_status(
        cudaEventCreateWithFlags(event->receive(), cudaEventDisableTiming), "cudaEventCreate"));
  }
  backend->kernels_ = std::make_unique<CudaKernelLibrary>(options, backend->properties_);
  backend->memory_ = std::make_unique<CudaMemory>(backend->stream_.get());
  STITCH_ASSIGN_OR_RETURN(backend->gemm_,
                          CublasLtGemm::create(backend->stream_.get(), options.verbose));
  // cuDNN loads its sub-libraries (libcudnn_cnn/ops/engines) lazily; a missing one
  // only sends convolution and pooling steps to the host.
  cudnnStatus_t status = cudnnCreate(backend->cudnn_.receive());
  if (status != CUDNN_STATUS_SUCCESS) {
    backend->cudnn_.reset();
    backend->cudnn_available_ =
        refusal("cuDNN is unavailable (" + cudnn_error_text("cudnnCreate", status) + ")");
  } else if ((status = cudnnSetStream(backend->cudnn_.get(), backend->stream_.get())) !=
             CUDNN_STATUS_SUCCESS) {
    backend->cudnn_available_ =
        refusal("cuDNN is unavailable (" + cudnn_error_text("cudnnSetStream", status) + ")");
  }
  if (backend->cudnn_available_.is_ok()) {
    backend->convolutions_ = std::make_unique<CudnnConvolutions>(
        backend->cudnn_.get(), backend->stream_.get(), options.verbose);
    backend->pools_ = std::make_unique<CudnnPooling>(backend->cudnn_.get());
  }
  if (options.verbose && !backend->cudnn_available_.is_ok()) {
    std::cerr << "cuda: " << backend->cudnn_available_.message() << "\n";
  }
  return std::unique_ptr<Backend>(std::move(backend));
}

Status CudaBackend::check_device_memory(const void* pointer) const {
  cudaPointerAttributes attributes{};
  cudaError_t error = cudaPointerGetAttributes(&attributes, pointer);
  if (error != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return Status::invalid_input("it is not memory CUDA knows (" +
                                 cuda_error_text("cudaPointerGetAttributes", error) + ")");
  }
  if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
    return Status::invalid_input(
        "it is host memory, passed as device memory: pass it as host memory, or copy it to "
        "CUDA device " +
        std::to_string(options_.device));
  }
  if (attributes.device != options_.device) {
    return Status::invalid_input("it is on CUDA device " + std::to_string(attributes.device) +
                                 "; this session runs on device " +
                                 std::to_string(options_.device));
  }
  return Status::ok();
}

Status CudaBackend::check_host_memory(const void* pointer) const {
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, pointer) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return Status::ok();  // memory CUDA does not know is host memory
  }
  if (attributes.type == cudaMemoryTypeDevice) {
    return Status::invalid_input("it is device memory of CUDA device " +
                                 std::to_string(attributes.device) +
                                 ", passed as host memory: pass it as device memory");
  }
  return Status::ok();
}

Result<Placement> CudaBackend::prepare(const Program& program, const Step& step) {
  kernels_->forget(step);
  gemm_->forget(step);
  if (convolutions_) convolutions_->forget(step);
  if (pools_) pools_->forget(step);
  switch (step.kind) {
    case StepKind::kHost:
      return refuse(step.why);
    case StepKind::kView:
      return Placement{};  // the executor aliases the buffers
    case StepKind::kKernel:
      return kernels_->prepare(program, step);
    case StepKind::kLibrary:
      break;
  }
  switch (step.library) {
    case artifact::Library::kCublasLt:
      return gemm_->prepare(step);
    case artifact::Library::kCudnn:
      break;
  }
  if (!cudnn_available_.is_ok()) return refuse(cudnn_available_.message());
  const ir::Graph& body = step.body.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(body));
  const std::string op_type = order.empty() ? "" : body.node(order[0]).op_type;
  // A MatMul is a cuDNN call when its epilogue needs a cuDNN graph.
  if (op_type == "Conv" || op_type == "MatMul") return convolutions_->prepare(step);
  if (op_type == "MaxPool" || op_type == "AveragePool" || op_type == "GlobalAveragePool" ||
      op_type == "GlobalMaxPool") {
    return pools_->prepare(step);
  }
  return refuse("cuDNN: " + (op_type.empty() ? std::string("an empty body") : op_type) +
                " is not one of Conv, MatMul, MaxPool, AveragePool, GlobalAveragePool, " +
                "GlobalMaxPool");
}

int64_t CudaBackend::scratch_bytes(const Step& step) const {
  if (gemm_->planned(step)) return gemm_->scratch_bytes(step);
  if (convolutions_ && convolutions_->planned(step)) return convolutions_->scratch_bytes(step);
  return 0;
}

Status CudaBackend::run(const Step& step, const std::vector<const void*>& inputs,
                        const std::vector<void*>& outputs, void* workspace, void* scratch) {
  STITCH_CHECK(inputs.size() == step.inputs.size() && outputs.size() == step.outputs.size())
      << "step " << step.name << ": " << inputs.size() << " inputs and " << outputs.size()
      << " outputs for a step of " << step.inputs.size() << " and " << step.outputs.size();
  if (step.kind == StepKind::kView) return Status::ok();
  if (kernels_->planned(step)) {
    return kernels_->run(step, inputs, outputs, workspace, stream_.get());
  }
  if (gemm_->planned(step)) return gemm_->run(step, inputs, outputs, scratch);
  if (convolutions_ && convolutions_->planned(step)) {
    return convolutions_->run(step, inputs, outputs, scratch);
  }
  STITCH_CHECK(pools_ && pools_->planned(step))
      << "step " << step.name << " was not prepared on the GPU";
  return pools_->run(step, inputs, outputs);
}

}  // namespace

Result<std::unique_ptr<Backend>> create_cuda_backend(const CudaBackendOptions& options) {
  return CudaBackend::create(options);
}

}  // namespace stitch::runtime::cuda

// Backend: where the steps of a Program run. The executor (executor.h) owns the
// memory plan, the order and the host fallback; a backend moves bytes, runs the steps
// it accepted and times work.
//
// Two backends exist:
//   - HostBackend (host_backend.h): memory is host memory; kernel steps run either
//     through the reference interpreter (each step's body) or, emulated, as the
//     generated .cu compiled as C++ against emit/cuda/stitch_emu (the same code the
//     GPU runs, every CUDA thread a fiber); library steps through the reference
//     interpreter.
//   - CudaBackend (cuda/cuda_backend.cc, in libstitch_runtime_cuda.so, loaded with
//     dlopen by cuda_loader.h so that stitchopt starts where CUDA is absent): device
//     memory, one stream, generated kernels from libstitch_kernels.so (built from
//     OUT/kernels/ with nvcc), cuBLASLt for MatMul/Gemm (bias/residual/ReLU
//     epilogues, batched), cuDNN for Conv (bias, residual, ReLU) and pooling.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

// Work captured once and enqueued again as a whole (a CUDA graph on the GPU).
class CapturedWork {
 public:
  virtual ~CapturedWork() = default;
  // Enqueues the captured work on the backend's stream, with the addresses it had
  // when captured.
  virtual Status launch() = 0;
};

// Where the executor runs a step.
struct Placement {
  bool on_backend = true;  // false: the executor evaluates the body on the host
  std::string why;         // when !on_backend: one line, printed by `run -v` and in bench's table
};

class Backend {
 public:
  virtual ~Backend() = default;

  // "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)", "CPU: reference interpreter",
  // "CPU: emulated kernels".
  virtual std::string device_name() const = 0;
  virtual bool is_gpu() const = 0;

  // Memory: 256-byte aligned, uninitialized; null for 0 bytes.
  virtual Result<void*> allocate(int64_t bytes) = 0;
  virtual void release(void* pointer) = 0;
  // Synchronous copies between host memory and backend memory.
  virtual Status upload(void* destination, const void* source, int64_t bytes) = 0;
  virtual Status download(void* destination, const void* source, int64_t bytes) = 0;
  // Zeroes backend memory in stream order (before a kernel that needs a zeroed workspace).
  virtual Status zero(void* destination, int64_t bytes) = 0;

  // Called once per step before the first run, in plan order: loads or compiles what
  // the step needs (kernels, library descriptors). A step the backend cannot run
  // (e.g. a library op form it does not implement) is placed on the host.
  virtual Result<Placement> prepare(const Program& program, const Step& step) = 0;
  // Bytes of scratch a prepared step needs beyond its kernel workspace (e.g. cuBLASLt's
  // workspace); the executor passes max over steps.
  virtual int64_t scratch_bytes(const Step& step) const = 0;
  // Enqueues a prepared step. inputs/outputs follow step.inputs/step.outputs (null for
  // an omitted input). `workspace` holds step.workspace_bytes zeroed bytes (kernel
  // steps), `scratch` scratch_bytes(step) bytes.
  virtual Status run(const Step& step, const std::vector<const void*>& inputs,
                     const std::vector<void*>& outputs, void* workspace, void* scratch) = 0;
  // Waits for everything enqueued.
  virtual Status synchronize() = 0;

  // Milliseconds the work `enqueue` puts on the stream takes (CUDA events around it on
  // a GPU; the wall clock on the host, which runs synchronously).
  virtual Result<double> time(const std::function<Status()>& enqueue) = 0;
  // CUDA Graphs: captures `enqueue` once, replays it `warmup` times, then returns the
  // milliseconds of each of `iterations` timed replays. An error where graphs do not
  // exist (the host backend).
  virtual Result<std::vector<double>> time_graph(const std::function<Status()>& enqueue, int warmup,
                                                 int iterations) = 0;

  // The caller's device memory (runtime::Session's device tensors). Only a GPU backend
  // has any: the others answer Status::unavailable with why.
  //   check_device_memory: ok when `pointer` is device memory of this backend's device,
  //     else an invalid-input error that says where it is (host memory, another GPU);
  //   check_host_memory: ok unless `pointer` is device memory (passed as host memory;
  //     always ok on a backend without device memory);
  //   copy_on_device: enqueues a copy between two device buffers (not waited for);
  //   wait_for_stream: the work enqueued from now on waits for the work enqueued so far
  //     on `stream` (a caller's cudaStream_t);
  //   signal_stream: work enqueued later on `stream` waits for the work enqueued so far
  //     on the backend's stream.
  virtual Status check_device_memory(const void* pointer) const;
  virtual Status check_host_memory(const void* /*pointer*/) const { return Status::ok(); }
  virtual Status copy_on_device(void* destination, const void* source, int64_t bytes);
  virtual Status wait_for_stream(void* stream);
  virtual Status signal_stream(void* stream);
  // Captures the work `enqueue` puts on the stream without running it, for launch()
  // later (CUDA graph capture); Status::unavailable where nothing can be captured (the
  // host backends), and an error when `enqueue` does something capture forbids (a
  // synchronizing copy, a host step).
  virtual Result<std::unique_ptr<CapturedWork>> capture(const std::function<Status()>& enqueue);
};

}  // namespace stitch::runtime

// Session: a compiled model opened once and run many times on the caller's tensors,
// the core of the runtime library's APIs (the C ABI of api/stitchopt/runtime.h, the
// C++ wrapper of api/stitchopt/session.hpp; docs/runtime.md, "Using a compiled model
// from your program").
//
// open() does everything that does not depend on the inputs, once: it reads the
// output directory (artifact/reader/output_directory.h), picks the backend, prepares
// every step (the generated kernels built or loaded, library descriptors made), plans
// the memory and uploads the weights. run() then only uploads the inputs straight from
// the caller's memory, enqueues the steps and downloads the outputs straight into the
// caller's buffers (no intermediate copies).
//
// Backends, never silently (SessionBackend):
//   kAuto       the GPU when one is usable, else the generated kernels through the
//               CUDA emulation on the CPU (compiled with $CXX, else the compiler
//               stitchopt was built with); backend_name() says which
//   kGpu        the GPU, or an error that says why there is none
//   kEmulated   the generated kernels through the CUDA emulation
//   kReference  every step through the reference interpreter
//
// Concurrency: one session may be called from several threads; its runs are
// serialized (one arena and one workspace per session, as the memory plan is made
// for one run at a time). Sessions are independent of each other. Destroying a
// session releases everything it allocated.
//
// Errors are Status values; a failed call leaves the session usable. Inputs and
// outputs are host memory here; each input is named once with the exact dtype and
// shape of the model's input (runtime_stub/feeds.h's check and messages), and each
// output buffer is checked for its name, dtype, shape and size before anything runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "ir/core/tensor.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/executor.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

enum class SessionBackend { kAuto, kGpu, kEmulated, kReference };

struct SessionOptions {
  SessionBackend backend = SessionBackend::kAuto;
  int gpu_device = 0;
  std::string kernels_library;  // GPU: a prebuilt libstitch_kernels.so (else built with nvcc)
  bool verbose = false;         // print how kernels are built
};

// A caller's tensor in host memory: `data` holds the dtype's elements of `shape` in
// C order (the product of the dims times the element size, in bytes).
struct HostTensor {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

// A caller's buffer for an output: at least the output's bytes.
struct HostBuffer {
  std::string name;
  void* data = nullptr;
  size_t capacity_bytes = 0;
};

class Session {
 public:
  static Result<std::unique_ptr<Session>> open(const std::string& out_dir,
                                               const SessionOptions& options);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // The model's inputs (those without a constant default) and outputs, in the graph's
  // order, with their dtypes and shapes.
  const std::vector<StepTensor>& inputs() const { return program_->inputs; }
  const std::vector<StepTensor>& outputs() const { return program_->outputs; }
  // "CPU: emulated kernels", "CPU: reference interpreter", or the GPU's name.
  const std::string& backend_name() const { return backend_name_; }

  // Runs on `inputs` (every model input once) and writes the outputs `buffers` name
  // (any subset of the model's outputs, each once).
  Status run(const std::vector<HostTensor>& inputs, const std::vector<HostBuffer>& buffers);
  // The wall time of this session's last successful run: the whole call, and of it the
  // steps (enqueued until they finished); the rest is the call's own overhead (the
  // checks, the copies in and out). bench/session_overhead.cc reports it.
  struct RunTimes {
    double total_us = 0;
    double steps_us = 0;
  };
  RunTimes last_run_times() const {
    std::lock_guard<std::mutex> lock(run_mutex_);
    return last_run_times_;
  }

 private:
  Session() = default;
  // For each input, the model input it is, after the checks of names, dtypes, shapes
  // and data.
  Result<std::vector<const StepTensor*>> checked_inputs(
      const std::vector<HostTensor>& inputs) const;

  std::unique_ptr<Program> program_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Executor> executor_;  // refers to *program_ and *backend_
  // Uploads the inputs straight from the caller's memory and runs the steps until they
  // finished, timing them. The caller holds run_mutex_.
  Status run_locked(const std::vector<HostTensor>& inputs,
                    const std::vector<const StepTensor*>& matched);

  std::string backend_name_;
  mutable std::mutex run_mutex_;
  RunTimes last_run_times_;
};

}  // namespace stitch::runtime

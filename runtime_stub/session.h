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
// Memory: each input and output buffer is host memory or, on the GPU backend, device
// memory of the session's device (checked: a host pointer passed as device memory or
// a tensor on another GPU is an error). Device tensors are copied on the GPU, in
// stream order; host tensors are uploaded and downloaded synchronously.
//
// Streams: without a caller's stream, run() returns when the outputs are written.
// With one (a cudaStream_t), the run is ordered after the work already enqueued on it,
// work enqueued on it afterwards is ordered after the run's outputs, and run() returns
// once everything is enqueued when every output is device memory (it still waits for
// host outputs).
//
// CUDA graphs (on by default on the GPU): the first run captures the step list, the
// kernels and library calls between the input copies and the output copies, into one
// CUDA graph, and later runs replay it. The steps read and write only the session's
// own buffers, so the graph holds for any caller pointers and streams. Replay is off
// when a step runs on the host (a graph cannot hold one), when the capture fails (the
// reason is kept), and when SessionOptions::cuda_graphs is false. launch_mode() says
// which, and why.
//
// Concurrency: one session may be called from several threads; its runs are
// serialized (one arena and one workspace per session, as the memory plan is made
// for one run at a time). Sessions are independent of each other. Destroying a
// session releases everything it allocated.
//
// Errors are Status values; a failed call leaves the session usable. Each input is
// named once with the exact dtype and shape of the model's input (runtime_stub/
// feeds.h's check and messages), its data aligned to its element size; each output
// buffer is checked for its name and size before anything runs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
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
  bool cuda_graphs = true;      // GPU: capture the steps at the first run, replay after
  std::string kernels_library;  // GPU: a prebuilt libstitch_kernels.so (else built with nvcc)
  bool verbose = false;         // print how kernels are built
};

// Where a caller's tensor lives: host memory, or device memory of the session's GPU.
enum class Memory { kHost, kDevice };

// A caller's input: `data` holds the dtype's elements of `shape` in C order (the
// product of the dims times the element size, in bytes).
struct InputTensor {
  std::string name;
  ir::DType dtype = ir::DType::kUndefined;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  Memory memory = Memory::kHost;
};

// A caller's buffer for an output: at least the output's bytes.
struct OutputBuffer {
  std::string name;
  void* data = nullptr;
  size_t capacity_bytes = 0;
  Memory memory = Memory::kHost;
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
  // (any subset of the model's outputs, each once), ordered on `cuda_stream` when it
  // is not null (a cudaStream_t of the session's device; GPU backend only).
  Status run(const std::vector<InputTensor>& inputs, const std::vector<OutputBuffer>& buffers,
             void* cuda_stream = nullptr);
  // How the steps are launched: "CUDA graph replay (N steps in one graph)", "CUDA graph
  // capture at the first run", "one launch per step: <why not a graph>" or, on the
  // CPU, "one call per step (CPU)".
  std::string launch_mode() const;
  // The wall time of this session's last successful run: the whole call, and of it the
  // steps (enqueued until they finished); the rest is the call's own overhead (the
  // checks, the copies in and out). bench/session_overhead.cc reports it. A run that
  // returned before its steps finished (a caller's stream, device outputs) leaves
  // steps_us at the time it took to enqueue them.
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
      const std::vector<InputTensor>& inputs) const;
  // For each buffer, the model output it is, after the checks of names, sizes and data.
  Result<std::vector<const StepTensor*>> checked_outputs(
      const std::vector<OutputBuffer>& buffers) const;
  // Whether `data` (the caller's pointer for `kind` `name`, e.g. "input " "x") may be
  // used as `memory`, for elements of `element_size` bytes.
  Status check_memory(std::string_view kind, const std::string& name, const void* data,
                      Memory memory, size_t element_size) const;
  // Enqueues the steps: a launch of the captured graph, a capture at the first run,
  // or each step. The caller holds run_mutex_.
  Status enqueue_steps();

  std::unique_ptr<Program> program_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Executor> executor_;  // refers to *program_ and *backend_
  // Uploads the inputs straight from the caller's memory and runs the steps until they
  // finished, timing them. The caller holds run_mutex_.
  Status run_locked(const std::vector<InputTensor>& inputs,
                    const std::vector<const StepTensor*>& matched,
                    const std::vector<OutputBuffer>& buffers,
                    const std::vector<const StepTensor*>& outputs, void* cuda_stream);

  std::string backend_name_;
  bool graphs_wanted_ = false;           // GPU, asked for, no host step
  std::string launch_note_;              // why not a graph, when !graphs_wanted_
  std::unique_ptr<CapturedWork> graph_;  // after the first run's capture
  int64_t graph_steps_ = 0;
  mutable std::mutex run_mutex_;
  RunTimes last_run_times_;
};

}  // namespace stitch::runtime

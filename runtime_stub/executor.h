// Executor: runs a Program on a Backend.
//
// Device memory (Deep Fusion 3.2): weights (the model's constants) are uploaded once
// into one allocation; graph inputs get their own buffers; every tensor a step writes
// lives in one arena at the offset memory_plan.h assigns from its lifetime (the step
// that writes it to the last step that reads it; graph outputs to the end), so
// tensors whose lifetimes do not overlap share bytes. Kernel steps get one workspace
// of the largest size any kernel asks, zeroed before each launch (the kernel
// contract), library steps one scratch buffer.
//
// Steps run in plan order on the backend's stream. A step the backend declines
// (Placement::on_backend false) runs on the host: its inputs are downloaded, its body
// evaluated by the reference interpreter, its outputs uploaded — correct everywhere,
// and counted separately so a benchmark can say how much ran that way.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "ir/core/tensor.h"
#include "runtime_stub/backend.h"
#include "runtime_stub/memory_plan.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

struct MemoryReport {
  int64_t weight_bytes = 0;       // constants, uploaded once
  int64_t input_bytes = 0;        // graph inputs
  int64_t arena_bytes = 0;        // planned intermediates and outputs
  int64_t naive_arena_bytes = 0;  // the same tensors with one buffer each
  int64_t lower_bound_bytes = 0;  // most bytes live at one step
  int64_t workspace_bytes = 0;    // largest kernel workspace
  int64_t scratch_bytes = 0;      // largest library scratch
  int64_t peak_bytes() const {
    return weight_bytes + input_bytes + arena_bytes + workspace_bytes + scratch_bytes;
  }
  int64_t naive_peak_bytes() const {
    return weight_bytes + input_bytes + naive_arena_bytes + workspace_bytes + scratch_bytes;
  }
};

class Executor {
 public:
  // Plans memory, allocates it, uploads the weights and prepares every step.
  static Result<std::unique_ptr<Executor>> create(const Program& program, Backend& backend);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Uploads `inputs` (every Program::inputs entry by name, exact dtype and shape).
  Status set_inputs(const std::map<std::string, ir::Tensor>& inputs);
  // Copies one graph input from `data` (input.bytes bytes), for a caller that checked
  // the input's dtype and shape itself (runtime::Session: no intermediate tensor):
  // from host memory, waited for; or, `on_device`, from the backend's device memory,
  // enqueued on its stream.
  Status upload_input(const StepTensor& input, const void* data, bool on_device = false);
  // Enqueues every step (host steps synchronize around themselves).
  Status enqueue();
  // Enqueues step `index` only (per-kernel timing), after the steps before it ran.
  Status enqueue_step(size_t index);
  // Copies one graph output into `destination` (output.bytes bytes): into host memory
  // (precondition: the enqueued steps finished, Backend::synchronize); or, `on_device`,
  // into the backend's device memory, enqueued on its stream after the steps.
  Status download_output(const StepTensor& output, void* destination, bool on_device = false);
  // Waits, then downloads every graph output by name.
  Result<std::map<std::string, ir::Tensor>> outputs();
  // set_inputs, enqueue, outputs.
  Result<std::map<std::string, ir::Tensor>> run(const std::map<std::string, ir::Tensor>& inputs);

  const MemoryReport& memory() const { return memory_; }
  const std::vector<Placement>& placements() const { return placements_; }
  // Launches one enqueue() makes on the backend: kernel launches and library calls
  // (a library may launch more than one kernel inside a call; those are not seen).
  int64_t launches_per_run() const;
  int64_t host_steps() const;

 private:
  Executor(const Program& program, Backend& backend) : program_(program), backend_(backend) {}
  Status run_on_host(const Step& step);
  void* address(ir::ValueId value) const;

  const Program& program_;
  Backend& backend_;
  MemoryReport memory_;
  std::vector<Placement> placements_;
  void* weights_ = nullptr;
  void* inputs_ = nullptr;
  void* arena_ = nullptr;
  void* workspace_ = nullptr;
  void* scratch_ = nullptr;
  std::vector<void*> value_address_;  // per value id; null when not planned
};

}  // namespace stitch::runtime

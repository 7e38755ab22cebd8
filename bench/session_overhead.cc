// The host time one Session::run spends beyond the steps themselves (issue 38: the
// runtime library's per-call overhead, target under 10 us). For each output directory
// given, on the backend named (reference, emulated, or gpu: CUDA graph replay), it
// calls runtime::Session::run with host tensors and output buffers, as the C ABI does, and
// reads the session's own split of each call (Session::last_run_times): the steps,
// enqueued until they finished, and the rest, the call's overhead (the checks of
// names, dtypes, shapes and buffers, and the copies in and out). Per call, the
// median of --iterations after --warmup:
//
//   session_overhead --backend emulated out/mlp out/bert
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime_stub/program.h"
#include "runtime_stub/session.h"

namespace {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

int bench(const std::string& out_dir, const std::string& backend, int warmup, int iterations) {
  using namespace stitch;
  runtime::SessionOptions options;
  if (backend == "gpu") {
    options.backend = runtime::SessionBackend::kGpu;
  } else if (backend == "reference") {
    options.backend = runtime::SessionBackend::kReference;
  } else if (backend == "emulated") {
    options.backend = runtime::SessionBackend::kEmulated;
  } else {
    std::fprintf(stderr, "session_overhead: --backend %s is none of emulated, reference, gpu\n",
                 backend.c_str());
    return 2;
  }
  Result<std::unique_ptr<runtime::Session>> session = runtime::Session::open(out_dir, options);
  if (!session.is_ok()) {
    std::fprintf(stderr, "%s\n", session.status().message().c_str());
    return 2;
  }
  Result<runtime::Program> program = runtime::load_program(out_dir);
  if (!program.is_ok()) return 2;
  const std::map<std::string, ir::Tensor> inputs = runtime::random_inputs(*program, 0);
  std::vector<runtime::InputTensor> tensors;
  int64_t input_bytes = 0, output_bytes = 0;
  for (const auto& [name, tensor] : inputs) {
    tensors.push_back({name, tensor.dtype, tensor.dims, tensor.bytes.data()});
    input_bytes += static_cast<int64_t>(tensor.bytes.size());
  }
  std::vector<std::vector<char>> storage;
  std::vector<runtime::OutputBuffer> buffers;
  for (const runtime::StepTensor& output : (*session)->outputs()) {
    storage.emplace_back(static_cast<size_t>(output.bytes));
    buffers.push_back({output.name, storage.back().data(), storage.back().size()});
    output_bytes += output.bytes;
  }
  std::vector<double> totals, steps, overheads;
  for (int i = 0; i < warmup + iterations; ++i) {
    if (!(*session)->run(tensors, buffers).is_ok()) return 1;
    if (i < warmup) continue;
    const runtime::Session::RunTimes times = (*session)->last_run_times();
    totals.push_back(times.total_us);
    steps.push_back(times.steps_us);
    overheads.push_back(times.total_us - times.steps_us);
  }
  std::printf(
      "%-28s %-9s run %10.1f us  steps %10.1f us  overhead %6.1f us (%5.2f%%)  "
      "inputs %lld B, outputs %lld B; %s\n",
      out_dir.c_str(), backend.c_str(), median(totals), median(steps), median(overheads),
      100.0 * median(overheads) / median(totals), static_cast<long long>(input_bytes),
      static_cast<long long>(output_bytes), (*session)->launch_mode().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string backend = "emulated";
  int warmup = 5, iterations = 50;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--backend" && i + 1 < argc) {
      backend = argv[++i];
    } else if (arg == "--iterations" && i + 1 < argc) {
      iterations = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--warmup" && i + 1 < argc) {
      warmup = std::max(0, std::atoi(argv[++i]));
    } else {
      dirs.push_back(arg);
    }
  }
  if (dirs.empty()) {
    std::fprintf(stderr,
                 "usage: session_overhead [--backend emulated|reference|gpu] [--iterations N] "
                 "[--warmup N] OUT_DIR...\n");
    return 2;
  }
  int status = 0;
  for (const std::string& dir : dirs)
    status = std::max(status, bench(dir, backend, warmup, iterations));
  return status;
}

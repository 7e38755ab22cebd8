#include "cli/runtime_commands.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "cli/compiled_output.h"
#include "cli/exit_codes.h"
#include "cli/output_dir.h"
#include "cli/run_data.h"
#include "cost_model/device_profile.h"
#include "driver/calibrated_profile.h"
#include "ir/core/dtype.h"
#include "profiling/profile.h"
#include "runtime_stub/cuda_loader.h"
#include "runtime_stub/executor.h"
#include "runtime_stub/host_backend.h"
#include "runtime_stub/program.h"
#include "support/escape.h"
#include "support/private_files.h"

namespace stitch::cli {
namespace {

// Parses the command line; an exit code when the command must stop (help, bad usage).
std::optional<int> parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? kExitOk : kExitBadInput;
  }
  return std::nullopt;
}

// --seed: a decimal integer that fits 64 bits unsigned (CLI11 would wrap -1 and
// take 10^23 as some other number).
CLI::Validator seed_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        errno = 0;
        char* end = nullptr;
        const bool digits =
            !text.empty() && text.size() <= 20 &&
            std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
        if (digits) std::strtoull(text.c_str(), &end, 10);
        if (!digits || errno == ERANGE) {
          return "\"" + text + "\" is not a seed: use an integer from 0 to 18446744073709551615";
        }
        return "";
      },
      "");
}

std::string mebibytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// max |a - b| / max(|b|, 1) over the elements; integers and bools exact (0 or 1).
// `normwise` (a reduced --precision): max |a - b| / max(max |b|, 1), the form the
// precision's tolerance is stated in (docs/precision.md): a TF32 product's error
// scales with its operands, not with the (possibly cancelled) result.
double relative_error(const ir::Tensor& actual, const ir::Tensor& expected, bool normwise) {
  double worst = 0, largest = 1;
  bool exact = !ir::dtype_is_float(expected.dtype);
  for (int64_t i = 0; i < expected.num_elements(); ++i) {
    if (exact) {
      if (actual.int_at(i) != expected.int_at(i)) return 1;
      continue;
    }
    double a = actual.float_at(i);
    double b = expected.float_at(i);
    if (std::isnan(a) != std::isnan(b)) return INFINITY;
    if (std::isnan(b)) continue;
    if (std::isinf(b) || std::isinf(a)) {
      if (a != b) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::fabs(a - b) / (normwise ? 1.0 : std::max(std::fabs(b), 1.0)));
    largest = std::max(largest, std::fabs(b));
  }
  return normwise ? worst / largest : worst;
}

// Against the float32 reference: a float32 output within its precision's tolerance
// (ir::precision_tolerance: 1e-5 for fp32 and fp32x3, 5e-3 for tf32).
double tolerance(ir::DType dtype, ir::Precision precision) {
  if (dtype == ir::DType::kFloat16 || dtype == ir::DType::kBFloat16) return 1e-2;
  if (ir::dtype_is_float(dtype)) return ir::precision_tolerance(precision);
  return 0;
}

// The GPU backend, or why there is none.
Result<std::unique_ptr<runtime::Backend>> gpu_backend(const runtime::CudaBackendOptions& options) {
  STITCH_ASSIGN_OR_RETURN(const runtime::CudaRuntimeApi* api, runtime::load_cuda_runtime());
  return api->create_backend(options);
}

void print_program(const runtime::Program& program, const runtime::Executor& executor,
                   const runtime::Backend& backend, bool verbose) {
  const runtime::MemoryReport& memory = executor.memory();
  std::printf("device: %s\n", backend.device_name().c_str());
  std::printf(
      "steps: %zu (%lld kernels, %lld library calls, %lld views, %lld host ops); launches "
      "per run: %lld; on the host: %lld\n",
      program.steps.size(), static_cast<long long>(program.steps_of(runtime::StepKind::kKernel)),
      static_cast<long long>(program.steps_of(runtime::StepKind::kLibrary)),
      static_cast<long long>(program.steps_of(runtime::StepKind::kView)),
      static_cast<long long>(program.steps_of(runtime::StepKind::kHost)),
      static_cast<long long>(executor.launches_per_run()),
      static_cast<long long>(executor.host_steps()));
  std::printf(
      "memory: peak %s (weights %s, inputs %s, intermediates %s, workspace %s, scratch %s);"
      " one buffer per tensor: %s\n",
      mebibytes(memory.peak_bytes()).c_str(), mebibytes(memory.weight_bytes).c_str(),
      mebibytes(memory.input_bytes).c_str(), mebibytes(memory.arena_bytes).c_str(),
      mebibytes(memory.workspace_bytes).c_str(), mebibytes(memory.scratch_bytes).c_str(),
      mebibytes(memory.naive_peak_bytes()).c_str());
  std::printf(
      "intermediates: %lld bytes planned by lifetime, %lld with one buffer each (%.2fx), "
      "lower bound %lld\n",
      static_cast<long long>(memory.arena_bytes), static_cast<long long>(memory.naive_arena_bytes),
      memory.arena_bytes > 0
          ? static_cast<double>(memory.naive_arena_bytes) / static_cast<double>(memory.arena_bytes)
          : 1.0,
      static_cast<long long>(memory.lower_bound_bytes));
  if (!verbose) return;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const runtime::Step& step = program.steps[i];
    const runtime::Placement& placement = executor.placements()[i];
    std::printf("  %-8s %-28s %s%s\n", std::string(runtime::step_kind_name(step.kind)).c_str(),
                support::printable(step.op_type).c_str(), support::printable(step.name).c_str(),
                placement.on_backend ? "" : ("  [host: " + placement.why + "]").c_str());
  }
}

// Runs `inputs` and checks every output against the reference interpreter; saves the
// outputs to `save_path` when one is given.
int check_against_reference(const runtime::Program& program, runtime::Executor& executor,
                            const std::map<std::string, ir::Tensor>& inputs,
                            const std::string& save_path) {
  Result<std::map<std::string, ir::Tensor>> outputs = executor.run(inputs);
  if (!outputs.is_ok()) return report_error(outputs.status());
  if (!save_path.empty()) {
    Status saved = save_outputs(program, *outputs, save_path);
    if (!saved.is_ok()) return report_error(saved);
    std::printf("outputs saved to %s\n", support::printable(save_path).c_str());
  }
  Result<std::map<std::string, ir::Tensor>> expected = runtime::reference_outputs(program, inputs);
  if (!expected.is_ok()) return report_error(expected.status());
  bool all_match = true;
  for (const runtime::StepTensor& output : program.outputs) {
    double error = relative_error(outputs->at(output.name), expected->at(output.name),
                                  /*normwise=*/program.precision != ir::Precision::kFloat32 &&
                                      program.precision != ir::Precision::kFloat32x3);
    double limit = tolerance(output.type.dtype, program.precision);
    bool match = error <= limit;
    all_match = all_match && match;
    std::printf("output %-24s %-20s max rel err %.3g (limit %g) %s\n",
                support::printable(output.name).c_str(), ir::to_string(output.type).c_str(), error,
                limit, match ? "ok" : "MISMATCH");
  }
  if (!all_match) {
    std::fprintf(stderr, "stitchopt: error: outputs differ from the reference interpreter\n");
    return kExitGateFailed;
  }
  std::printf("all %zu outputs match the reference interpreter\n", program.outputs.size());
  return kExitOk;
}

// Runs each test data set and checks its expected outputs (cli/run_data.h gives the
// tolerances).
int check_test_data(runtime::Executor& executor, const std::vector<TestDataSet>& sets) {
  int64_t failed = 0;
  for (const TestDataSet& set : sets) {
    Result<std::map<std::string, ir::Tensor>> outputs = executor.run(set.inputs);
    if (!outputs.is_ok()) return report_error(outputs.status());
    std::printf("test data %s\n", support::printable(set.directory).c_str());
    for (const auto& [name, expected] : set.expected) {
      const Mismatch mismatch = compare_to_expected(outputs->at(name), expected);
      if (mismatch.elements == 0) {
        std::printf("  output %-24s max abs err %.3g ok\n", support::printable(name).c_str(),
                    mismatch.max_abs_error);
        continue;
      }
      ++failed;
      std::printf(
          "  output %-24s %lld of %lld elements out of tolerance; element %lld is %.9g, "
          "expected %.9g MISMATCH\n",
          support::printable(name).c_str(), static_cast<long long>(mismatch.elements),
          static_cast<long long>(expected.num_elements()), static_cast<long long>(mismatch.first),
          mismatch.got, mismatch.expected);
    }
  }
  if (failed > 0) {
    std::fprintf(stderr,
                 "stitchopt: error: %lld outputs differ from the test data's expected ones\n",
                 static_cast<long long>(failed));
    return kExitGateFailed;
  }
  std::printf("all outputs of %zu test data set%s match\n", sets.size(),
              sets.size() == 1 ? "" : "s");
  return kExitOk;
}

// A run that checks no generated kernel must say so, and one that should run them all
// (--emulate, a GPU) fails when any is left out.
Status check_kernels_run(const runtime::Program& program, const runtime::Executor& executor,
                         const runtime::Backend& backend, bool backend_runs_kernels,
                         const std::string& out_dir) {
  std::set<std::string> placed;
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const runtime::Step& step = program.steps[i];
    if (step.kind == runtime::StepKind::kKernel && executor.placements()[i].on_backend) {
      placed.insert(step.kernel);
    }
  }
  if (backend_runs_kernels && program.kernels_dir.empty()) {
    // Without kernels.json every fused node would run on the host and the run would
    // check nothing it claims to.
    for (const runtime::Step& step : program.steps) {
      if (step.kind == runtime::StepKind::kHost &&
          program.model.graph.node(step.node).domain == "stitchopt") {
        return Status::invalid_input(
            out_dir + ": kernels/kernels.json is missing, so the kernel of fused node " +
            support::printable(step.name) + " (and of every other) cannot run on " +
            backend.device_name() + "; recompile the model");
      }
    }
  }
  std::printf("kernels: %zu of the %lld in kernels.json run%s\n", placed.size(),
              static_cast<long long>(program.listed_kernels),
              backend_runs_kernels ? "" : " (the reference interpreter stands in for them)");
  if (backend_runs_kernels && static_cast<int64_t>(placed.size()) != program.listed_kernels) {
    for (const runtime::Step& step : program.steps) {
      if (step.kind == runtime::StepKind::kKernel && !placed.count(step.kernel)) {
        return Status::invalid_input(out_dir + ": kernel " + step.kernel +
                                     " of kernels.json does not run on " + backend.device_name() +
                                     "; nothing would check it (see run -v)");
      }
    }
  }
  return Status::ok();
}

int run_command(int argc, char** argv) {
  CLI::App app{"stitchopt run: runs a compiled model and checks it against the reference",
               "stitchopt run"};
  std::string out_dir;
  bool cpu = false;
  bool emulate = false;
  uint64_t seed = 0;
  std::string inputs_path, save_path, test_data;
  bool verbose = false;
  runtime::CudaBackendOptions gpu;
  app.add_option("out_dir", out_dir, "the directory `stitchopt MODEL -o DIR` wrote")->required();
  app.add_flag("--cpu", cpu, "run on the CPU even when a GPU is usable");
  app.add_flag("--emulate", emulate,
               "on the CPU, run the generated kernels through the CUDA emulation layer "
               "(compiled with $CXX) instead of the reference interpreter");
  CLI::Option* seed_option =
      app.add_option("--seed", seed, "seed of the random inputs")->check(seed_number());
  CLI::Option* inputs_option = app.add_option(
      "--inputs", inputs_path, "an .npz (numpy.savez) holding every model input by name");
  CLI::Option* test_data_option =
      app.add_option("--test-data", test_data,
                     "an ONNX test data set (input_0.pb, output_0.pb, ...) or a directory of "
                     "test_data_set_* sets; checks the outputs against the expected ones")
          ->excludes(inputs_option)
          ->excludes(seed_option);
  app.add_option("--save-outputs", save_path, "write the outputs to this .npz")
      ->excludes(test_data_option);
  inputs_option->excludes(seed_option);
  app.add_option("--kernels-library", gpu.kernels_library,
                 "a libstitch_kernels.so built from OUT/kernels/ (default: build it with nvcc)");
  app.add_option("--gpu", gpu.device, "CUDA device index");
  app.add_flag("-v,--verbose", verbose, "print every step and where it runs");
  if (std::optional<int> stop = parse(app, argc, argv)) return *stop;
  Result<OutputDirectoryUse> use = OutputDirectoryUse::acquire(out_dir);
  if (!use.is_ok()) return report_error(use.status());
  Result<runtime::Program> program = runtime::load_program(out_dir);
  if (!program.is_ok()) return report_error(program.status());
  // The user's data is read before anything runs, so a wrong feed fails at once.
  std::vector<TestDataSet> sets;
  std::map<std::string, ir::Tensor> inputs;
  if (!test_data.empty()) {
    Result<std::vector<TestDataSet>> read = read_test_data(*program, test_data);
    if (!read.is_ok()) return report_error(read.status());
    sets = std::move(read).value();
  } else if (!inputs_path.empty()) {
    Result<std::map<std::string, ir::Tensor>> read = read_feeds(*program, inputs_path);
    if (!read.is_ok()) return report_error(read.status());
    inputs = std::move(read).value();
  } else {
    inputs = runtime::random_inputs(*program, seed);
  }

  std::unique_ptr<runtime::Backend> backend;
  if (!cpu && !emulate) {
    gpu.verbose = verbose;
    Result<std::unique_ptr<runtime::Backend>> device = gpu_backend(gpu);
    if (device.is_ok()) {
      backend = std::move(device).value();
    } else {
      std::printf("stitchopt: no GPU (%s); running on the CPU with the reference interpreter\n",
                  device.status().message().c_str());
    }
  }
  const bool backend_runs_kernels = emulate || backend != nullptr;
  if (backend == nullptr) {
    backend =
        runtime::make_host_backend(runtime::HostBackendOptions{emulate, "", verbose, std::nullopt});
  }
  Result<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::create(*program, *backend);
  if (!executor.is_ok()) return report_error(executor.status());
  print_program(*program, **executor, *backend, verbose);
  Status kernels_run =
      check_kernels_run(*program, **executor, *backend, backend_runs_kernels, out_dir);
  if (!kernels_run.is_ok()) return report_error(kernels_run);
  if (!sets.empty()) return check_test_data(**executor, sets);
  return check_against_reference(*program, **executor, inputs, save_path);
}

struct Spread {
  double median = 0, min = 0, max = 0, p10 = 0, p90 = 0;
};
Spread spread(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    return values[static_cast<size_t>(std::llround(q * static_cast<double>(values.size() - 1)))];
  };
  return Spread{at(0.5), values.front(), values.back(), at(0.1), at(0.9)};
}

int bench_command(int argc, char** argv) {
  CLI::App app{"stitchopt bench: times a compiled model on the GPU", "stitchopt bench"};
  std::string out_dir;
  int warmup = 10;
  int iterations = 100;
  bool graph = false;
  bool per_kernel = false;
  runtime::CudaBackendOptions gpu;
  app.add_option("out_dir", out_dir, "the directory `stitchopt MODEL -o DIR` wrote")->required();
  app.add_option("--warmup", warmup, "untimed runs first")->check(CLI::Range(0, 1000000));
  app.add_option("--iterations", iterations, "timed runs")->check(CLI::Range(1, 1000000));
  app.add_flag("--graph", graph, "also time the model captured as one CUDA Graph");
  app.add_flag("--per-kernel", per_kernel, "time every step on its own");
  app.add_option("--kernels-library", gpu.kernels_library, "a prebuilt libstitch_kernels.so");
  app.add_option("--gpu", gpu.device, "CUDA device index");
  if (std::optional<int> stop = parse(app, argc, argv)) return *stop;
  Result<OutputDirectoryUse> use = OutputDirectoryUse::acquire(out_dir);
  if (!use.is_ok()) return report_error(use.status());
  Result<runtime::Program> program = runtime::load_program(out_dir);
  if (!program.is_ok()) return report_error(program.status());
  Result<std::unique_ptr<runtime::Backend>> backend = gpu_backend(gpu);
  if (!backend.is_ok()) {
    return report_error(Status::unavailable("bench needs a GPU: " + backend.status().message()));
  }
  Result<std::unique_ptr<runtime::Executor>> executor =
      runtime::Executor::create(*program, **backend);
  if (!executor.is_ok()) return report_error(executor.status());
  print_program(*program, **executor, **backend, false);
  runtime::Executor& run = **executor;
  Status status = run.set_inputs(runtime::random_inputs(*program, 0));
  if (!status.is_ok()) return report_error(status);
  auto enqueue = [&run] { return run.enqueue(); };
  for (int i = 0; i < warmup; ++i) {
    if (Status warm = run.enqueue(); !warm.is_ok()) return report_error(warm);
  }
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    Result<double> ms = (*backend)->time(enqueue);
    if (!ms.is_ok()) return report_error(ms.status());
    times.push_back(*ms);
  }
  Spread end_to_end = spread(times);
  std::printf("end to end: median %.4f ms (min %.4f, p10 %.4f, p90 %.4f, max %.4f) over %d runs\n",
              end_to_end.median, end_to_end.min, end_to_end.p10, end_to_end.p90, end_to_end.max,
              iterations);
  if (graph) {
    Result<std::vector<double>> replays = (*backend)->time_graph(enqueue, warmup, iterations);
    if (replays.is_ok()) {
      Spread replay = spread(*replays);
      std::printf("CUDA graph: median %.4f ms (min %.4f, p90 %.4f)\n", replay.median, replay.min,
                  replay.p90);
    } else {
      std::printf("CUDA graph: not captured: %s\n", replays.status().message().c_str());
    }
  }
  if (per_kernel) {
    const int step_iterations = std::max(1, iterations / 10);
    for (size_t index = 0; index < program->steps.size(); ++index) {
      std::vector<double> step_times;
      for (int i = 0; i < step_iterations; ++i) {
        Result<double> ms = (*backend)->time([&] { return run.enqueue_step(index); });
        if (!ms.is_ok()) return report_error(ms.status());
        step_times.push_back(*ms * 1000);
      }
      const runtime::Step& step = program->steps[index];
      // With --graph, the step alone captured as a CUDA graph and replayed: its device
      // time and a graph launch's cost, without the host's (what the emulated profile
      // estimates for a plan compiled for graph replay; docs/perf-model.md).
      std::string replayed;
      if (graph && step.kind != runtime::StepKind::kHost) {
        Result<std::vector<double>> replays = (*backend)->time_graph(
            [&] { return run.enqueue_step(index); }, std::min(warmup, 10), step_iterations);
        char text[48];
        if (replays.is_ok()) {
          std::snprintf(text, sizeof text, "graph %.2f us  ", spread(*replays).median * 1000);
        } else {
          std::snprintf(text, sizeof text, "graph - us  ");
        }
        replayed = text;
      }
      std::printf("  %-8s %-24s %10.2f us  %s%s\n",
                  std::string(runtime::step_kind_name(step.kind)).c_str(),
                  support::printable(step.op_type).c_str(), spread(step_times).median,
                  replayed.c_str(), support::printable(step.name).c_str());
    }
  }
  return kExitOk;
}

int calibrate_command(int argc, char** argv) {
  CLI::App app{"stitchopt calibrate: measures the GPU's bandwidth curve and launch latency",
               "stitchopt calibrate"};
  std::string output;
  runtime::CalibrationOptions options;
  app.add_option("-o,--output", output, "the DeviceProfile .json to write")->required();
  app.add_option("--gpu", options.device, "CUDA device index");
  app.add_option("--max-bytes", options.max_bytes,
                 "largest copy (bytes read plus written; 1 KiB to 64 GiB)")
      ->check(CLI::Range(int64_t{1} << 10, int64_t{1} << 36));
  app.add_option("--repetitions", options.repetitions, "timed runs per size (1 to 10000)")
      ->check(CLI::Range(1, 10000));
  app.add_flag("-v,--verbose", options.verbose, "print every measurement");
  if (std::optional<int> stop = parse(app, argc, argv)) return *stop;
  // Where the profile goes is checked before minutes of measuring.
  if (output.empty() || std::filesystem::is_directory(output) || output.back() == '/') {
    return report_error(
        Status::invalid_input("-o \"" + support::printable(output) +
                              "\": give the path of the profile .json file to write"));
  }
  Result<const runtime::CudaRuntimeApi*> api = runtime::load_cuda_runtime();
  if (!api.is_ok())
    return report_error(Status::unavailable("calibrate needs a GPU: " + api.status().message()));
  // The plugin measures; the profile is made of the measurement here, above the runtime
  // (driver/calibrated_profile.h). An error of either is reported alike.
  auto measure = [&]() -> Result<cost_model::DeviceProfile> {
    STITCH_ASSIGN_OR_RETURN(runtime::DeviceMeasurement measurement, (*api)->calibrate(options));
    return driver::calibrated_profile(measurement, options.verbose);
  };
  Result<cost_model::DeviceProfile> profile = measure();
  if (!profile.is_ok()) {
    const Status& status = profile.status();
    if (status.code() == StatusCode::kUnavailable) {
      return report_error(Status::unavailable("calibrate needs a GPU: " + status.message()));
    }
    return report_error(status);
  }
  std::string json = cost_model::device_profile_json(*profile);
  Result<cost_model::DeviceProfile> check = cost_model::parse_device_profile(json, output);
  if (!check.is_ok()) {
    // A measurement no real GPU gives (a broken driver, a device far outside what the
    // cost model is made for) is not written: a profile others load must be valid.
    return report_error(
        Status::unavailable("the measured profile is not written: " + check.status().message()));
  }
  if (Status written = support::write_file_atomically(output, json); !written.is_ok()) {
    return report_error(written);
  }
  std::printf("wrote %s: %s, phi %.2f us, %zu bandwidth points, best %.1f GB/s\n", output.c_str(),
              profile->name.c_str(), profile->launch_latency_us, profile->bandwidth_curve.size(),
              profile->bandwidth_curve.empty()
                  ? 0.0
                  : profile->bandwidth_curve.back().bytes_per_second / 1e9);
  return kExitOk;
}

std::string bytes_text(double bytes) {
  char text[32];
  if (bytes >= 1e6) {
    std::snprintf(text, sizeof text, "%.2fM", bytes / 1e6);
  } else if (bytes >= 1e3) {
    std::snprintf(text, sizeof text, "%.1fK", bytes / 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.0f", bytes);
  }
  return text;
}

int profile_command(int argc, char** argv) {
  CLI::App app{
      "stitchopt profile: estimates what every kernel of a compiled model costs, from "
      "hardware counters of its emulated run (docs/perf-model.md)",
      "stitchopt profile"};
  std::string out_dir;
  bool emulate = false;
  std::string device_name;
  profiling::ProfileOptions options;
  app.add_option("out_dir", out_dir, "the directory `stitchopt MODEL -o DIR` wrote")->required();
  app.add_flag("--emulate", emulate,
               "run the kernels in the CUDA emulation with its hardware counters (required: "
               "measuring on a GPU is not implemented yet)");
  app.add_option("--device", device_name,
                 "device profile for the estimates: v100, a100, h100, h200 or a profile .json "
                 "(default: the one the output was compiled for)");
  std::string launch_mode;
  app.add_option("--launch-mode", launch_mode,
                 "graph or host: the launch latency phi each launch is charged (default: the "
                 "mode the output was compiled for)")
      ->check(CLI::IsMember({"graph", "host"}));
  app.add_option("--seed", options.seed, "seed of the random inputs");
  app.add_option("--nvdisasm", options.nvdisasm,
                 "nvdisasm for the instruction estimate (default: $STITCH_NVDISASM, PATH, the "
                 "CUDA toolkit, PyPI's nvidia-cuda-nvdisasm in $VIRTUAL_ENV or the checkout's "
                 ".venv; without one the estimate is partial and says so)");
  bool no_instructions = false;
  app.add_flag("--no-instructions", no_instructions,
               "skip the instruction estimate from SASS (no nvcc or nvdisasm runs)");
  app.add_option("--sample-blocks", options.sample_blocks,
                 "count the requests of this many blocks of a larger grid, spread over it, and "
                 "scale them (unique bytes, barriers and atomics always come from every block); "
                 "0: every block")
      ->check(CLI::Range(0u, 1u << 30));
  app.add_flag("-v,--verbose", options.verbose, "print the commands that build the kernels");
  if (std::optional<int> stop = parse(app, argc, argv)) return *stop;
  options.instructions = !no_instructions;
  if (!emulate) {
    return report_error(
        Status::invalid_input("profile needs --emulate: only the emulated profile exists so far"));
  }
  Result<OutputDirectoryUse> use = OutputDirectoryUse::acquire(out_dir);
  if (!use.is_ok()) return report_error(use.status());
  const CompiledFor compiled_for = read_compiled_for(out_dir);
  Result<cost_model::DeviceProfile> device = profile_device(out_dir, device_name, compiled_for);
  if (!device.is_ok()) return report_error(device.status());
  options.device = *device;
  if (launch_mode.empty()) launch_mode = compiled_for.launch_mode;
  options.device.launch_mode =
      cost_model::parse_launch_mode(launch_mode).value_or(cost_model::LaunchMode::kHost);
  options.kernel_registers = compiled_for.registers;
  Result<runtime::Program> program = runtime::load_program(out_dir);
  if (!program.is_ok()) return report_error(program.status());
  options.device.products = program->precision;  // estimates at the compiled precision
  Result<profiling::ProgramProfile> profile = profiling::profile_program(*program, options);
  if (!profile.is_ok()) return report_error(profile.status());

  std::printf(
      "device: %s (estimates, docs/perf-model.md), %s launches (phi %.2f us); every block of "
      "every kernel ran\n",
      device->name.c_str(),
      std::string(cost_model::launch_mode_name(options.device.launch_mode)).c_str(),
      cost_model::launch_phi(options.device));
  if (profile->sampled_launches > 0) {
    std::printf(
        "sampling: %lld launches of more than %u blocks counted the requests of runs of 32 "
        "blocks spread over the grid and scaled them (--sample-blocks 0 counts every block)\n",
        static_cast<long long>(profile->sampled_launches), profile->sample_blocks);
  }
  std::printf("instructions: %s\n", profile->instructions_method.c_str());
  if (profile->partial) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "stitchopt profile: warning: the estimate is PARTIAL, each kernel's time a "
                 "lower bound: instructions %s\n",
                 profile->instructions_method.c_str());
  }
  // Columns as wide as the longest kernel name (readable names run to 60 characters;
  // a library call's composition column holds its group's kernel name).
  int kernel_width = 12, composition_width = 16;
  for (const profiling::StepProfile& s : profile->steps) {
    kernel_width = std::max(kernel_width, static_cast<int>(support::printable(s.kernel).size()));
    composition_width =
        std::max(composition_width, static_cast<int>(support::printable(s.composition).size()));
  }
  kernel_width = std::min(kernel_width, 64);
  composition_width = std::min(composition_width, 64);
  std::printf("%-*s %-9s %-*s %9s %9s %9s %6s %6s %6s %6s %9s %9s %9s  %s\n", kernel_width,
              "kernel", "kind", composition_width, "composition", "requested", "dram", "ideal",
              "sector", "redund", "l1 hit", "barr", "instr", "est us", "model us", "bound");
  for (const profiling::StepProfile& s : profile->steps) {
    const cost_model::KernelEstimate& e = s.estimate;
    const unsigned long long barriers = s.counters.block_barriers + s.counters.grid_barriers;
    const std::string instructions =
        s.instructions.has_value() ? bytes_text(s.instructions->estimate.total()) : "-";
    // The share of the load sectors the L1 served (docs/perf-model.md, "L1").
    char l1_hit[16] = "-";
    if (s.kind == "kernel" && s.counters.global_load_sectors > 0) {
      std::snprintf(l1_hit, sizeof l1_hit, "%.2f",
                    static_cast<double>(s.counters.global_load_l1_hit_sectors) /
                        static_cast<double>(s.counters.global_load_sectors));
    }
    std::printf(
        "%-*s %-9s %-*s %9s %9s %9s %6.2f %6.1f %6s %6llu %9s %9.2f %9.2f  %s\n", kernel_width,
        support::printable(s.kernel).substr(0, static_cast<size_t>(kernel_width)).c_str(),
        s.kind.c_str(), composition_width,
        support::printable(s.composition).substr(0, static_cast<size_t>(composition_width)).c_str(),
        bytes_text(static_cast<double>(e.requested_bytes)).c_str(),
        bytes_text(static_cast<double>(e.dram_bytes)).c_str(),
        bytes_text(static_cast<double>(s.ideal_bytes)).c_str(), e.sector_efficiency, e.redundancy,
        l1_hit, barriers, instructions.c_str(), e.total_us, s.analytic_us,
        std::string(cost_model::bound_name(e.bound)).c_str());
  }
  std::printf("total: %.2f us estimated (%zu launches; the planner's model says %.2f us)",
              profile->total_estimated_us, profile->steps.size(), profile->total_analytic_us);
  if (!profile->host_steps.empty()) {
    std::printf("; %zu steps on the host not estimated", profile->host_steps.size());
  }
  std::printf("\n");
  // Through a fresh name and a rename: a link planted at OUT/profile.json is
  // replaced, never written through (support/private_files.h).
  const std::filesystem::path path = std::filesystem::path(out_dir) / "profile.json";
  if (Status written = support::write_file_atomically(path, profiling::profile_json(*profile));
      !written.is_ok()) {
    return report_error(written);
  }
  std::printf("wrote %s\n", path.c_str());
  return kExitOk;
}

}  // namespace

bool is_runtime_command(std::string_view argument) {
  return argument == "run" || argument == "bench" || argument == "calibrate" ||
         argument == "profile";
}

int runtime_command_main(int argc, char** argv) {
  std::string_view command = argv[1];
  // CLI11 sees "stitchopt run ..." as a program named "stitchopt run".
  if (command == "run") return run_command(argc - 1, argv + 1);
  if (command == "bench") return bench_command(argc - 1, argv + 1);
  if (command == "profile") return profile_command(argc - 1, argv + 1);
  return calibrate_command(argc - 1, argv + 1);
}

}  // namespace stitch::cli

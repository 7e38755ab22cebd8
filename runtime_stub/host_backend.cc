#include "runtime_stub/host_backend.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>
#include <atomic>
#include <algorithm>

extern const char* const kStitchEmuHeaderText;
extern const char* const kStitchEmuSourceText;

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

// The launcher ABI (emit/kernel_directory.h); in emulation cudaError_t is an int-sized
// enum and cudaStream_t a pointer, as in stitch_emu.h.
using LaunchFn = int (*)(const void* const*, void* const*, void*, void*);
using WorkspaceBytesFn = size_t (*)();

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

// Runs `command`, returning its combined output; an error with the output's tail when
// it fails.
Result<std::string> run_command(const std::string& command) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (pipe == nullptr) return Status::internal("cannot run: " + command);
  std::string output;
  char buffer[4096];
  while (size_t read = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, read);
  int status = pclose(pipe);
  if (status != 0) {
    if (output.size() > 4000) output = "..." + output.substr(output.size() - 4000);
    return Status::invalid_input("command failed (exit " + std::to_string(status) + "): " + command +
                                 "\n" + output);
  }
  return output;
}

Status write_if_different(const fs::path& path, const std::string& text) {
  std::ifstream existing(path, std::ios::binary);
  if (existing) {
    std::stringstream current;
    current << existing.rdbuf();
    if (current.str() == text) return Status::ok();
  }
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  if (!file) return Status::invalid_input("cannot write " + path.string());
  return Status::ok();
}

class HostBackend : public Backend {
 public:
  explicit HostBackend(HostBackendOptions options) : options_(std::move(options)) {}
  ~HostBackend() override {
    if (library_ != nullptr) dlclose(library_);
  }

  std::string device_name() const override {
    return options_.emulate ? "CPU: emulated kernels (no GPU)" : "CPU: reference interpreter (no GPU)";
  }
  bool is_gpu() const override { return false; }

  Result<void*> allocate(int64_t bytes) override {
    if (bytes == 0) return static_cast<void*>(nullptr);
    void* pointer = std::aligned_alloc(256, static_cast<size_t>((bytes + 255) / 256 * 256));
    if (pointer == nullptr) {
      return Status::invalid_input("cannot allocate " + std::to_string(bytes) + " bytes of host memory");
    }
    return pointer;
  }
  void release(void* pointer) override { std::free(pointer); }
  Status upload(void* destination, const void* source, int64_t bytes) override {
    if (bytes > 0) std::memcpy(destination, source, static_cast<size_t>(bytes));
    return Status::ok();
  }
  Status download(void* destination, const void* source, int64_t bytes) override {
    return upload(destination, source, bytes);
  }
  Status zero(void* destination, int64_t bytes) override {
    if (bytes > 0) std::memset(destination, 0, static_cast<size_t>(bytes));
    return Status::ok();
  }

  Result<Placement> prepare(const Program& program, const Step& step) override {
    if (!options_.emulate || step.kind != StepKind::kKernel) {
      return Placement{false, step.kind == StepKind::kKernel ? "reference interpreter (no GPU)"
                                                             : "reference interpreter (library op, no GPU)"};
    }
    if (library_ == nullptr) STITCH_RETURN_IF_ERROR(build_library(program));
    std::string launcher = step.kernel + "_launch";
    std::string workspace = step.kernel + "_workspace_bytes";
    auto launch = reinterpret_cast<LaunchFn>(dlsym(library_, launcher.c_str()));
    auto workspace_bytes = reinterpret_cast<WorkspaceBytesFn>(dlsym(library_, workspace.c_str()));
    if (launch == nullptr || workspace_bytes == nullptr) {
      return Status::invalid_input("the emulated kernel library has no " + launcher + " or " +
                                   workspace + "; recompile the model");
    }
    if (static_cast<int64_t>(workspace_bytes()) != step.workspace_bytes) {
      return Status::invalid_input(workspace + "() returns " + std::to_string(workspace_bytes()) +
                                   ", kernels.json says " + std::to_string(step.workspace_bytes) +
                                   "; recompile the model");
    }
    launchers_[step.kernel] = launch;
    return Placement{true, ""};
  }
  int64_t scratch_bytes(const Step&) const override { return 0; }

  Status run(const Step& step, const std::vector<const void*>& inputs,
             const std::vector<void*>& outputs, void* workspace, void*) override {
    int error = launchers_.at(step.kernel)(inputs.data(), outputs.data(), workspace, nullptr);
    if (error != 0) {
      return Status::internal(step.kernel + "_launch returned error " + std::to_string(error) +
                              " in emulation");
    }
    return Status::ok();
  }
  Status synchronize() override { return Status::ok(); }

  Result<double> time(const std::function<Status()>& enqueue) override {
    auto start = std::chrono::steady_clock::now();
    STITCH_RETURN_IF_ERROR(enqueue());
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  Result<std::vector<double>> time_graph(const std::function<Status()>&, int, int) override {
    return Status::unavailable("CUDA Graphs need a GPU");
  }

 private:
  // Compiles every kernel of the program and the emulation layer into one shared
  // library in OUT/kernels/emu_build/ (objects are rebuilt when their source changed:
  // the build is keyed by the sources' bytes through `make`-like timestamps).
  Status build_library(const Program& program) {
    fs::path kernels(program.kernels_dir);
    fs::path build = kernels / "emu_build";
    std::error_code error;
    fs::create_directories(build, error);
    if (error) return Status::invalid_input("cannot create " + build.string() + ": " + error.message());
    STITCH_RETURN_IF_ERROR(write_if_different(build / "stitch_emu.h", kStitchEmuHeaderText));
    STITCH_RETURN_IF_ERROR(write_if_different(build / "stitch_emu.cc", kStitchEmuSourceText));
    std::string cxx = options_.cxx;
    if (cxx.empty()) cxx = std::getenv("CXX") != nullptr ? std::getenv("CXX") : STITCH_DEFAULT_CXX;
    const std::string flags = " -std=c++20 -O2 -fPIC -DSTITCH_EMULATION -I" +
                              shell_quote(build.string()) + " -I" + shell_quote(kernels.string());
    std::vector<std::string> sources = {(build / "stitch_emu.cc").string()};
    for (const Step& step : program.steps) {
      if (step.kind != StepKind::kKernel) continue;
      std::string source = (kernels / step.kernel_file).string();
      if (std::find(sources.begin(), sources.end(), source) == sources.end()) sources.push_back(source);
    }
    // Compile the stale objects on every core (sources are independent).
    std::string objects;
    std::vector<std::string> commands;
    for (const std::string& source : sources) {
      fs::path object = build / (fs::path(source).filename().string() + ".o");
      bool stale = !fs::exists(object) || fs::last_write_time(object) < fs::last_write_time(source) ||
                   fs::last_write_time(object) < fs::last_write_time(build / "stitch_emu.h");
      if (stale) {
        commands.push_back(shell_quote(cxx) + flags + " -x c++ -c " + shell_quote(source) + " -o " +
                           shell_quote(object.string()));
        if (options_.verbose) std::fprintf(stderr, "stitchopt: %s\n", commands.back().c_str());
      }
      objects += " " + shell_quote(object.string());
    }
    std::vector<Status> results(commands.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i = next++; i < commands.size(); i = next++) results[i] = run_command(commands[i]).status();
    };
    std::vector<std::thread> workers;
    unsigned threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 16));
    for (unsigned i = 1; i < threads; ++i) workers.emplace_back(worker);
    worker();
    for (std::thread& thread : workers) thread.join();
    for (const Status& result : results) {
      if (!result.is_ok()) return result.with_prefix("emulated kernels: ");
    }
    fs::path library = build / "libstitch_kernels_emu.so";
    std::string link = shell_quote(cxx) + " -shared -pthread -o " + shell_quote(library.string()) + objects;
    Result<std::string> linked = run_command(link);
    if (!linked.is_ok()) return linked.status().with_prefix("emulated kernels: ");
    library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      return Status::invalid_input("cannot load " + library.string() + ": " + dlerror());
    }
    return Status::ok();
  }

  HostBackendOptions options_;
  void* library_ = nullptr;
  std::map<std::string, LaunchFn> launchers_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options) {
  return std::make_unique<HostBackend>(options);
}

}  // namespace stitch::runtime

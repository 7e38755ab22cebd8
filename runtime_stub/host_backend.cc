#include "runtime_stub/host_backend.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "runtime_stub/kernel_library.h"
#include "support/subprocess.h"

extern const char* const kStitchEmuHeaderText;
extern const char* const kStitchEmuSourceText;

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

// The launcher ABI (emit/kernel_directory.h); in emulation cudaError_t is an int-sized
// enum and cudaStream_t a pointer, as in stitch_emu.h.
using LaunchFn = int (*)(const void* const*, void* const*, void*, void*);
using WorkspaceBytesFn = size_t (*)();

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
    return options_.emulate ? "CPU: emulated kernels (no GPU)"
                            : "CPU: reference interpreter (no GPU)";
  }
  bool is_gpu() const override { return false; }

  Result<void*> allocate(int64_t bytes) override {
    if (bytes == 0) return static_cast<void*>(nullptr);
    void* pointer = std::aligned_alloc(256, static_cast<size_t>((bytes + 255) / 256 * 256));
    if (pointer == nullptr) {
      return Status::invalid_input("cannot allocate " + std::to_string(bytes) +
                                   " bytes of host memory");
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
      return Placement{false, step.kind == StepKind::kKernel
                                  ? "reference interpreter (no GPU)"
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
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
        .count();
  }
  Result<std::vector<double>> time_graph(const std::function<Status()>&, int, int) override {
    return Status::unavailable("CUDA Graphs need a GPU");
  }

 private:
  // Compiles every kernel of the program and the emulation layer into one shared
  // library in OUT/kernels/emu_build/ (kernel_library.h: stamped objects, parallel).
  Status build_library(const Program& program) {
    fs::path kernels(program.kernels_dir);
    KernelLibraryRecipe recipe;
    recipe.build_dir = kernels / "emu_build";
    std::error_code error;
    fs::create_directories(recipe.build_dir, error);
    if (error) {
      return Status::invalid_input("cannot create " + recipe.build_dir.string() + ": " +
                                   error.message());
    }
    fs::path header = recipe.build_dir / "stitch_emu.h";
    fs::path source = recipe.build_dir / "stitch_emu.cc";
    STITCH_RETURN_IF_ERROR(write_if_different(header, kStitchEmuHeaderText));
    STITCH_RETURN_IF_ERROR(write_if_different(source, kStitchEmuSourceText));
    std::string cxx = options_.cxx;
    if (cxx.empty()) cxx = std::getenv("CXX") != nullptr ? std::getenv("CXX") : STITCH_DEFAULT_CXX;
    recipe.compiler = support::find_executable(cxx);
    if (recipe.compiler.empty()) {
      return Status::invalid_input("the C++ compiler " + cxx +
                                   " for --emulate was not found; set CXX to one");
    }
    recipe.compile_flags = {"-std=c++20",
                            "-O2",
                            "-fPIC",
                            "-DSTITCH_EMULATION",
                            "-I" + recipe.build_dir.string(),
                            "-I" + kernels.string(),
                            "-x",
                            "c++"};
    recipe.link_flags = {"-shared", "-pthread"};
    recipe.extra_sources = {source};
    recipe.headers = {header, kernels / "stitch_prelude.cuh"};
    recipe.library_name = "libstitch_kernels_emu.so";
    recipe.verbose = options_.verbose;
    STITCH_ASSIGN_OR_RETURN(std::string library, build_kernel_library(program, recipe));
    library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      return Status::invalid_input("cannot load " + library + ": " + dlerror());
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

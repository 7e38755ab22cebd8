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

#include "runtime_stub/embedded_emulation.h"
#include "runtime_stub/kernel_library.h"
#include "support/private_files.h"
#include "support/subprocess.h"

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

// The launcher ABI (emit/kernel_directory.h); in emulation cudaError_t is an int-sized
// enum and cudaStream_t a pointer, as in stitch_emu.h.
using LaunchFn = int (*)(const void* const*, void* const*, void*, void*);
using WorkspaceBytesFn = size_t (*)();
using CountersBeginFn = int (*)(const StitchEmuRegion*, int, const StitchEmuLimits*);
using CountersEndFn = int (*)(StitchEmuCounters*);
using CountersSitesFn = int (*)(StitchEmuSite*, int);

// ThreadSanitizer's compile-time instrumentation without its runtime: every load and
// store of a kernel calls __tsan_readN / __tsan_writeN, which the counting emulation
// defines (emit/cuda/stitch_emu.h, "Hardware counters").
const char* const kCounterKernelFlags[] = {"-fsanitize=thread", "--param",
                                           "tsan-instrument-func-entry-exit=0"};

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
    if (options_.counters.has_value()) return run_counted(step, inputs, outputs, workspace);
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
  // One kernel launch between stitch_emu_counters_begin and _end, with the step's
  // buffers as the global regions.
  Status run_counted(const Step& step, const std::vector<const void*>& inputs,
                     const std::vector<void*>& outputs, void* workspace) {
    std::vector<StitchEmuRegion> regions;
    for (size_t i = 0; i < inputs.size(); ++i) {
      regions.push_back({inputs[i], static_cast<unsigned long long>(step.inputs[i].bytes)});
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      regions.push_back({outputs[i], static_cast<unsigned long long>(step.outputs[i].bytes)});
    }
    regions.push_back({workspace, static_cast<unsigned long long>(step.workspace_bytes)});
    StitchEmuLimits limits = options_.counters->limits;
    auto registers = options_.counters->kernel_registers.find(step.kernel);
    if (registers != options_.counters->kernel_registers.end()) {
      limits.registers_per_thread = static_cast<unsigned int>(registers->second);
    }
    if (counters_begin_(regions.data(), static_cast<int>(regions.size()), &limits) != 0) {
      return Status::internal("stitch_emu_counters_begin failed for " + step.kernel);
    }
    const int error = launchers_.at(step.kernel)(inputs.data(), outputs.data(), workspace, nullptr);
    StitchEmuCounters counters{};
    counters_end_(&counters);
    if (error != 0) {
      return Status::internal(step.kernel + "_launch returned error " + std::to_string(error) +
                              " in emulation");
    }
    std::vector<StitchEmuSite> sites(static_cast<size_t>(counters_sites_(nullptr, 0)));
    counters_sites_(sites.data(), static_cast<int>(sites.size()));
    if (options_.counters->on_step) options_.counters->on_step(step, counters, sites);
    return Status::ok();
  }

  // Compiles every kernel of the program and the emulation layer into one shared
  // library in OUT/kernels/emu_build/ (kernel_library.h: stamped objects, the kernels
  // in one unity unit per core, in parallel).
  Status build_library(const Program& program) {
    fs::path kernels(program.kernels_dir);
    const bool counting = options_.counters.has_value();
    KernelLibraryRecipe recipe;
    recipe.build_dir = kernels / (counting ? "emu_counters_build" : "emu_build");
    STITCH_RETURN_IF_ERROR(support::prepare_build_directory(recipe.build_dir, true));
    // The emulation layer's headers and the sources this build compiles (the counters'
    // access hooks and bookkeeping only when counting).
    for (size_t i = 0; i < kEmbeddedEmuFileCount; ++i) {
      const EmbeddedEmuFile& file = kEmbeddedEmuFiles[i];
      if (file.role == EmuFileRole::kCountingSource && !counting) continue;
      const fs::path path = recipe.build_dir / file.name;
      STITCH_RETURN_IF_ERROR(support::write_file_if_different(path, file.text));
      (file.role == EmuFileRole::kHeader ? recipe.headers : recipe.extra_sources).push_back(path);
    }
    recipe.headers.push_back(kernels / "stitch_prelude.cuh");
    std::string cxx = options_.cxx;
    if (cxx.empty()) cxx = std::getenv("CXX") != nullptr ? std::getenv("CXX") : STITCH_DEFAULT_CXX;
    recipe.compiler = support::find_executable(cxx);
    if (recipe.compiler.empty()) {
      return Status::invalid_input("the C++ compiler " + cxx +
                                   " for --emulate was not found; set CXX to one");
    }
    // Quoted includes only: a kernel finds "stitch_prelude.cuh" beside itself and the
    // prelude finds "stitch_emu.h" here, while <math.h> and every other system header
    // come from the system, never from a file someone left in OUT/kernels or
    // emu_build. So the emulation layer's object and precompiled header read nothing
    // of OUT/kernels and may be shared through the build cache.
    recipe.compile_flags = {
        "-std=c++20", "-O2", "-fPIC", "-DSTITCH_EMULATION", "-iquote", recipe.build_dir.string(),
        "-x",         "c++"};
    recipe.link_flags = {"-shared", "-pthread"};
    if (counting) {
      // -g: addr2line maps the counted access sites to source lines.
      recipe.compile_flags.insert(recipe.compile_flags.begin(), {"-DSTITCH_EMU_COUNTERS", "-g"});
      recipe.kernel_flags.assign(std::begin(kCounterKernelFlags), std::end(kCounterKernelFlags));
      recipe.link_flags.push_back("-Wl,-z,defs");  // every __tsan_* entry point defined
    }
    recipe.precompiled_header = "stitch_emu.h";
    // One compiler run per core rather than per kernel: most of a kernel's compile is
    // the emulation header (precompiled or not) and its debug information.
    recipe.unity = true;
    recipe.library_name =
        counting ? "libstitch_kernels_emu_counters.so" : "libstitch_kernels_emu.so";
    recipe.verbose = options_.verbose;
    // Opt-in: the emulation layer's object and precompiled header, shared by every
    // output directory built with the same compiler and flags (docs/runtime.md).
    if (const char* cache = std::getenv("STITCH_BUILD_CACHE"); cache != nullptr && *cache != 0) {
      recipe.cache_dir = cache;
    }
    STITCH_ASSIGN_OR_RETURN(std::string library, build_kernel_library(program, recipe));
    library_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) {
      return Status::invalid_input("cannot load " + library + ": " + dlerror());
    }
    if (counting) {
      counters_begin_ =
          reinterpret_cast<CountersBeginFn>(dlsym(library_, "stitch_emu_counters_begin"));
      counters_end_ = reinterpret_cast<CountersEndFn>(dlsym(library_, "stitch_emu_counters_end"));
      counters_sites_ =
          reinterpret_cast<CountersSitesFn>(dlsym(library_, "stitch_emu_counters_sites"));
      if (counters_begin_ == nullptr || counters_end_ == nullptr || counters_sites_ == nullptr) {
        return Status::internal(library + " has no stitch_emu_counters_begin/_end/_sites");
      }
      if (options_.counters->on_library) options_.counters->on_library(library);
    }
    return Status::ok();
  }

  HostBackendOptions options_;
  void* library_ = nullptr;
  CountersBeginFn counters_begin_ = nullptr;
  CountersEndFn counters_end_ = nullptr;
  CountersSitesFn counters_sites_ = nullptr;
  std::map<std::string, LaunchFn> launchers_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options) {
  return std::make_unique<HostBackend>(options);
}

}  // namespace stitch::runtime

// The generated kernels: building, loading and launching libstitch_kernels.so.
#include "runtime_stub/cuda/cuda_kernel_library.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "runtime_stub/kernel_library.h"
#include "support/subprocess.h"

namespace stitch::runtime::cuda {
namespace fs = std::filesystem;
namespace {

// nvcc as given (a path), or searched in PATH, then $CUDA_HOME/bin, $CUDA_PATH/bin
// and /usr/local/cuda/bin (where the toolkit installs itself without touching PATH).
Result<std::string> find_nvcc(const std::string& nvcc) {
  std::vector<std::string> directories;
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = std::getenv(variable)) directories.push_back(std::string(root) + "/bin");
  }
  directories.emplace_back("/usr/local/cuda/bin");
  std::string found = support::find_executable(nvcc, directories);
  if (!found.empty()) return found;
  return Status::unavailable(
      nvcc +
      " not found (searched PATH, $CUDA_HOME/bin, $CUDA_PATH/bin and /usr/local/cuda/bin): "
      "install the CUDA toolkit, or build OUT/kernels with its CMakeLists.txt and pass "
      "the resulting libstitch_kernels.so");
}

// Builds OUT/kernels/build/libstitch_kernels.so from the kernel steps' sources for the
// device's architecture (kernel_library.h: reusing what is up to date) and returns its
// path. Linked with the shared cudart, so the kernels and this library share one CUDA
// runtime (streams and pointers are the same objects).
Result<std::string> build_kernels_library(const Program& program, const CudaBackendOptions& options,
                                          const cudaDeviceProp& properties) {
  KernelLibraryRecipe recipe;
  STITCH_ASSIGN_OR_RETURN(recipe.compiler, find_nvcc(options.nvcc));
  const fs::path kernels_dir = program.kernels_dir;
  // Headers every kernel may include (stitch_prelude.cuh, kernels.h).
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(kernels_dir, error)) {
    std::string extension = entry.path().extension().string();
    if (entry.is_regular_file() && (extension == ".cuh" || extension == ".h")) {
      recipe.headers.push_back(entry.path());
    }
  }
  std::sort(recipe.headers.begin(), recipe.headers.end());
  const std::string arch =
      "-arch=sm_" + std::to_string(properties.major) + std::to_string(properties.minor);
  recipe.compile_flags = {"-Xcompiler", "-fPIC", "-O3",
                          "-std=c++17", arch,    "-I" + kernels_dir.string()};
  recipe.link_flags = {"-shared", "--cudart", "shared", arch};
  recipe.build_dir = kernels_dir / "build";
  recipe.library_name = "libstitch_kernels.so";
  recipe.verbose = options.verbose;
  return build_kernel_library(program, recipe);
}

}  // namespace

Status CudaKernelLibrary::load(const Program& program) {
  if (!library_status_) {
    std::string path = options_.kernels_library;
    Status status;
    if (path.empty()) {
      Result<std::string> built = build_kernels_library(program, options_, properties_);
      if (built.is_ok()) {
        path = *built;
      } else {
        status = built.status();
      }
    }
    if (status.is_ok()) {
      library_ = Owned<void*, dlclose>(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
      if (!library_) {
        const char* reason = dlerror();
        status = Status::invalid_input("cannot load " + path + ": " +
                                       (reason != nullptr ? reason : "dlopen failed"));
      } else if (options_.verbose) {
        std::cerr << "cuda: loaded " << path << "\n";
      }
    }
    library_status_ = status;
  }
  return *library_status_;
}

Result<Placement> CudaKernelLibrary::prepare(const Program& program, const Step& step) {
  STITCH_RETURN_IF_ERROR(load(program));
  const std::string launcher = step.kernel + "_launch";
  const std::string workspace_function = step.kernel + "_workspace_bytes";
  auto launch = reinterpret_cast<LaunchFn>(dlsym(library_.get(), launcher.c_str()));
  auto workspace =
      reinterpret_cast<size_t (*)()>(dlsym(library_.get(), workspace_function.c_str()));
  if (launch == nullptr || workspace == nullptr) {
    return Status::invalid_input("libstitch_kernels.so has no " +
                                 (launch == nullptr ? launcher : workspace_function) +
                                 ": it was built from other kernels than " + program.kernels_dir +
                                 " holds; rebuild it (or drop the explicit kernels library)");
  }
  const size_t workspace_bytes = workspace();
  if (static_cast<int64_t>(workspace_bytes) != step.workspace_bytes) {
    return Status::invalid_input(workspace_function + "() returns " +
                                 std::to_string(workspace_bytes) + " bytes, kernels.json says " +
                                 std::to_string(step.workspace_bytes) +
                                 ": libstitch_kernels.so is stale; rebuild it");
  }
  launchers_[&step] = launch;
  return Placement{};
}

Status CudaKernelLibrary::run(const Step& step, const std::vector<const void*>& inputs,
                              const std::vector<void*>& outputs, void* workspace,
                              cudaStream_t stream) {
  auto found = launchers_.find(&step);
  STITCH_CHECK(found != launchers_.end()) << "step " << step.name << " has no kernel";
  return cuda_status(found->second(inputs.data(), outputs.data(), workspace, stream),
                     step.kernel + "_launch");
}

}  // namespace stitch::runtime::cuda

#include "runtime_stub/cuda_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

constexpr const char* kLibraryName = "libstitch_runtime_cuda.so";

// Candidates in lookup order: beside the executable, ../lib; beside the shared
// library this code is in when it is one (libstitchopt_runtime.so in a program of the
// user's), ../bin; $STITCH_RUNTIME_CUDA.
std::vector<fs::path> candidates() {
  std::vector<fs::path> paths;
  std::error_code error;
  fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (!error) {
    paths.push_back(executable.parent_path() / kLibraryName);
    paths.push_back(executable.parent_path().parent_path() / "lib" / kLibraryName);
  }
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_cuda_runtime), &info) != 0 &&
      info.dli_fname != nullptr) {
    const fs::path module = fs::absolute(info.dli_fname, error);
    if (!error && module != executable) {
      paths.push_back(module.parent_path() / kLibraryName);
      paths.push_back(module.parent_path().parent_path() / "bin" / kLibraryName);
    }
  }
  if (const char* override_path = std::getenv("STITCH_RUNTIME_CUDA"))
    paths.emplace_back(override_path);
  return paths;
}

Result<const CudaRuntimeApi*> load_once() {
  std::string tried;
  for (const fs::path& path : candidates()) {
    if (!fs::exists(path)) {
      tried += (tried.empty() ? "" : ", ") + path.string();
      continue;
    }
    void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      return Status::unavailable("cannot load " + path.string() + ": " + dlerror() +
                                 " (a CUDA library it needs is missing; see docs/runtime.md)");
    }
    using ApiFn = const CudaRuntimeApi* (*)();
    auto api = reinterpret_cast<ApiFn>(dlsym(library, "stitch_runtime_cuda_api"));
    if (api == nullptr || api() == nullptr) {
      return Status::unavailable(path.string() + " does not export stitch_runtime_cuda_api");
    }
    if (api()->abi_version != kCudaRuntimeAbiVersion) {
      return Status::unavailable(path.string() + " has ABI version " +
                                 std::to_string(api()->abi_version) + ", this stitchopt needs " +
                                 std::to_string(kCudaRuntimeAbiVersion) + "; rebuild it");
    }
    return api();
  }
  return Status::unavailable(
      std::string(kLibraryName) + " was not found (looked at " + tried +
      "): it is built only where the CUDA toolkit and cuDNN were found at build "
      "time (and not with -DSTITCH_RUNTIME_CUDA=OFF)");
}

}  // namespace

Result<const CudaRuntimeApi*> load_cuda_runtime() {
  static std::once_flag once;
  static Result<const CudaRuntimeApi*> loaded = Status::internal("not loaded");
  std::call_once(once, [] { loaded = load_once(); });
  return loaded;
}

}  // namespace stitch::runtime

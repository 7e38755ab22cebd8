#include "profiling/cuda_tools.h"

#include <glob.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "support/subprocess.h"

namespace stitch::profiling {
namespace {

// `requested` resolved as find_executable does; an error naming `what` when it is not
// an executable (a mistyped --nvdisasm must not fall back to another tool silently).
Result<std::string> requested_tool(const std::string& requested, const std::string& what) {
  std::string found = support::find_executable(requested);
  if (found.empty()) {
    return Status::invalid_input(what + " " + requested + ": no such executable");
  }
  return found;
}

// This program's path, or "" where /proc is not mounted.
std::string self_executable() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string() : self.string();
}

// Paths matching `pattern`, sorted (glob(3) sorts); none when nothing matches.
std::vector<std::string> glob_paths(const std::string& pattern) {
  glob_t matches{};
  std::vector<std::string> paths;
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  return paths;
}

}  // namespace

Result<std::string> find_nvcc(const std::string& requested) {
  if (!requested.empty()) return requested_tool(requested, "--nvcc");
  return support::find_executable("nvcc", {"/usr/local/cuda/bin"});
}

std::vector<std::string> wheel_search_roots(const std::string& executable, int levels) {
  std::vector<std::string> prefixes;
  for (const char* variable : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') {
      prefixes.emplace_back(value);
    }
  }
  if (!executable.empty()) {
    std::filesystem::path directory = std::filesystem::path(executable).parent_path();
    for (int level = 0; level <= levels && !directory.empty(); ++level) {
      prefixes.push_back(directory.string());
      if (directory == directory.root_path()) break;
      directory = directory.parent_path();
    }
  }
  std::vector<std::string> roots;
  for (const std::string& prefix : prefixes) {
    for (const std::string& base : {prefix, prefix + "/.venv"}) {
      roots.push_back(base);
      for (std::string& site : glob_paths(base + "/lib/python3*/site-packages")) {
        roots.push_back(std::move(site));
      }
    }
  }
  return roots;
}

std::string find_wheel_nvdisasm(const std::vector<std::string>& roots) {
  for (const std::string& root : roots) {
    // The newest CUDA major's wheel first (glob sorts cu12 before cu13).
    std::vector<std::string> found = glob_paths(root + "/nvidia/cu*/bin/nvdisasm");
    for (auto it = found.rbegin(); it != found.rend(); ++it) {
      if (!support::find_executable(*it).empty()) return *it;
    }
    const std::string cuda12 = root + "/nvidia/cuda_nvdisasm/bin/nvdisasm";
    if (!support::find_executable(cuda12).empty()) return cuda12;
  }
  return "";
}

Result<std::string> find_nvdisasm(const std::string& requested, const std::string& nvcc) {
  if (!requested.empty()) return requested_tool(requested, "--nvdisasm");
  if (const char* env = std::getenv("STITCH_NVDISASM"); env != nullptr && *env != '\0') {
    return requested_tool(env, "$STITCH_NVDISASM");
  }
  std::vector<std::string> toolkit;
  if (!nvcc.empty()) toolkit.push_back(std::filesystem::path(nvcc).parent_path().string());
  toolkit.emplace_back("/usr/local/cuda/bin");
  if (std::string found = support::find_executable("nvdisasm", toolkit); !found.empty()) {
    return found;
  }
  // Three levels cover build/bin/stitchopt (the checkout's .venv two above) and a
  // build directory one deeper (build/release/bin/stitchopt).
  return find_wheel_nvdisasm(wheel_search_roots(self_executable(), 3));
}

}  // namespace stitch::profiling

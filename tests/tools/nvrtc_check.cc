// stitch_nvrtc_check FILE.cu [--arch sm_80] [-I dir]...: compiles FILE with NVRTC.
//
// A development tool for the kernel tests (tests/cuda_emu/tests.cmake): generated kernel
// files must compile at run time too, where only the device half is seen
// (__CUDACC_RTC__). The CUDA include directory (cuda_fp16.h, cuda_bf16.h, which NVRTC 13
// does not carry built in) is always on the include path. Compiles to a cubin, so ptxas
// runs as well. Prints NVRTC's log. Exit codes: 0 clean, 1 an error or any warning,
// 2 bad usage or unreadable file.
#include <nvrtc.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int usage(const std::string& message) {
  std::cerr << "stitch_nvrtc_check: " << message
            << "\nusage: stitch_nvrtc_check FILE.cu [--arch sm_80] [-I dir]..." << std::endl;
  return 2;
}

bool log_has_diagnostics(const std::string& log) {
  return log.find("error") != std::string::npos || log.find("warning") != std::string::npos;
}

}  // namespace

int main(int argc, char** argv) {
  std::string file;
  std::string arch = "sm_80";
  std::vector<std::string> options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--arch" && i + 1 < argc) {
      arch = argv[++i];
    } else if (arg == "-I" && i + 1 < argc) {
      options.push_back(std::string("--include-path=") + argv[++i]);
    } else if (arg.rfind("-I", 0) == 0 && arg.size() > 2) {
      options.push_back("--include-path=" + arg.substr(2));
    } else if (!arg.empty() && arg[0] != '-' && file.empty()) {
      file = arg;
    } else {
      return usage("unexpected argument '" + arg + "'");
    }
  }
  if (file.empty()) return usage("no input file");
  if (arch.rfind("sm_", 0) != 0) return usage("--arch must look like sm_80, got '" + arch + "'");
  std::ifstream in(file, std::ios::binary);
  if (!in) return usage("cannot read '" + file + "'");
  std::stringstream source;
  source << in.rdbuf();
  const std::string text = source.str();

  options.push_back("--gpu-architecture=" + arch);
  options.push_back("--include-path=" STITCH_CUDA_INCLUDE_DIR);
  options.push_back("--std=c++17");
  std::vector<const char*> option_pointers;
  for (const std::string& o : options) option_pointers.push_back(o.c_str());

  nvrtcProgram program;
  if (nvrtcCreateProgram(&program, text.c_str(), file.c_str(), 0, nullptr, nullptr) !=
      NVRTC_SUCCESS) {
    std::cerr << "stitch_nvrtc_check: nvrtcCreateProgram failed for " << file << std::endl;
    return 1;
  }
  const nvrtcResult result = nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()),
                                                 option_pointers.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  size_t cubin_size = 0;
  if (result == NVRTC_SUCCESS) nvrtcGetCUBINSize(program, &cubin_size);
  nvrtcDestroyProgram(&program);

  if (!log.empty()) std::cout << log << std::endl;
  if (result != NVRTC_SUCCESS) {
    std::cerr << "stitch_nvrtc_check: " << file << ": " << nvrtcGetErrorString(result) << std::endl;
    return 1;
  }
  if (log_has_diagnostics(log)) {
    std::cerr << "stitch_nvrtc_check: " << file << ": NVRTC reported warnings (treated as errors)"
              << std::endl;
    return 1;
  }
  std::cout << "stitch_nvrtc_check: " << file << ": ok for " << arch << " (" << cubin_size
            << " bytes of cubin)" << std::endl;
  return 0;
}

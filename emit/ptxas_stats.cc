// ptxas -v parsing and the nvcc subprocess behind it.
#include "emit/ptxas_stats.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <regex>
#include <sstream>
#include <system_error>

#include "support/subprocess.h"

namespace stitch::emit {
namespace {

// nvcc on one generated kernel takes seconds; past this it is stuck.
constexpr double kNvccTimeoutSeconds = 600;

int64_t to_int64(const std::string& digits) { return std::stoll(digits); }

}  // namespace

Result<std::vector<PtxasStats>> parse_ptxas_output(std::string_view text) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex kProperties(R"(Function properties for (\S+))");
  static const std::regex kSpills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex kRegisters(R"(Used (\d+) registers)");
  static const std::regex kShared(R"((\d+) bytes smem)");

  std::vector<PtxasStats> functions;
  std::vector<bool> has_registers;
  // The "Function properties for F" block currently being read; spill lines belong
  // to the entry only when F is the entry itself (not a non-inlined callee).
  std::string properties_of;
  std::istringstream lines{std::string(text)};
  std::string line;
  std::smatch match;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, match, kEntry)) {
      PtxasStats stats;
      stats.function = match[1];
      stats.arch = match[2];
      functions.push_back(stats);
      has_registers.push_back(false);
      properties_of.clear();
      continue;
    }
    if (std::regex_search(line, match, kProperties)) {
      properties_of = match[1];
      continue;
    }
    if (functions.empty()) continue;
    PtxasStats& current = functions.back();
    if (std::regex_search(line, match, kSpills) && properties_of == current.function) {
      current.spill_store_bytes = to_int64(match[1]);
      current.spill_load_bytes = to_int64(match[2]);
      continue;
    }
    if (std::regex_search(line, match, kRegisters)) {
      current.registers = static_cast<int>(to_int64(match[1]));
      has_registers.back() = true;
      if (std::regex_search(line, match, kShared)) current.shared_bytes = to_int64(match[1]);
    }
  }
  for (size_t i = 0; i < functions.size(); ++i) {
    if (!has_registers[i]) {
      return Status::invalid_input("ptxas output: entry function '" + functions[i].function +
                                   "' has no \"Used N registers\" line; pass -Xptxas -v "
                                   "and give the complete output");
    }
  }
  return functions;
}

PtxasStats summarize_ptxas(const std::vector<PtxasStats>& functions) {
  PtxasStats summary;
  for (const PtxasStats& stats : functions) {
    summary.function += (summary.function.empty() ? "" : ",") + stats.function;
    if (summary.arch.empty()) summary.arch = stats.arch;
    summary.registers = std::max(summary.registers, stats.registers);
    summary.spill_store_bytes += stats.spill_store_bytes;
    summary.spill_load_bytes += stats.spill_load_bytes;
    summary.shared_bytes = std::max(summary.shared_bytes, stats.shared_bytes);
  }
  return summary;
}

std::optional<std::filesystem::path> find_nvcc() {
  if (const char* cudacxx = std::getenv("CUDACXX"); cudacxx && *cudacxx) {
    if (std::filesystem::exists(cudacxx)) return std::filesystem::path(cudacxx);
  }
  if (std::string found = support::find_executable("nvcc", {"/usr/local/cuda/bin"});
      !found.empty()) {
    return std::filesystem::path(found);
  }
  return std::nullopt;
}

Result<std::vector<PtxasStats>> run_ptxas(const std::filesystem::path& nvcc,
                                          const std::filesystem::path& cu_file,
                                          const std::vector<std::filesystem::path>& include_dirs,
                                          const std::string& arch) {
  static std::atomic<int> counter{0};
  // Beside the source (inside OUT's staging directory), never in a shared temporary
  // directory: a run writes nothing outside OUT.
  const int number = counter++;
  std::filesystem::path cubin = cu_file;
  cubin.replace_extension(".ptxas-" + std::to_string(number) + ".cubin");
  // nvcc's own temporary files too: a directory of this call's, removed after it (one
  // nvcc killed at its time limit cannot remove them itself).
  const std::filesystem::path temp =
      cu_file.parent_path() / (".ptxas-" + std::to_string(number) + ".tmp");
  std::vector<std::string> argv = {nvcc.string(), "-cubin", "-arch=" + arch, "-Xptxas",
                                   "-v,-warn-spills"};
  for (const std::filesystem::path& directory : include_dirs) {
    argv.push_back("-I" + directory.string());
  }
  argv.push_back("-o");
  argv.push_back(cubin.string());
  argv.push_back(cu_file.string());
  support::ProcessOptions options;
  options.timeout_seconds = kNvccTimeoutSeconds;
  std::error_code ignored;
  if (std::filesystem::create_directory(temp, ignored)) options.temp_directory = temp.string();
  support::ProcessResult result = support::run_process(argv, options);
  std::filesystem::remove(cubin, ignored);
  std::filesystem::remove_all(temp, ignored);
  if (!result.succeeded()) {
    return Status::internal(cu_file.string() + ": nvcc -arch=" + arch + ": " + result.failure() +
                            ": " + result.output);
  }
  return parse_ptxas_output(result.output);
}

}  // namespace stitch::emit

// ptxas -v parsing and the nvcc subprocess behind it.
#include "emit/ptxas_stats.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>
#include <sstream>
#include <system_error>

namespace stitch::emit {
namespace {

int64_t to_int64(const std::string& digits) { return std::stoll(digits); }

// Runs argv (no shell) and returns its exit status with stdout and stderr merged
// into `output`; -1 when it could not be started or did not exit normally.
int run_capturing(const std::vector<std::string>& argv, std::string& output) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) {
    output = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  pid_t child = fork();
  if (child < 0) {
    output = std::string("fork: ") + std::strerror(errno);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return -1;
  }
  if (child == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    execvp(args[0], args.data());
    const char* message = "exec failed\n";
    ssize_t ignored = write(STDERR_FILENO, message, std::strlen(message));
    (void)ignored;
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  ssize_t count;
  while ((count = read(pipe_fds[0], buffer, sizeof buffer)) != 0) {
    if (count < 0) {
      if (errno == EINTR) continue;
      break;
    }
    output.append(buffer, static_cast<size_t>(count));
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

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
  std::filesystem::path installed = "/usr/local/cuda/bin/nvcc";
  if (std::filesystem::exists(installed)) return installed;
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::istringstream directories{std::string(path)};
  std::string directory;
  while (std::getline(directories, directory, ':')) {
    if (directory.empty()) continue;
    std::filesystem::path candidate = std::filesystem::path(directory) / "nvcc";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

Result<std::vector<PtxasStats>> run_ptxas(const std::filesystem::path& nvcc,
                                          const std::filesystem::path& cu_file,
                                          const std::vector<std::filesystem::path>& include_dirs,
                                          const std::string& arch) {
  static std::atomic<int> counter{0};
  std::filesystem::path cubin =
      std::filesystem::temp_directory_path() /
      ("stitch_ptxas_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".cubin");
  std::vector<std::string> argv = {nvcc.string(), "-cubin", "-arch=" + arch, "-Xptxas",
                                   "-v,-warn-spills"};
  for (const std::filesystem::path& directory : include_dirs) {
    argv.push_back("-I" + directory.string());
  }
  argv.push_back("-o");
  argv.push_back(cubin.string());
  argv.push_back(cu_file.string());
  std::string output;
  int exit_code = run_capturing(argv, output);
  std::error_code ignored;
  std::filesystem::remove(cubin, ignored);
  if (exit_code != 0) {
    return Status::internal(cu_file.string() + ": nvcc -arch=" + arch +
                                 (exit_code < 0 ? " did not run" : " exited with " +
                                                                       std::to_string(exit_code)) +
                                 ": " + output);
  }
  return parse_ptxas_output(output);
}

}  // namespace stitch::emit

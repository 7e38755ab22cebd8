// External tools with a time limit (subprocess.h).
#include "support/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "support/interrupt.h"

extern char** environ;

namespace stitch::support {

std::string ProcessResult::failure() const {
  if (!started) return "cannot start: " + start_error;
  if (timed_out) {
    char text[64];
    std::snprintf(text, sizeof text, "still running after %g s: killed", seconds);
    return text;
  }
  if (signal_number != 0) return "killed by signal " + std::to_string(signal_number);
  if (exit_code != 0) return "exit code " + std::to_string(exit_code);
  return "";
}

Process Process::start(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Process process;
  process.start_ = std::chrono::steady_clock::now();
  process.timeout_seconds_ = options.timeout_seconds;
  process.deadline_ =
      process.start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(options.timeout_seconds));
  process.max_captured_bytes_ = options.max_captured_bytes;
  if (argv.empty()) {
    process.result_.start_error = "empty command line";
    return process;
  }
  int fds[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (options.output_path.empty()) {
    if (pipe2(fds, O_CLOEXEC) != 0) {
      process.result_.start_error = std::string("pipe: ") + std::strerror(errno);
      posix_spawn_file_actions_destroy(&actions);
      return process;
    }
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  } else {
    // Never through a link: a log path may lie in a directory someone else prepared
    // (support/private_files.h).
    posix_spawn_file_actions_addopen(&actions, 1, options.output_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
  }
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setpgroup(&attributes, 0);
  // The child starts with default signal handling whatever stitchopt installed.
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGABRT})
    sigaddset(&defaults, signal_number);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  // The environment as it is, or with TMPDIR set to options.temp_directory.
  std::vector<char*> environment;
  const std::string temp_setting = "TMPDIR=" + options.temp_directory;
  if (!options.temp_directory.empty()) {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string_view text(*entry);
      if (text.starts_with("TMPDIR=") || text.starts_with("TMP=") || text.starts_with("TEMP=")) {
        continue;
      }
      environment.push_back(*entry);
    }
    environment.push_back(const_cast<char*>(temp_setting.c_str()));
    environment.push_back(nullptr);
  }
  int error = posix_spawnp(&process.pid_, args[0], &actions, &attributes, args.data(),
                           environment.empty() ? environ : environment.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (fds[1] >= 0) close(fds[1]);
  if (error != 0) {
    if (fds[0] >= 0) close(fds[0]);
    process.pid_ = -1;
    process.result_.start_error = std::strerror(error);
    return process;
  }
  register_child_group(process.pid_);
  process.result_.started = true;
  process.done_ = false;
  process.pipe_ = fds[0];
  if (process.pipe_ >= 0) fcntl(process.pipe_, F_SETFL, O_NONBLOCK);
  return process;
}

Process::Process(Process&& other) noexcept
    : pid_(other.pid_),
      pipe_(other.pipe_),
      max_captured_bytes_(other.max_captured_bytes_),
      start_(other.start_),
      deadline_(other.deadline_),
      timeout_seconds_(other.timeout_seconds_),
      done_(other.done_),
      result_(std::move(other.result_)) {
  other.pid_ = -1;
  other.pipe_ = -1;
  other.done_ = true;
}

Process::~Process() {
  if (!done_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    unregister_child_group(pid_);
  }
  if (pipe_ >= 0) close(pipe_);
}

void Process::drain() {
  if (pipe_ < 0) return;
  char buffer[4096];
  for (;;) {
    ssize_t count = read(pipe_, buffer, sizeof buffer);
    if (count > 0) {
      result_.output.append(buffer, static_cast<size_t>(count));
      if (result_.output.size() > 2 * max_captured_bytes_) {
        result_.output.erase(0, result_.output.size() - max_captured_bytes_);
      }
      continue;
    }
    if (count < 0 && errno == EINTR) continue;
    break;  // EAGAIN (nothing now) or end of file
  }
}

void Process::finish(int status) {
  drain();
  if (result_.output.size() > max_captured_bytes_) {
    result_.output.erase(0, result_.output.size() - max_captured_bytes_);
  }
  if (pipe_ >= 0) {
    close(pipe_);
    pipe_ = -1;
  }
  if (WIFEXITED(status)) result_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result_.signal_number = WTERMSIG(status);
  result_.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  unregister_child_group(pid_);
  done_ = true;
}

bool Process::poll() {
  if (done_) return true;
  drain();
  // Noticed without reaping, so the group id cannot be reused before the kill below
  // ends the tools the child started and left behind.
  siginfo_t info{};
  bool ended = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid_;
  bool late = !ended && std::chrono::steady_clock::now() >= deadline_;
  if (!ended && !late) return false;
  kill(-pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  finish(status);
  if (late) {
    result_.timed_out = true;
    result_.seconds = timeout_seconds_;
  }
  return true;
}

const ProcessResult& Process::wait() {
  while (!poll()) {
    if (pipe_ >= 0) {
      struct pollfd readable = {pipe_, POLLIN, 0};
      ::poll(&readable, 1, 10);
    } else {
      usleep(10000);
    }
  }
  return result_;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  Process process = Process::start(argv, options);
  return process.wait();
}

namespace {

bool is_executable(const std::string& path) {
  struct stat info {};
  return !path.empty() && access(path.c_str(), X_OK) == 0 && stat(path.c_str(), &info) == 0 &&
         S_ISREG(info.st_mode);
}

}  // namespace

std::string find_executable(const std::string& name,
                            const std::vector<std::string>& extra_directories) {
  if (name.find('/') != std::string::npos) return is_executable(name) ? name : "";
  std::vector<std::string> directories;
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    for (size_t start = 0; start <= list.size();) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) directories.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  directories.insert(directories.end(), extra_directories.begin(), extra_directories.end());
  for (const std::string& directory : directories) {
    std::string candidate = directory + "/" + name;
    if (is_executable(candidate)) return candidate;
  }
  return "";
}

std::string command_line_text(const std::vector<std::string>& argv) {
  std::string text;
  for (const std::string& arg : argv) {
    if (!text.empty()) text += ' ';
    bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./=+,:", c) != nullptr;
    });
    if (plain) {
      text += arg;
    } else {
      text += '\'';
      for (char c : arg) text += c == '\'' ? std::string("'\\''") : std::string(1, c);
      text += '\'';
    }
  }
  return text;
}

}  // namespace stitch::support

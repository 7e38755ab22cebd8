// External tools with a time limit (DESIGN.md, Untrusted input: nvcc, the C++
// compiler and Graphviz's dot run on what a model made, so none may run forever).
//
// A child runs in a process group of its own (so a timeout ends the tools it starts
// too: nvcc runs cicc and ptxas), with stdin from /dev/null and stdout and stderr
// into a file or captured (the last max_captured_bytes). Past its deadline the group
// is killed with SIGKILL and the result says so. While it runs, the group is
// registered with support/interrupt.h, so SIGINT/SIGTERM to stitchopt ends it too.
// No shell is involved: argv[0] is a path, or a name looked up in $PATH.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace stitch::support {

struct ProcessOptions {
  double timeout_seconds = 300;
  std::string output_path;  // stdout + stderr go here; empty: captured into output
  size_t max_captured_bytes = 1 << 20;
  // Non-empty: the child's TMPDIR (TMP and TEMP removed), an existing directory. A
  // compiler killed by a timeout or an interrupt leaves its temporary files there
  // instead of in the user's /tmp.
  std::string temp_directory;
};

struct ProcessResult {
  bool started = false;
  std::string start_error;  // why it could not start (when !started)
  bool timed_out = false;
  int exit_code = -1;     // when it exited
  int signal_number = 0;  // when a signal ended it (SIGKILL after a timeout)
  std::string output;     // captured stdout + stderr (output_path empty)
  double seconds = 0;

  bool succeeded() const { return started && !timed_out && signal_number == 0 && exit_code == 0; }
  // "" when it succeeded, else e.g. "exit code 2", "killed by signal 11",
  // "still running after 20 s: killed", "cannot start: No such file or directory".
  std::string failure() const;
};

class Process {
 public:
  static Process start(const std::vector<std::string>& argv, const ProcessOptions& options);
  Process(Process&& other) noexcept;
  Process& operator=(Process&&) = delete;
  Process(const Process&) = delete;
  // Kills and reaps a child still running (a caller that stopped waiting).
  ~Process();

  // True once the child has ended (then result() is final); kills it past its deadline.
  bool poll();
  // Blocks until the child ends or its deadline passes.
  const ProcessResult& wait();
  const ProcessResult& result() const { return result_; }

 private:
  Process() = default;
  void drain();
  void finish(int status);

  pid_t pid_ = -1;
  int pipe_ = -1;  // read end of the captured output, or -1
  size_t max_captured_bytes_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point deadline_;
  double timeout_seconds_ = 0;
  bool done_ = true;
  ProcessResult result_;
};

// Process::start(argv, options).wait().
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options);

// `name` itself when it holds a '/' (and is executable), else the first executable
// `name` in $PATH, then in `extra_directories`; "" when there is none.
std::string find_executable(const std::string& name,
                            const std::vector<std::string>& extra_directories = {});

// The command line as a shell would take it, for messages and logs: plain words as
// they are, others in single quotes.
std::string command_line_text(const std::vector<std::string>& argv);

}  // namespace stitch::support

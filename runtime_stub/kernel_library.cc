#include "runtime_stub/kernel_library.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <fstream>
#include <list>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "support/subprocess.h"

namespace stitch::runtime {
namespace fs = std::filesystem;
namespace {

// One compiler run may take this long (a large fused kernel through nvcc takes
// seconds to a minute); past it the build fails instead of hanging.
constexpr double kCompileTimeoutSeconds = 600;

// 64-bit FNV-1a: the stamp of a build step's inputs (not a security hash: it only
// tells an unchanged build from a changed one).
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a(uint64_t hash, std::string_view bytes) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string hex(uint64_t value) {
  static const char* digits = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4) text[static_cast<size_t>(i)] = digits[value & 15];
  return text;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return std::nullopt;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

// The last `lines` lines of a log file.
std::string log_tail(const fs::path& path, size_t lines) {
  std::string text = read_file(path).value_or("");
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t start = text.size();
  size_t seen = 0;
  while (start > 0 && !(text[start - 1] == '\n' && ++seen == lines)) --start;
  return text.substr(start);
}

// One compiler run: skipped when `output` exists and its stamp file holds `stamp`.
struct BuildCommand {
  std::vector<std::string> argv;
  fs::path output;
  fs::path log;
  std::string stamp;
  fs::path stamp_path() const { return output.string() + ".stamp"; }
  bool up_to_date() const {
    return fs::exists(output) && read_file(stamp_path()).value_or("") == stamp;
  }
};

// Runs the commands that are not up to date, up to `jobs` at a time; writes each stamp
// after its command succeeded. On a failure, waits for the running ones and reports
// the first failure with its command line and the tail of its output.
Status run_build(const std::vector<BuildCommand>& commands, size_t jobs, bool verbose) {
  std::deque<const BuildCommand*> pending;
  for (const BuildCommand& command : commands) {
    if (command.up_to_date()) continue;
    std::error_code ignored;
    fs::remove(command.stamp_path(), ignored);
    pending.push_back(&command);
  }
  std::list<std::pair<support::Process, const BuildCommand*>> running;
  Status failure;
  while ((failure.is_ok() && !pending.empty()) || !running.empty()) {
    while (failure.is_ok() && !pending.empty() && running.size() < jobs) {
      const BuildCommand* command = pending.front();
      pending.pop_front();
      if (verbose) {
        std::fprintf(stderr, "stitchopt: %s\n", support::command_line_text(command->argv).c_str());
      }
      support::ProcessOptions options;
      options.output_path = command->log.string();
      options.timeout_seconds = kCompileTimeoutSeconds;
      running.emplace_back(support::Process::start(command->argv, options), command);
    }
    if (running.empty()) break;
    auto finished = std::find_if(running.begin(), running.end(),
                                 [](auto& entry) { return entry.first.poll(); });
    if (finished == running.end()) {
      usleep(10000);
      continue;
    }
    const support::ProcessResult result = finished->first.result();
    const BuildCommand* command = finished->second;
    running.erase(finished);
    if (!result.succeeded()) {
      if (failure.is_ok()) {
        failure = Status::invalid_input(
            fs::path(command->argv[0]).filename().string() + " failed (" + result.failure() +
            "):\n  " + support::command_line_text(command->argv) + "\n" +
            log_tail(command->log, 30) + "\n(full output: " + command->log.string() + ")");
      }
      continue;
    }
    std::ofstream stamp(command->stamp_path(), std::ios::binary | std::ios::trunc);
    stamp << command->stamp;
    if (!stamp && failure.is_ok()) {
      failure = Status::internal("cannot write " + command->stamp_path().string());
    }
  }
  return failure;
}

}  // namespace

namespace {

// The compile commands of `sources` (the first `extra` of them recipe.extra_sources,
// the rest kernel files), each stamped with its command line, its text, the shared
// headers and the compiler binary.
Result<std::vector<BuildCommand>> compile_commands(const KernelLibraryRecipe& recipe,
                                                   const std::vector<fs::path>& sources,
                                                   size_t extra) {
  std::error_code error;
  fs::create_directories(recipe.build_dir, error);
  if (error) {
    return Status::invalid_input("cannot create " + recipe.build_dir.string() + ": " +
                                 error.message());
  }
  // The headers every object may include and the compiler binary itself are part of
  // every object's stamp.
  uint64_t shared_hash = kFnvOffset;
  for (const fs::path& header : recipe.headers) {
    shared_hash = fnv1a(shared_hash, header.filename().string());
    shared_hash = fnv1a(shared_hash, read_file(header).value_or(""));
  }
  struct stat compiler_stat {};
  if (stat(recipe.compiler.c_str(), &compiler_stat) == 0) {
    shared_hash = fnv1a(shared_hash, std::to_string(compiler_stat.st_size) + ":" +
                                         std::to_string(compiler_stat.st_mtime));
  }
  std::vector<BuildCommand> compiles;
  for (size_t index = 0; index < sources.size(); ++index) {
    const fs::path& source = sources[index];
    std::optional<std::string> text = read_file(source);
    if (!text) return Status::invalid_input("cannot read kernel source " + source.string());
    BuildCommand command;
    command.output = recipe.build_dir / (source.filename().string() + recipe.object_suffix);
    command.log = recipe.build_dir / (source.filename().string() + ".log");
    command.argv = {recipe.compiler};
    command.argv.insert(command.argv.end(), recipe.compile_flags.begin(),
                        recipe.compile_flags.end());
    if (index >= extra) {
      command.argv.insert(command.argv.end(), recipe.kernel_flags.begin(),
                          recipe.kernel_flags.end());
    }
    command.argv.insert(command.argv.end(),
                        {recipe.phase_flag, source.string(), "-o", command.output.string()});
    uint64_t hash = fnv1a(shared_hash, support::command_line_text(command.argv));
    command.stamp = hex(fnv1a(hash, *text)) + "\n";
    compiles.push_back(std::move(command));
  }
  return compiles;
}

// The kernel files the program's kernel steps run, each once, sorted.
std::vector<fs::path> kernel_sources(const Program& program) {
  std::set<fs::path> sources;
  for (const Step& step : program.steps) {
    if (step.kind == StepKind::kKernel) {
      sources.insert(fs::path(program.kernels_dir) / step.kernel_file);
    }
  }
  return {sources.begin(), sources.end()};
}

Status no_kernels_directory(const Program& program) {
  return Status::invalid_input(program.out_dir +
                               ": has no kernels/ directory (compiled with --no-codegen?): "
                               "recompile the model to run its kernels");
}

size_t build_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

}  // namespace

Result<std::string> build_kernel_library(const Program& program,
                                         const KernelLibraryRecipe& recipe) {
  if (program.kernels_dir.empty()) return no_kernels_directory(program);
  std::vector<fs::path> sources(recipe.extra_sources);
  const std::vector<fs::path> kernels = kernel_sources(program);
  sources.insert(sources.end(), kernels.begin(), kernels.end());
  STITCH_ASSIGN_OR_RETURN(std::vector<BuildCommand> compiles,
                          compile_commands(recipe, sources, recipe.extra_sources.size()));
  BuildCommand link;
  link.output = recipe.build_dir / recipe.library_name;
  link.log = recipe.build_dir / (recipe.library_name + ".log");
  link.argv = {recipe.compiler};
  link.argv.insert(link.argv.end(), recipe.link_flags.begin(), recipe.link_flags.end());
  link.argv.insert(link.argv.end(), {"-o", link.output.string()});
  uint64_t link_hash = kFnvOffset;
  for (const BuildCommand& compile : compiles) {
    link.argv.push_back(compile.output.string());
    link_hash = fnv1a(link_hash, compile.stamp);
  }
  link.stamp = hex(fnv1a(link_hash, support::command_line_text(link.argv))) + "\n";

  Status built = run_build(compiles, build_jobs(), recipe.verbose);
  if (built.is_ok()) built = run_build({link}, 1, recipe.verbose);
  if (!built.is_ok()) {
    return built.with_prefix("building " + link.output.string() + " from " + program.kernels_dir +
                             ": ");
  }
  return link.output.string();
}

Result<std::map<std::string, CompiledSource>> build_kernel_objects(
    const Program& program, const KernelLibraryRecipe& recipe) {
  if (program.kernels_dir.empty()) return no_kernels_directory(program);
  const std::vector<fs::path> sources = kernel_sources(program);
  STITCH_ASSIGN_OR_RETURN(std::vector<BuildCommand> compiles, compile_commands(recipe, sources, 0));
  STITCH_RETURN_IF_ERROR(run_build(compiles, build_jobs(), recipe.verbose)
                             .with_prefix("compiling " + program.kernels_dir + ": "));
  std::map<std::string, CompiledSource> compiled;
  for (size_t i = 0; i < sources.size(); ++i) {
    compiled[fs::relative(sources[i], program.kernels_dir).string()] = {compiles[i].output,
                                                                        compiles[i].log};
  }
  return compiled;
}

}  // namespace stitch::runtime

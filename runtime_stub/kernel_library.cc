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

#include "runtime_stub/build_cache.h"
#include "support/escape.h"
#include "support/private_files.h"
#include "support/sha256.h"
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
// With a `cache` (KernelLibraryRecipe::cache_dir), restored from its entry
// `cache_name` when that is intact, and stored there after it ran.
struct BuildCommand {
  std::vector<std::string> argv;
  fs::path output;
  fs::path log;
  std::string stamp;
  const BuildCache* cache = nullptr;
  std::string cache_name;
  fs::path stamp_path() const { return output.string() + ".stamp"; }
  bool up_to_date() const {
    return fs::exists(output) && read_file(stamp_path()).value_or("") == stamp;
  }
};

Status write_stamp(const BuildCommand& command) {
  return support::write_file_atomically(command.stamp_path(), command.stamp);
}

// The command's output (and log) from its cache entry; false when there is none or
// it is broken (then the command runs and its store replaces the entry).
bool restore_from_cache(const BuildCommand& command, bool verbose) {
  if (command.cache == nullptr) return false;
  Result<std::optional<BuildCacheEntry>> entry = command.cache->lookup(command.cache_name);
  if (!entry.is_ok()) {
    std::fprintf(stderr, "stitchopt: warning: %s; compiling %s instead\n",
                 entry.status().message().c_str(), command.output.filename().c_str());
    return false;
  }
  if (!entry->has_value()) return false;
  if (!support::write_file_atomically(command.output, (*entry)->output).is_ok() ||
      !support::write_file_atomically(command.log, (*entry)->log).is_ok()) {
    return false;
  }
  if (verbose) {
    std::fprintf(stderr, "stitchopt: %s from the build cache %s\n", command.output.c_str(),
                 (command.cache->directory() / command.cache_name).c_str());
  }
  return true;
}

// Keeps a command's fresh output in its cache entry. A cache that cannot be
// written only costs the next build its compile (-v says why).
void store_in_cache(const BuildCommand& command, bool verbose) {
  if (command.cache == nullptr) return;
  std::optional<std::string> output = read_file(command.output);
  if (!output) return;
  const std::string log = read_file(command.log).value_or("");
  Status stored = command.cache->store(command.cache_name, *output, log);
  if (!stored.is_ok() && verbose) {
    std::fprintf(stderr, "stitchopt: not cached: %s\n", stored.message().c_str());
  }
}

// Runs the commands that are not up to date, up to `jobs` at a time (one with a cache
// entry is copied from it instead); writes each stamp after its command succeeded and
// stores a cached command's output. On a failure, waits for the running ones and
// reports the first failure with its command line and the tail of its output.
Status run_build(const std::vector<BuildCommand>& commands, size_t jobs, bool verbose,
                 const fs::path& temp_dir) {
  std::deque<const BuildCommand*> pending;
  for (const BuildCommand& command : commands) {
    if (command.up_to_date()) continue;
    std::error_code ignored;
    fs::remove(command.stamp_path(), ignored);
    if (restore_from_cache(command, verbose)) {
      STITCH_RETURN_IF_ERROR(write_stamp(command));
      continue;
    }
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
      options.temp_directory = temp_dir.string();
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
    Status stamped = write_stamp(*command);
    if (!stamped.is_ok() && failure.is_ok()) failure = stamped;
    store_in_cache(*command, verbose);
  }
  return failure;
}

// The headers every object may include (names and texts) and the compiler binary
// itself (its path, size and mtime): part of every compile command's stamp.
std::string shared_inputs_text(const KernelLibraryRecipe& recipe) {
  std::string text;
  for (const fs::path& header : recipe.headers) {
    text += header.filename().string() + "\n" + read_file(header).value_or("") + "\n";
  }
  struct stat compiler_stat {};
  if (stat(recipe.compiler.c_str(), &compiler_stat) == 0) {
    text += std::to_string(compiler_stat.st_size) + ":" + std::to_string(compiler_stat.st_mtime);
  }
  return text;
}

uint64_t shared_inputs_hash(const KernelLibraryRecipe& recipe) {
  return fnv1a(kFnvOffset, shared_inputs_text(recipe));
}

// Every occurrence of `from` in `text` replaced by `to`.
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// The cache entry's name of a step that does not depend on the program (the
// precompiled header, an extra source): a SHA-256 of what it reads (its command line
// with build_dir taken out, the shared inputs of shared_inputs_text and its source's
// text), then the output's file name. Nothing when the command line still names the
// kernels directory: then it may read headers of OUT/kernels the key does not cover
// (one output's header would be replayed into every later one).
std::optional<std::string> cache_name(const KernelLibraryRecipe& recipe,
                                      const std::string& kernels_dir,
                                      const std::string& shared_inputs, const BuildCommand& command,
                                      const std::string& source_text) {
  const std::string command_line = replace_all(support::command_line_text(command.argv),
                                               recipe.build_dir.string(), "<build_dir>");
  if (command_line.find(kernels_dir) != std::string::npos) return std::nullopt;
  const std::string key = support::sha256_hex("stitchopt build cache 3\n" + command_line + "\n" +
                                              shared_inputs + "\n" + source_text);
  return key.substr(0, 32) + "-" + command.output.filename().string();
}

// The compile commands of `sources` (the first `extra` of them recipe.extra_sources,
// the rest kernel files), each stamped with its command line, its text, the shared
// headers and the compiler binary.
Result<std::vector<BuildCommand>> compile_commands(const KernelLibraryRecipe& recipe,
                                                   const std::vector<fs::path>& sources,
                                                   size_t extra) {
  const uint64_t shared_hash = shared_inputs_hash(recipe);
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

// Writes build_dir/stitch_unity_<i>.cu for at most `units` units (kernel_library.h,
// build_kernel_units) and returns their paths. Each kernel goes, largest first, to the
// unit with the fewest bytes so far (the units take about as long to compile); a
// unit's kernels keep their sorted order, each after "#line 1" naming its file.
Result<std::vector<fs::path>> write_unity_units(const std::vector<fs::path>& kernels, size_t units,
                                                const fs::path& build_dir) {
  if (kernels.empty()) return std::vector<fs::path>();
  units = std::max<size_t>(1, std::min(units, kernels.size()));
  std::vector<std::string> texts;
  for (const fs::path& kernel : kernels) {
    std::optional<std::string> text = read_file(kernel);
    if (!text) return Status::invalid_input("cannot read kernel source " + kernel.string());
    if (!text->empty() && text->back() != '\n') *text += '\n';
    texts.push_back(std::move(*text));
  }
  std::vector<size_t> largest_first(kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) largest_first[k] = k;
  std::stable_sort(largest_first.begin(), largest_first.end(),
                   [&](size_t a, size_t b) { return texts[a].size() > texts[b].size(); });
  std::vector<std::vector<size_t>> members(units);
  std::vector<size_t> bytes(units, 0);
  for (const size_t k : largest_first) {
    const size_t unit =
        static_cast<size_t>(std::min_element(bytes.begin(), bytes.end()) - bytes.begin());
    members[unit].push_back(k);
    bytes[unit] += texts[k].size();
  }
  std::vector<fs::path> sources;
  for (size_t unit = 0; unit < units; ++unit) {
    std::sort(members[unit].begin(), members[unit].end());
    std::string text = "// Unity translation unit of stitchopt (kernel_library.h).\n";
    // Kernel file names are identifiers + ".cu" (program.cc checks kernels.json) and
    // every name a kernel defines starts with its kernel name, so they do not collide.
    for (const size_t k : members[unit]) {
      const std::string path = kernels[k].string();
      text += "#line 1 " + support::source_literal(path, path.size()) + "\n" + texts[k];
    }
    const fs::path source = build_dir / ("stitch_unity_" + std::to_string(unit) + ".cu");
    STITCH_RETURN_IF_ERROR(support::write_file_if_different(source, text));
    sources.push_back(source);
  }
  return sources;
}

size_t build_jobs() { return std::max(1u, std::thread::hardware_concurrency()); }

// Whether `compiler` is GCC (its --version names the Free Software Foundation; clang's
// says "clang"): GCC's precompiled headers are what KernelLibraryRecipe asks for.
bool is_gcc(const std::string& compiler) {
  support::ProcessOptions options;
  options.timeout_seconds = 30;
  const support::ProcessResult result = support::run_process({compiler, "--version"}, options);
  return result.succeeded() && result.output.find("clang") == std::string::npos &&
         result.output.find("Free Software Foundation") != std::string::npos;
}

// The precompiled header's build step (build_dir/stitch_pch.h, which includes the
// recipe's header, compiled as a C++ header with the kernels' flags), or nothing when
// the recipe asks for none, the compiler is not GCC or there are too few kernels for
// it to pay: kMinKernelsForPrecompiledHeader, or one when the build cache is open (a
// precompiled header from the cache costs a copy, about 0.2 s, and saves about 1 s of
// each kernel compile). Adds "-include build_dir/stitch_pch.h" to `recipe`'s kernel
// flags.
Result<std::optional<BuildCommand>> precompiled_header(KernelLibraryRecipe& recipe, size_t kernels,
                                                       bool cached) {
  const size_t enough = cached ? 1 : kMinKernelsForPrecompiledHeader;
  if (recipe.precompiled_header.empty() || kernels < enough || !is_gcc(recipe.compiler)) {
    return std::optional<BuildCommand>();
  }
  const fs::path header = recipe.build_dir / "stitch_pch.h";
  const std::string text =
      "// Precompiled once for every kernel of this build (kernel_library.h).\n"
      "#include \"" +
      recipe.precompiled_header + "\"\n";
  STITCH_RETURN_IF_ERROR(support::write_file_if_different(header, text));
  BuildCommand command;
  command.output = header.string() + ".gch";
  command.log = header.string() + ".log";
  command.argv = {recipe.compiler};
  command.argv.insert(command.argv.end(), recipe.compile_flags.begin(), recipe.compile_flags.end());
  command.argv.insert(command.argv.end(), recipe.kernel_flags.begin(), recipe.kernel_flags.end());
  command.argv.insert(command.argv.end(),
                      {"-x", "c++-header", "-c", header.string(), "-o", command.output.string()});
  const uint64_t hash = fnv1a(shared_inputs_hash(recipe), support::command_line_text(command.argv));
  command.stamp = hex(fnv1a(hash, text)) + "\n";
  // -Winvalid-pch: a kernel's log says so when GCC could not use it (it then parses
  // the header itself: slower, same code).
  recipe.kernel_flags.insert(recipe.kernel_flags.end(),
                             {"-Winvalid-pch", "-include", header.string()});
  return std::optional<BuildCommand>(std::move(command));
}

// The compilers' TMPDIR: build_dir/tmp, emptied first. Their temporary files stay in
// the output directory, and a compiler killed by a timeout or an interrupt leaves
// nothing in the user's /tmp (what it left is gone at the next build).
Result<fs::path> compiler_temp_directory(const fs::path& build_dir) {
  const fs::path temp = build_dir / "tmp";
  std::error_code ignored;
  fs::remove_all(temp, ignored);
  STITCH_RETURN_IF_ERROR(support::prepare_build_directory(temp, true));
  return temp;
}

}  // namespace

Result<std::string> build_kernel_library(const Program& program, const KernelLibraryRecipe& given) {
  if (program.kernels_dir.empty()) return no_kernels_directory(program);
  KernelLibraryRecipe recipe = given;
  STITCH_RETURN_IF_ERROR(support::prepare_build_directory(recipe.build_dir, true));
  STITCH_ASSIGN_OR_RETURN(const fs::path temp, compiler_temp_directory(recipe.build_dir));
  std::optional<BuildCache> cache;
  if (!recipe.cache_dir.empty()) {
    Result<BuildCache> opened = BuildCache::open(recipe.cache_dir);
    if (opened.is_ok()) {
      cache = std::move(opened).value();
    } else {
      std::fprintf(stderr, "stitchopt: warning: %s; building without it\n",
                   opened.status().message().c_str());
    }
  }
  std::vector<fs::path> sources(recipe.extra_sources);
  std::vector<fs::path> kernels = kernel_sources(program);
  if (recipe.unity) {
    STITCH_ASSIGN_OR_RETURN(kernels, write_unity_units(kernels, build_jobs(), recipe.build_dir));
  }
  STITCH_ASSIGN_OR_RETURN(std::optional<BuildCommand> pch,
                          precompiled_header(recipe, kernels.size(), cache.has_value()));
  // After the header's command: a unit's kernels find their quoted includes (the
  // prelude) in the kernels directory, as they would beside themselves.
  if (recipe.unity) {
    recipe.kernel_flags.insert(recipe.kernel_flags.end(), {"-iquote", program.kernels_dir});
  }
  sources.insert(sources.end(), kernels.begin(), kernels.end());
  STITCH_ASSIGN_OR_RETURN(std::vector<BuildCommand> compiles,
                          compile_commands(recipe, sources, recipe.extra_sources.size()));
  if (pch) {
    // Each kernel object depends on the precompiled state: its stamp holds the header's.
    for (size_t i = recipe.extra_sources.size(); i < compiles.size(); ++i) {
      compiles[i].stamp = hex(fnv1a(fnv1a(kFnvOffset, compiles[i].stamp), pch->stamp)) + "\n";
    }
  }
  if (cache) {
    // The steps the kernels do not change: the precompiled header and the extra sources.
    const std::string shared = shared_inputs_text(recipe);
    auto use_cache = [&](BuildCommand& command, const fs::path& source) {
      std::optional<std::string> name =
          cache_name(recipe, program.kernels_dir, shared, command, read_file(source).value_or(""));
      if (!name) return;
      command.cache = &*cache;
      command.cache_name = *name;
    };
    if (pch) use_cache(*pch, recipe.build_dir / "stitch_pch.h");
    for (size_t i = 0; i < recipe.extra_sources.size(); ++i) {
      use_cache(compiles[i], recipe.extra_sources[i]);
    }
  }
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

  Status built = pch ? run_build({*pch}, 1, recipe.verbose, temp) : Status::ok();
  if (built.is_ok()) built = run_build(compiles, build_jobs(), recipe.verbose, temp);
  if (built.is_ok()) built = run_build({link}, 1, recipe.verbose, temp);
  if (!built.is_ok()) {
    return built.with_prefix("building " + link.output.string() + " from " + program.kernels_dir +
                             ": ");
  }
  return link.output.string();
}

Result<std::vector<CompiledSource>> build_kernel_units(const Program& program,
                                                       const KernelLibraryRecipe& recipe,
                                                       size_t units) {
  if (program.kernels_dir.empty()) return no_kernels_directory(program);
  STITCH_RETURN_IF_ERROR(support::prepare_build_directory(recipe.build_dir, true));
  STITCH_ASSIGN_OR_RETURN(const fs::path temp, compiler_temp_directory(recipe.build_dir));
  STITCH_ASSIGN_OR_RETURN(std::vector<fs::path> sources,
                          write_unity_units(kernel_sources(program), units, recipe.build_dir));
  STITCH_ASSIGN_OR_RETURN(std::vector<BuildCommand> compiles, compile_commands(recipe, sources, 0));
  STITCH_RETURN_IF_ERROR(run_build(compiles, build_jobs(), recipe.verbose, temp)
                             .with_prefix("compiling " + program.kernels_dir + ": "));
  std::vector<CompiledSource> result;
  for (const BuildCommand& compile : compiles) result.push_back({compile.output, compile.log});
  return result;
}

}  // namespace stitch::runtime

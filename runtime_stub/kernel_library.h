// Building a shared library from the kernel sources of a Program, for both backends:
// the CUDA backend compiles OUT/kernels/*.cu with nvcc into libstitch_kernels.so, the
// host backend (--emulate) compiles the same files as C++ against the CUDA emulation
// layer. One compiler run per source, in parallel; each object is reused while its
// stamp (a hash of the command line, the source, the shared headers and the compiler
// binary's size and mtime) is unchanged, then one link. A failure names the command
// line and shows the tail of its output (full output in BUILD_DIR/<name>.log).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ir/core/status.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {

struct KernelLibraryRecipe {
  std::string compiler;                              // absolute path (support::find_executable)
  std::vector<std::string> compile_flags;            // then "-c SOURCE -o OBJECT"
  std::vector<std::string> kernel_flags;             // after compile_flags, for kernel sources only
  std::vector<std::string> link_flags;               // then "-o LIBRARY OBJECTS..."
  std::vector<std::filesystem::path> extra_sources;  // compiled and linked too
  std::vector<std::filesystem::path> headers;        // in every object's stamp
  std::filesystem::path build_dir;                   // objects, logs, stamps and the library
  std::string library_name;                          // e.g. "libstitch_kernels.so"
  bool verbose = false;                              // print every command run
  // Each source is compiled by "PHASE_FLAG SOURCE -o SOURCE_NAME + OBJECT_SUFFIX".
  std::string phase_flag = "-c";
  std::string object_suffix = ".o";
};

// One compiled source: its output and the log holding the compiler's output (kept
// while the output is up to date, so a reader sees what the compiler printed).
struct CompiledSource {
  std::filesystem::path output;
  std::filesystem::path log;
};

// The sources of the program's kernel steps (each once, sorted) with
// recipe.extra_sources, compiled and linked into build_dir/library_name; returns its
// path.
Result<std::string> build_kernel_library(const Program& program, const KernelLibraryRecipe& recipe);

// The compile half alone, for the kernel sources only (recipe.extra_sources,
// link_flags and library_name are not used): each kernel step's file compiled once,
// by its kernel_file (relative to Program::kernels_dir). `profile` compiles cubins
// this way (nvcc -cubin).
Result<std::map<std::string, CompiledSource>> build_kernel_objects(
    const Program& program, const KernelLibraryRecipe& recipe);

}  // namespace stitch::runtime

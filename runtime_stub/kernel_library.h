// Building a shared library from the kernel sources of a Program, for both backends:
// the CUDA backend compiles OUT/kernels/*.cu with nvcc into libstitch_kernels.so, the
// host backend (--emulate) compiles the same files as C++ against the CUDA emulation
// layer. One compiler run per source (or per unity unit of kernel sources, below), in
// parallel; each object is reused while its stamp (a hash of the command line, the
// source, the shared headers and the compiler binary's size and mtime) is unchanged,
// then one link. A failure names the command line and shows the tail of its output
// (full output in BUILD_DIR/<name>.log).
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
  // A header of build_dir that every kernel source includes first (the emulation's
  // stitch_emu.h, which costs about 0.6 s of a 0.9 s kernel compile). When set, the
  // compiler is GCC and there are at least kMinKernelsForPrecompiledHeader kernel
  // compiles (sources, or unity units; one when the build cache below is open), it is
  // precompiled once (build_dir/stitch_pch.h.gch, with compile_flags and kernel_flags)
  // and each kernel compile includes it first (-include), so that GCC loads the
  // precompiled state instead of parsing it again.
  std::string precompiled_header;
  // Opt-in (empty: off): a directory of the user's where the steps that do not depend
  // on the program (the precompiled header and extra_sources) are kept by a SHA-256 of
  // their inputs with build_dir taken out of the command line, so that another output
  // directory copies them instead of compiling them again (host --emulate:
  // $STITCH_BUILD_CACHE). Only steps whose command line does not name the kernels
  // directory are cached (their key must cover every header they read). Entries are
  // verified before use and a cache others can write is not used (build_cache.h).
  // Nothing is written there otherwise. A copied object's debug info names the
  // directory it was first compiled in.
  std::filesystem::path cache_dir;
  // When set, the kernel sources are compiled as at most one unity translation unit per
  // core (build_dir/stitch_unity_<i>.cu, see build_kernel_units), with "-iquote
  // KERNELS_DIR" after the kernel flags so that their quoted includes still resolve.
  // For compilers whose cost is per process rather than per kernel: the emulation's
  // 32 small counting kernels of bert --unfused compile in 1.9 s as one unit, 13.9 s
  // one by one (loading the 62 MB precompiled header and writing its debug
  // information is most of each run). An edited kernel recompiles its unit.
  bool unity = false;
};

inline constexpr size_t kMinKernelsForPrecompiledHeader = 4;

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
// link_flags, library_name and precompiled_header are not used), in at most `units`
// unity translation units: build_dir/stitch_unity_<i>.cu holds a share of the kernel
// files (balanced by size, each unit's in sorted order), each after a #line directive
// naming it (line info and diagnostics keep the kernel file's path), and the units
// compile in parallel. For tools whose cost is per process, not per kernel: `profile`
// gets the cubins and their SASS this way (nvcc -cubin takes 1.2 s for 32 small
// kernels as one unit, 18 s one by one). Sound because every name a kernel file defines starts with
// its kernel name (emit: <kernel>_kernel, <kernel>_launch, <kernel>_workspace_bytes).
Result<std::vector<CompiledSource>> build_kernel_units(const Program& program,
                                                       const KernelLibraryRecipe& recipe,
                                                       size_t units);

}  // namespace stitch::runtime

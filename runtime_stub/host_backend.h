// HostBackend: runs a Program without a GPU.
//
// Memory is host memory (256-byte aligned). Two modes:
//   - reference: every step is placed on the host, so the executor evaluates each
//     step's body with the reference interpreter, in plan order, in the planned arena;
//   - emulated: kernel steps run the generated .cu of OUT/kernels/, compiled as C++
//     against the emulation layer (emit/cuda/stitch_emu.h, embedded in stitchopt) into
//     one shared library, OUT/kernels/emu_build/libstitch_kernels_emu.so, loaded with
//     dlopen; the launchers are the kernel contract's extern "C" functions, called
//     exactly as on a GPU. Library and host steps use the reference interpreter.
// Timing is the wall clock (everything runs synchronously).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "artifact/stitch_emu_counters.h"
#include "runtime_stub/backend.h"

namespace stitch::runtime {

// Hardware counters of emulated kernel launches (artifact/stitch_emu_counters.h): when
// HostBackendOptions::counters is set, the kernels are compiled into a second library,
// OUT/kernels/emu_counters_build/, with the counters on and ThreadSanitizer's
// instrumentation as the source of every load and store (docs/perf-model.md), and each
// kernel step's launch is counted with its inputs, outputs and workspace as the global
// regions. `limits` sizes cooperative grids as the device would (registers_per_thread
// from `kernel_registers` by kernel name when listed).
struct KernelCounterOptions {
  StitchEmuLimits limits{};
  std::map<std::string, int> kernel_registers;
  // After each launch: its counters and access sites (offsets into the library).
  std::function<void(const Step&, const StitchEmuCounters&, const std::vector<StitchEmuSite>&)>
      on_step;
  // The counting library's path, once built (addr2line maps the sites with it; it is
  // compiled with -g).
  std::function<void(const std::string&)> on_library;
};

struct HostBackendOptions {
  bool emulate = false;
  std::string cxx;  // C++ compiler for emulation; empty: $CXX, else the build's compiler
  bool verbose = false;
  std::optional<KernelCounterOptions> counters;  // needs emulate
};

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options);

}  // namespace stitch::runtime

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

#include <map>
#include <memory>
#include <string>

#include "runtime_stub/backend.h"

namespace stitch::runtime {

struct HostBackendOptions {
  bool emulate = false;
  std::string cxx;  // C++ compiler for emulation; empty: $CXX, else the build's compiler
  bool verbose = false;
};

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& options);

}  // namespace stitch::runtime

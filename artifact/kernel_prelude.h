// The kernel prelude, OUT/kernels/stitch_prelude.cuh: the fixed header every generated
// kernel includes first (the kernel contract, docs/codegen.md). It is part of what an
// output directory holds, so its text lives here, below both of its users: emit/
// writes it into OUT/kernels/ (kernel_directory.cc), and the CUDA plugin
// (runtime_stub/cuda/calibrate.cc) times the grid barrier cut out of it, so that what
// calibrate measures is what the emitter writes.
//
// The source stays emit/cuda/stitch_prelude.cuh, beside the emulation layer it pairs
// with; artifact/CMakeLists.txt embeds that file as a string literal at build time
// (a change to it rebuilds the embedding), so the file is the single source of truth.
#pragma once

#include <string_view>

namespace stitch::artifact {

// The embedded prelude text; empty when the build had no emit/cuda/stitch_prelude.cuh.
std::string_view kernel_prelude();

}  // namespace stitch::artifact

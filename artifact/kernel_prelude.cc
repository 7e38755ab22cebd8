// The embedded kernel prelude (see kernel_prelude.h).
#include "artifact/kernel_prelude.h"

// Defined in the .cc that artifact/CMakeLists.txt generates from
// emit/cuda/stitch_prelude.cuh.
extern const char* const kStitchPreludeText;

namespace stitch::artifact {

std::string_view kernel_prelude() { return kStitchPreludeText; }

}  // namespace stitch::artifact

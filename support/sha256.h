// SHA-256 of a file's bytes: the report's model fingerprint, and the link from
// kernels/kernels.json to the model.fused.onnx it was written with.
#pragma once

#include <string>
#include <string_view>

namespace stitch::support {

// Lower-case hex digest (FIPS 180-4).
std::string sha256_hex(std::string_view bytes);

}  // namespace stitch::support

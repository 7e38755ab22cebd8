// SHA-256 of a file's bytes, for the report's model fingerprint.
#pragma once

#include <string>
#include <string_view>

namespace stitch::emit {

// Lower-case hex digest (FIPS 180-4).
std::string sha256_hex(std::string_view bytes);

}  // namespace stitch::emit

// A fast 64-bit checksum of bytes: tells an intact file from a corrupted or truncated
// one (the build cache's entries, runtime_stub/build_cache.h). Not a cryptographic
// hash: where a digest must resist a forger, use sha256.h.
#pragma once

#include <cstdint>
#include <string_view>

namespace stitch::support {

// XXH64 with seed 0 (Yann Collet's xxHash, the 64-bit variant: four lanes over
// 32-byte stripes, merged and avalanched, the length and tail mixed in), written
// here: the same value on every machine. Several GB/s, where sha256_hex runs at about
// 0.1 GB/s.
uint64_t checksum64(std::string_view bytes);

}  // namespace stitch::support

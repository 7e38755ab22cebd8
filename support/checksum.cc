// A fast 64-bit checksum (checksum.h).
#include "support/checksum.h"

#include <bit>
#include <cstring>

namespace stitch::support {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ULL;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4FULL;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ULL;
constexpr uint64_t kPrime4 = 0x85EBCA77C2B2AE63ULL;
constexpr uint64_t kPrime5 = 0x27D4EB2F165667C5ULL;

uint64_t rotate_left(uint64_t value, int bits) { return (value << bits) | (value >> (64 - bits)); }

// Little-endian on every machine, so an entry checks the same wherever it was written.
uint64_t load64(const unsigned char* bytes) {
  uint64_t value;
  std::memcpy(&value, bytes, sizeof value);
  if constexpr (std::endian::native == std::endian::big) value = __builtin_bswap64(value);
  return value;
}

uint64_t round(uint64_t lane, uint64_t word) {
  return rotate_left(lane + word * kPrime2, 31) * kPrime1;
}

uint64_t merge(uint64_t hash, uint64_t lane) { return (hash ^ round(0, lane)) * kPrime1 + kPrime4; }

}  // namespace

uint64_t checksum64(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const size_t size = text.size();
  size_t at = 0;
  uint64_t hash;
  if (size >= 32) {
    uint64_t lanes[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
    for (; at + 32 <= size; at += 32) {
      for (int lane = 0; lane < 4; ++lane)
        lanes[lane] = round(lanes[lane], load64(bytes + at + 8 * lane));
    }
    hash = rotate_left(lanes[0], 1) + rotate_left(lanes[1], 7) + rotate_left(lanes[2], 12) +
           rotate_left(lanes[3], 18);
    for (const uint64_t lane : lanes) hash = merge(hash, lane);
  } else {
    hash = kPrime5;
  }
  hash += size;
  for (; at + 8 <= size; at += 8) {
    hash = rotate_left(hash ^ round(0, load64(bytes + at)), 27) * kPrime1 + kPrime4;
  }
  for (; at < size; ++at) hash = rotate_left(hash ^ (bytes[at] * kPrime5), 11) * kPrime1;
  hash ^= hash >> 33;
  hash *= kPrime2;
  hash ^= hash >> 29;
  hash *= kPrime3;
  hash ^= hash >> 32;
  return hash;
}

}  // namespace stitch::support

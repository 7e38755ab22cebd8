// checksum64: stable across machines (pinned values: cache entries written on one
// machine are checked on another), and it tells every single-bit flip and every
// truncation of a buffer from the original.
#include "support/checksum.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace stitch::support {
namespace {

std::string pattern(size_t size) {
  std::string bytes(size, '\0');
  uint32_t state = 12345;
  for (char& c : bytes) {
    state = state * 1103515245u + 12345u;
    c = static_cast<char>(state >> 24);
  }
  return bytes;
}

// XXH64's published values for "" and "abc" (seed 0), and one over 1000 bytes (more
// than 32: the four lanes) recorded from this implementation.
TEST(Checksum64Test, PinnedValues) {
  EXPECT_EQ(checksum64(""), 0xef46db3751d8e999ULL);
  EXPECT_EQ(checksum64("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(checksum64(pattern(1000)), 0x82990bb9c6ba65e2ULL);
}

TEST(Checksum64Test, EveryBitFlipChangesIt) {
  const std::string original = pattern(300);
  const uint64_t sum = checksum64(original);
  for (size_t byte = 0; byte < original.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string flipped = original;
      flipped[byte] = static_cast<char>(flipped[byte] ^ (1 << bit));
      ASSERT_NE(checksum64(flipped), sum) << "byte " << byte << " bit " << bit;
    }
  }
}

TEST(Checksum64Test, EveryPrefixDiffers) {
  const std::string bytes = pattern(200);
  std::set<uint64_t> seen;
  for (size_t size = 0; size <= bytes.size(); ++size) {
    EXPECT_TRUE(seen.insert(checksum64(std::string_view(bytes).substr(0, size))).second) << size;
  }
  // Zeros of different lengths too (the length is mixed in).
  for (size_t size = 1; size <= 80; ++size) {
    EXPECT_TRUE(seen.insert(checksum64(std::string(size, '\0'))).second) << size;
  }
}

}  // namespace
}  // namespace stitch::support

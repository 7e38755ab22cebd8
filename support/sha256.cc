// SHA-256 (FIPS 180-4), kept here so the binary needs no crypto library.
#include "support/sha256.h"

#include <array>
#include <cstdint>

namespace stitch::support {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotate_right(uint32_t value, int bits) { return (value >> bits) | (value << (32 - bits)); }

void compress(std::array<uint32_t, 8>& state, const uint8_t* block) {
  std::array<uint32_t, 64> schedule{};
  for (int i = 0; i < 16; ++i) {
    schedule[i] = static_cast<uint32_t>(block[4 * i]) << 24 |
                  static_cast<uint32_t>(block[4 * i + 1]) << 16 |
                  static_cast<uint32_t>(block[4 * i + 2]) << 8 | block[4 * i + 3];
  }
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotate_right(schedule[i - 15], 7) ^ rotate_right(schedule[i - 15], 18) ^
                  (schedule[i - 15] >> 3);
    uint32_t s1 = rotate_right(schedule[i - 2], 17) ^ rotate_right(schedule[i - 2], 19) ^
                  (schedule[i - 2] >> 10);
    schedule[i] = schedule[i - 16] + s0 + schedule[i - 7] + s1;
  }
  std::array<uint32_t, 8> w = state;
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotate_right(w[4], 6) ^ rotate_right(w[4], 11) ^ rotate_right(w[4], 25);
    uint32_t choose = (w[4] & w[5]) ^ (~w[4] & w[6]);
    uint32_t t1 = w[7] + s1 + choose + kRoundConstants[i] + schedule[i];
    uint32_t s0 = rotate_right(w[0], 2) ^ rotate_right(w[0], 13) ^ rotate_right(w[0], 22);
    uint32_t majority = (w[0] & w[1]) ^ (w[0] & w[2]) ^ (w[1] & w[2]);
    uint32_t t2 = s0 + majority;
    w = {t1 + t2, w[0], w[1], w[2], w[3] + t1, w[4], w[5], w[6]};
  }
  for (int i = 0; i < 8; ++i) state[i] += w[i];
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<uint32_t, 8> state = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  size_t full_blocks = bytes.size() / 64;
  for (size_t i = 0; i < full_blocks; ++i) compress(state, data + 64 * i);
  // Padding: 0x80, zeros, then the bit length big-endian, in one or two blocks.
  std::array<uint8_t, 128> tail{};
  size_t rest = bytes.size() - 64 * full_blocks;
  for (size_t i = 0; i < rest; ++i) tail[i] = data[64 * full_blocks + i];
  tail[rest] = 0x80;
  size_t tail_size = rest + 1 + 8 <= 64 ? 64 : 128;
  uint64_t bit_length = static_cast<uint64_t>(bytes.size()) * 8;
  for (int i = 0; i < 8; ++i) {
    tail[tail_size - 1 - i] = static_cast<uint8_t>(bit_length >> (8 * i));
  }
  for (size_t offset = 0; offset < tail_size; offset += 64) compress(state, tail.data() + offset);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string digest;
  digest.reserve(64);
  for (uint32_t word : state) {
    for (int shift = 28; shift >= 0; shift -= 4) digest.push_back(kHex[(word >> shift) & 0xf]);
  }
  return digest;
}

}  // namespace stitch::support

// Reachability within a window of topological positions (windowed_reachability.h).
#include "ir/core/windowed_reachability.h"

#include <algorithm>

#include "ir/core/status.h"

namespace stitch::ir {

WindowedReachability::WindowedReachability(
    const std::vector<std::vector<int32_t>>& successors_by_position, int64_t memory_bytes) {
  auto count = static_cast<int64_t>(successors_by_position.size());
  int64_t window = count == 0 ? 64 : std::min(count, 8 * memory_bytes / count);
  words_ = std::max<int64_t>(1, (window + 63) / 64);
  window_ = words_ * 64;
  bits_.assign(static_cast<size_t>(count * words_), 0);
  for (int64_t u = count - 1; u >= 0; --u) {
    uint64_t* row = row_at(u);
    for (int32_t s : successors_by_position[static_cast<size_t>(u)]) {
      int64_t distance = s - u;
      STITCH_CHECK(distance > 0) << "successor before its producer in the topological order";
      if (distance > window_) continue;
      set_bit(row, distance - 1);
      // Row(s) bit j is position s + 1 + j = u + 1 + (j + distance).
      const uint64_t* source = row_at(s);
      int64_t word_shift = distance / 64;
      int bit_shift = static_cast<int>(distance % 64);
      for (int64_t word = 0; word + word_shift < words_; ++word) {
        uint64_t bits = source[word];
        if (bits == 0) continue;
        row[word + word_shift] |= bits << bit_shift;
        if (bit_shift != 0 && word + word_shift + 1 < words_) {
          row[word + word_shift + 1] |= bits >> (64 - bit_shift);
        }
      }
    }
  }
}

bool WindowedReachability::reaches_any(int32_t from_position, int32_t mask_start,
                                       const std::vector<uint64_t>& mask) const {
  const uint64_t* row = row_at(from_position);
  // Row bit i is position from + 1 + i; mask bit j is position mask_start + j.
  int64_t offset = static_cast<int64_t>(from_position) + 1 - mask_start;  // j = i + offset
  auto mask_bits_at = [&](int64_t j) -> uint64_t {  // 64 mask bits starting at bit j
    if (j <= -64) return 0;
    if (j < 0) return get_mask_word(mask, 0) << (-j);
    int64_t word = j / 64;
    int shift = static_cast<int>(j % 64);
    uint64_t low = get_mask_word(mask, word) >> shift;
    if (shift == 0) return low;
    return low | (get_mask_word(mask, word + 1) << (64 - shift));
  };
  auto mask_words = static_cast<int64_t>(mask.size());
  for (int64_t word = 0; word < words_; ++word) {
    int64_t j = word * 64 + offset;
    if (j >= mask_words * 64) break;
    if ((row[word] & mask_bits_at(j)) != 0) return true;
  }
  return false;
}

}  // namespace stitch::ir

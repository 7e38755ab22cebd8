// Reachability between nodes near each other in a topological order, in memory the
// caller bounds: fusion's candidate search asks whether a path leaves a pattern and
// re-enters it (convexity) millions of times, mostly between nodes a few positions
// apart, where ir::Reachability's full relation would take N^2 bits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stitch::ir {

// Reachability restricted to a window of the next `window` topological positions:
// row(u) bit i says whether the node at position pos(u) + 1 + i is reachable from u.
// Paths only go forward in a topological order, so a query whose target lies within
// the window is exact; one beyond it is unknown. With window >= N it is the full
// reachability relation.
class WindowedReachability {
 public:
  enum class Answer { kNo, kYes, kUnknown };

  // `successors_by_position[p]`: positions of the successors of the node at p.
  WindowedReachability(const std::vector<std::vector<int32_t>>& successors_by_position,
                       int64_t memory_bytes);

  int64_t window() const { return window_; }

  Answer reaches(int32_t from_position, int32_t to_position) const {
    int64_t distance = static_cast<int64_t>(to_position) - from_position;
    if (distance <= 0) return Answer::kNo;
    if (distance > window_) return Answer::kUnknown;
    const uint64_t* row = row_at(from_position);
    int64_t bit = distance - 1;
    return ((row[bit / 64] >> (bit % 64)) & 1u) != 0 ? Answer::kYes : Answer::kNo;
  }

  // Whether the node at `from_position` reaches any position set in `mask`, where
  // mask bit i stands for position `mask_start + i` and every set position lies
  // within the window of `from_position`.
  bool reaches_any(int32_t from_position, int32_t mask_start,
                   const std::vector<uint64_t>& mask) const;

 private:
  static uint64_t get_mask_word(const std::vector<uint64_t>& mask, int64_t word) {
    return word >= 0 && word < static_cast<int64_t>(mask.size()) ? mask[static_cast<size_t>(word)]
                                                                 : 0;
  }
  static void set_bit(uint64_t* row, int64_t bit) { row[bit / 64] |= uint64_t{1} << (bit % 64); }
  uint64_t* row_at(int64_t position) { return &bits_[static_cast<size_t>(position * words_)]; }
  const uint64_t* row_at(int64_t position) const {
    return &bits_[static_cast<size_t>(position * words_)];
  }

  int64_t words_ = 1;
  int64_t window_ = 64;
  std::vector<uint64_t> bits_;
};

}  // namespace stitch::ir

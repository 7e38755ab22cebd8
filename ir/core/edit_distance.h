// Levenshtein distance, for "did you mean" suggestions in messages.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::ir {

// Insertions, deletions and substitutions needed to turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` when it is fewer than `max_distance` edits away
// (the first of equally close ones), for "did you mean X?".
std::optional<std::string> closest_match(std::string_view name,
                                         const std::vector<std::string>& candidates,
                                         size_t max_distance = 4);

}  // namespace stitch::ir

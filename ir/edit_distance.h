// Levenshtein distance, for "did you mean" suggestions in messages.
#pragma once

#include <cstddef>
#include <string_view>

namespace stitch::ir {

// Insertions, deletions and substitutions needed to turn `a` into `b`.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace stitch::ir

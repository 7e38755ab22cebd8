// Small string helpers shared by messages (the importer's, the symbolic-dims
// explanation) and by lists given in one string (--passes, node scopes).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace stitch::support {

// parts[0] + separator + parts[1] + ...; "" for no parts.
inline std::string join(const std::vector<std::string>& parts, std::string_view separator) {
  std::string joined;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += separator;
    joined += parts[i];
  }
  return joined;
}

// The pieces of `text` between `separator`s with `trim`'s characters cut from both
// ends, empty pieces dropped: split("a, ,b", ',', " ") is {"a", "b"}.
inline std::vector<std::string> split(std::string_view text, char separator,
                                      std::string_view trim = "") {
  std::vector<std::string> pieces;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view piece = text.substr(start, end - start);
    const size_t first = piece.find_first_not_of(trim);
    if (first != std::string_view::npos) {
      pieces.emplace_back(piece.substr(first, piece.find_last_not_of(trim) - first + 1));
    }
    start = end + 1;
  }
  return pieces;
}

}  // namespace stitch::support

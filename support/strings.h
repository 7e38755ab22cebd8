// Small string helpers shared by messages (the importer's, the symbolic-dims
// explanation).
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

}  // namespace stitch::support

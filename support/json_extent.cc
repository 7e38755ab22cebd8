// JSON nesting depth and item count in one pass (see json_extent.h).
#include "support/json_extent.h"

#include <algorithm>

namespace stitch::support {

JsonExtent measure_json(std::string_view text) {
  JsonExtent extent;
  size_t depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        ++extent.items;
        extent.depth = std::max(extent.depth, ++depth);
        break;
      case ']':
      case '}':
        depth -= depth > 0 ? 1 : 0;
        break;
      case ',':
      case ':':
        ++extent.items;
        break;
      default:
        break;
    }
  }
  return extent;
}

}  // namespace stitch::support

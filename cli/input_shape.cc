// Parsing of --input-shape NAME=d0,d1,... flags.
#include "cli/input_shape.h"

#include <charconv>

namespace stitch::cli {

Status parse_input_shape(const std::string& flag,
                         std::map<std::string, std::vector<int64_t>>& shapes) {
  auto usage = [&](const std::string& why) {
    return Status::invalid_input("--input-shape " + flag + ": " + why +
                                 "; write it as NAME=d0,d1,... e.g. --input-shape input_ids=1,128");
  };
  size_t equals = flag.rfind('=');
  if (equals == std::string::npos || equals == 0) return usage("expected NAME=dims");
  std::string name = flag.substr(0, equals);
  std::string dims_text = flag.substr(equals + 1);
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start < dims_text.size()) {
    size_t comma = dims_text.find(',', start);
    if (comma == std::string::npos) comma = dims_text.size();
    int64_t dim = 0;
    const char* first = dims_text.data() + start;
    const char* last = dims_text.data() + comma;
    auto [end, error] = std::from_chars(first, last, dim);
    if (error != std::errc() || end != last || first == last || dim < 0) {
      return usage("dim \"" + dims_text.substr(start, comma - start) +
                   "\" is not a non-negative integer");
    }
    dims.push_back(dim);
    start = comma + 1;
    if (comma + 1 == dims_text.size()) return usage("trailing comma");
  }
  if (shapes.contains(name)) return usage("input \"" + name + "\" is given twice");
  shapes.emplace(std::move(name), std::move(dims));
  return Status::ok();
}

}  // namespace stitch::cli

// How much a JSON text would become once parsed, measured without parsing it.
//
// nlohmann::json spends 35 to 110 bytes per value: 64 MiB of "{}," parse into 2.3 GB,
// and 60 MiB of nested "[[[...]]]" into 2.4 GB. A size cap alone does not bound what
// a hostile file (an edited OUT/kernels/kernels.json) costs, so a reader measures the
// text first and refuses one that holds far more values, or nests far deeper, than
// anything stitchopt writes. One linear pass, no allocation.
#pragma once

#include <cstddef>
#include <string_view>

namespace stitch::support {

struct JsonExtent {
  // The deepest nesting of lists and objects ("[[1]]": 2).
  size_t depth = 0;
  // Lists and objects opened, plus the commas and colons between their members,
  // outside strings: about one per value of the parsed document, which is what its
  // memory grows with.
  size_t items = 0;
};

// Measures `text` as JSON's grammar reads it (strings with their escapes skipped);
// the text need not be valid JSON.
JsonExtent measure_json(std::string_view text);

}  // namespace stitch::support

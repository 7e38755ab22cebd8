// Parsing of --input-shape NAME=d0,d1,... flags.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/core/status.h"

namespace stitch::cli {

// "input_ids=1,128" -> {"input_ids", {1, 128}}; "scalar=" gives rank 0. The name is
// everything before the last '=' so names containing '=' still work.
Status parse_input_shape(const std::string& flag,
                         std::map<std::string, std::vector<int64_t>>& shapes);

}  // namespace stitch::cli

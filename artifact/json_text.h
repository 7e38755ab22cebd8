// The JSON files stitchopt writes (report.json, kernels.json): model strings in them
// may hold bytes that are not UTF-8, which JSON cannot carry and nlohmann::json
// refuses with an exception. dump_json() writes every string, keys included, through
// support::valid_utf8 (each such byte as the text \xNN), then dumps with two-space
// indentation and a final newline.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stitch::artifact {

// Takes the document by value and fixes its strings in place: callers move it in.
std::string dump_json(nlohmann::ordered_json json);

}  // namespace stitch::artifact

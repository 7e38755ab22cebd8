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

// What kind of JSON value a file holds where another was expected, for "expected a
// number, got a string": "null", "a boolean", "a string", "an integer", "a number",
// "a list", "an object". The readers of kernels.json and of device profiles say it.
std::string json_kind(const nlohmann::json& value);

}  // namespace stitch::artifact

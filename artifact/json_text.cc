// JSON text with every string made valid UTF-8 (json_text.h).
#include "artifact/json_text.h"

#include <string_view>
#include <utility>

#include "support/escape.h"

namespace stitch::artifact {
namespace {

bool is_valid_utf8(std::string_view text) {
  for (size_t at = 0; at < text.size();) {
    const size_t length = support::utf8_sequence_length(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

// In place, not into a copy: report.json reaches tens of megabytes (a 100k-node
// chain left unfused: 95 MB of text, a 440 MB tree), and a sanitized copy of the
// tree was a quarter of the compile's peak memory. The documents are a few levels
// deep (report.json: 4), so recursion is bounded by our own schema, not by the model.
void make_strings_valid(nlohmann::ordered_json& json) {
  if (json.is_string()) {
    std::string& text = json.get_ref<std::string&>();
    if (!is_valid_utf8(text)) text = support::valid_utf8(text);
    return;
  }
  if (json.is_array()) {
    for (nlohmann::ordered_json& item : json) make_strings_valid(item);
    return;
  }
  if (!json.is_object()) return;
  bool keys_valid = true;
  for (auto& [key, value] : json.items()) {
    keys_valid = keys_valid && is_valid_utf8(key);
    make_strings_valid(value);
  }
  if (keys_valid) return;
  // Keys cannot change in place; two keys that read the same once made valid keep
  // the first one's position and the last one's value.
  nlohmann::ordered_json rebuilt = nlohmann::ordered_json::object();
  for (auto& [key, value] : json.items()) rebuilt[support::valid_utf8(key)] = std::move(value);
  json = std::move(rebuilt);
}

}  // namespace

std::string dump_json(nlohmann::ordered_json json) {
  make_strings_valid(json);
  std::string text = json.dump(2);
  text += '\n';
  return text;
}

std::string json_kind(const nlohmann::json& value) {
  using nlohmann::json;
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

}  // namespace stitch::artifact

// JSON text with every string made valid UTF-8 (json_text.h).
#include "emit/json_text.h"

#include "support/escape.h"

namespace stitch::emit {
namespace {

// The documents are a few levels deep (report.json: 4), so recursion is bounded by
// our own schema, not by the model.
nlohmann::ordered_json with_valid_strings(const nlohmann::ordered_json& json) {
  if (json.is_string()) return support::valid_utf8(json.get_ref<const std::string&>());
  if (json.is_array()) {
    nlohmann::ordered_json copy = nlohmann::ordered_json::array();
    for (const nlohmann::ordered_json& item : json) copy.push_back(with_valid_strings(item));
    return copy;
  }
  if (json.is_object()) {
    nlohmann::ordered_json copy = nlohmann::ordered_json::object();
    for (const auto& [key, value] : json.items())
      copy[support::valid_utf8(key)] = with_valid_strings(value);
    return copy;
  }
  return json;
}

}  // namespace

std::string dump_json(const nlohmann::ordered_json& json) {
  return with_valid_strings(json).dump(2) + "\n";
}

}  // namespace stitch::emit

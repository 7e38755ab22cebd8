// Tests for artifact/json_text: report.json and kernels.json text, every string and key
// made valid UTF-8 (each byte that is not UTF-8 as the text \xNN).
#include "artifact/json_text.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::artifact {
namespace {

// Values at every depth and keys are fixed; valid UTF-8 (é) is kept as it is.
TEST(JsonTextTest, BytesThatAreNotUtf8BecomeHexTextInValuesAndKeys) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json["name"] = std::string("n\xff");
  json["list"] = {std::string("\xc0\xaf"), "caf\xc3\xa9", 1};
  json[std::string("k\xfe")] = {{"inner", std::string("\xff")}};
  json["last"] = nullptr;
  EXPECT_EQ(dump_json(std::move(json)), R"({
  "name": "n\\xff",
  "list": [
    "\\xc0\\xaf",
    "café",
    1
  ],
  "k\\xfe": {
    "inner": "\\xff"
  },
  "last": null
}
)");
}

// An object whose keys change is rebuilt: keys that read the same once fixed keep
// the first one's position and the last one's value.
TEST(JsonTextTest, KeysThatMeetOnceFixedKeepTheFirstPositionAndTheLastValue) {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();
  json[std::string("a\xff")] = 1;
  json["b"] = 2;
  json["a\\xff"] = 3;
  EXPECT_EQ(dump_json(std::move(json)), "{\n  \"a\\\\xff\": 3,\n  \"b\": 2\n}\n");
}

}  // namespace
}  // namespace stitch::artifact

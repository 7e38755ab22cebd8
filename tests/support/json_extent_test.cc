// measure_json: nesting depth and item count, strings and their escapes skipped.
#include "support/json_extent.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::support {
namespace {

TEST(JsonExtentTest, CountsContainersAndSeparators) {
  EXPECT_EQ(measure_json("5").depth, 0u);
  EXPECT_EQ(measure_json("5").items, 0u);
  const JsonExtent flat = measure_json("[1, 2, 3]");
  EXPECT_EQ(flat.depth, 1u);
  EXPECT_EQ(flat.items, 3u);  // the list, two commas
  const JsonExtent nested = measure_json(R"({"a": [[1], {"b": 2}], "c": {}})");
  EXPECT_EQ(nested.depth, 3u);
  EXPECT_EQ(nested.items, 10u);  // 5 lists and objects, 3 colons, 2 commas
}

TEST(JsonExtentTest, SkipsStringsAndTheirEscapes) {
  const JsonExtent text = measure_json(R"(["[{,:}]", "a\"[,", "\\", {}])");
  EXPECT_EQ(text.depth, 2u);
  EXPECT_EQ(text.items, 5u);  // the list, three commas, the object
}

TEST(JsonExtentTest, MeasuresWhatAHostileFileWouldCost) {
  std::string flood = "[";
  for (int i = 0; i < 1000; ++i) flood += "{},";
  flood += "0]";
  EXPECT_EQ(measure_json(flood).items, 2001u);
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(measure_json(deep).depth, 100000u);
  // Unbalanced text is measured as far as it goes.
  EXPECT_EQ(measure_json("]]]][").depth, 1u);
}

}  // namespace
}  // namespace stitch::support

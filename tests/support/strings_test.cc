// support::join and support::split (support/strings.h).
#include "support/strings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace stitch::support {
namespace {

using Pieces = std::vector<std::string>;

TEST(StringsTest, SplitDropsEmptyPiecesAndTrims) {
  EXPECT_EQ(split("a, ,b", ',', " "), (Pieces{"a", "b"}));
  EXPECT_EQ(split(" dce ,\tcse,", ',', " \t"), (Pieces{"dce", "cse"}));
  // Without trim characters only empty pieces go: node scopes keep their spaces.
  EXPECT_EQ(split("/encoder//layer 0/attn", '/'), (Pieces{"encoder", "layer 0", "attn"}));
  EXPECT_EQ(split("", ','), Pieces{});
  EXPECT_EQ(split(",,,", ','), Pieces{});
  EXPECT_EQ(split("one", ','), Pieces{"one"});
}

TEST(StringsTest, JoinIsSplitsInverseOnCleanLists) {
  const Pieces names = {"dce", "cse", "fold"};
  EXPECT_EQ(join(names, ","), "dce,cse,fold");
  EXPECT_EQ(split(join(names, ","), ','), names);
  EXPECT_EQ(join({}, ","), "");
}

}  // namespace
}  // namespace stitch::support

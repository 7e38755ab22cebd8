// Tests of Status and Result<T> (ir/core/status.h): reading a failed Result's value is
// our bug and aborts with the error's message instead of reading an empty optional.
#include "ir/core/status.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch {
namespace {

Result<int> parse_digit(char c) {
  if (c < '0' || c > '9') return Status::invalid_input(std::string("not a digit: ") + c);
  return c - '0';
}

TEST(ResultTest, HoldsAValueOrAnError) {
  Result<int> seven = parse_digit('7');
  ASSERT_TRUE(seven.is_ok());
  EXPECT_EQ(*seven, 7);
  Result<int> letter = parse_digit('x');
  ASSERT_FALSE(letter.is_ok());
  EXPECT_EQ(letter.status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(letter.status().message(), "not a digit: x");
}

TEST(ResultDeathTest, ReadingTheValueOfAnErrorAborts) {
  Result<int> letter = parse_digit('x');
  EXPECT_DEATH((void)letter.value(), "the value of a failed Result: not a digit: x");
  EXPECT_DEATH((void)*letter, "the value of a failed Result");
}

TEST(ResultDeathTest, AnOkStatusIsNoResult) {
  EXPECT_DEATH((void)Result<int>(Status::ok()), "a Result made from an ok Status holds no value");
}

}  // namespace
}  // namespace stitch

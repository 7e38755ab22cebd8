// Tests for runtime_stub/feeds: the user's arrays checked against a program's inputs.
#include "runtime_stub/feeds.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace stitch::runtime {
namespace {

Program two_inputs() {
  Program program;
  program.inputs.push_back(
      StepTensor{0, "input", ir::TensorType::make(ir::DType::kFloat32, {1, 3}), 12});
  program.inputs.push_back(
      StepTensor{1, "mask", ir::TensorType::make(ir::DType::kBool, {1, 3}), 3});
  return program;
}

ir::Tensor zeros(ir::DType dtype, std::vector<int64_t> dims) {
  ir::Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.bytes.assign(static_cast<size_t>(t.num_elements() * ir::dtype_size(dtype)), '\0');
  return t;
}

std::string error_of(std::vector<std::pair<std::string, ir::Tensor>> feeds) {
  Result<std::map<std::string, ir::Tensor>> bound =
      bind_feeds(two_inputs(), std::move(feeds), "feeds.npz");
  return bound.is_ok() ? "ok" : bound.status().message();
}

TEST(FeedsTest, BindsEachInputByName) {
  Result<std::map<std::string, ir::Tensor>> bound = bind_feeds(
      two_inputs(),
      {{"mask", zeros(ir::DType::kBool, {1, 3})}, {"input", zeros(ir::DType::kFloat32, {1, 3})}},
      "feeds.npz");
  ASSERT_TRUE(bound.is_ok()) << bound.status().message();
  EXPECT_EQ(bound->size(), 2u);
  EXPECT_EQ(bound->at("input").dtype, ir::DType::kFloat32);
}

TEST(FeedsTest, SaysWhatIsWrong) {
  const ir::Tensor input = zeros(ir::DType::kFloat32, {1, 3});
  const ir::Tensor mask = zeros(ir::DType::kBool, {1, 3});
  EXPECT_EQ(error_of({{"inptu", input}, {"mask", mask}}),
            "feeds.npz: the model has no input \"inptu\"; did you mean \"input\"? (its inputs: "
            "input float32[1,3], mask bool[1,3])");
  EXPECT_EQ(error_of({{"input", input}}),
            "feeds.npz: no array for the model's input \"mask\" (bool[1,3])");
  EXPECT_EQ(error_of({{"input", zeros(ir::DType::kFloat64, {1, 3})}, {"mask", mask}}),
            "feeds.npz: input \"input\" is float64[1,3]; the model takes float32[1,3]");
  EXPECT_EQ(error_of({{"input", zeros(ir::DType::kFloat32, {3})}, {"mask", mask}}),
            "feeds.npz: input \"input\" is float32[3]; the model takes float32[1,3]");
  EXPECT_EQ(error_of({{"input", input}, {"input", input}, {"mask", mask}}),
            "feeds.npz: two arrays for input \"input\"");
}

}  // namespace
}  // namespace stitch::runtime

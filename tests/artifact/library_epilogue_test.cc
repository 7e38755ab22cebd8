// Tests for artifact/library_epilogue: the fused node's attributes "library" and
// "epilogue" written and read back (exact bytes of the names, errors with the node),
// and the legacy form.
#include "artifact/library_epilogue.h"

#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tests/artifact/fused_node_test_util.h"

namespace stitch::artifact {
namespace {

// A node carrying `attributes`, for read_epilogue_attributes.
ir::Node node_with(std::vector<ir::Attribute> attributes) {
  return test_util::fused_node("fused", std::move(attributes));
}

TEST(LibraryEpilogueTest, AttributesRoundTrip) {
  const LibraryEpilogue epilogue{Library::kCudnn,
                                 {EpilogueOp::kBias, EpilogueOp::kResidualAdd, EpilogueOp::kRelu}};
  std::vector<ir::Attribute> attributes = epilogue_attributes(epilogue);
  ASSERT_EQ(attributes.size(), 2u);
  // The names model.fused.onnx has always carried.
  EXPECT_EQ(attributes[0], ir::Attribute::make_string("library", "cuDNN"));
  EXPECT_EQ(attributes[1],
            ir::Attribute::make_strings("epilogue", {"bias", "residual add", "relu"}));
  Result<LibraryEpilogue> read = read_epilogue_attributes(node_with(attributes));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, epilogue);
  const LibraryEpilogue plain{Library::kCublasLt, {}};
  read = read_epilogue_attributes(node_with(epilogue_attributes(plain)));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, plain);
}

TEST(LibraryEpilogueTest, ReadRefusesWhatItDoesNotKnow) {
  Result<LibraryEpilogue> read =
      read_epilogue_attributes(node_with({ir::Attribute::make_string("library", "cuDNN")}));
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().message(),
            "node \"fused\" (stitchopt.stitch_k0): a library call needs the string attribute "
            "\"library\" and the strings attribute \"epilogue\"; recompile the model");
  read = read_epilogue_attributes(node_with({ir::Attribute::make_string("library", "cuFFT"),
                                             ir::Attribute::make_strings("epilogue", {})}));
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().message(),
            "node \"fused\" (stitchopt.stitch_k0): library \"cuFFT\" is neither cuBLASLt nor "
            "cuDNN; recompile the model");
  read = read_epilogue_attributes(node_with({ir::Attribute::make_string("library", "cuBLASLt"),
                                             ir::Attribute::make_strings("epilogue", {"mish"})}));
  ASSERT_FALSE(read.is_ok());
  EXPECT_EQ(read.status().message(),
            "node \"fused\" (stitchopt.stitch_k0): epilogue op \"mish\" is not bias, residual "
            "add, scale, relu, clip(lo,hi), sigmoid, tanh, swish, hardsigmoid(alpha,beta), "
            "hardswish, gelu or gelu_tanh; recompile the model");
  for (const char* name : {"clip", "clip()", "clip(0)", "clip(0,6", "clip(a,6)", "clip(0,6) ",
                           "relu(0,1)", "hardsigmoid(0.2;0.5)", "Relu"}) {
    EXPECT_EQ(parse_epilogue_op(name), std::nullopt) << name;
  }
}

TEST(LibraryEpilogueTest, OpsWithParametersRoundTripExactly) {
  const std::vector<EpilogueOp> ops = {EpilogueOp::kScale,
                                       EpilogueOp::clip(0.0f, 6.0f),
                                       EpilogueOp::clip(-std::numeric_limits<float>::max(), 1e-7f),
                                       EpilogueOp::kSigmoid,
                                       EpilogueOp::kTanh,
                                       EpilogueOp::kSwish,
                                       EpilogueOp::hard_sigmoid(1.0f / 6.0f, 0.5f),
                                       EpilogueOp::kHardSwish,
                                       EpilogueOp::kGelu,
                                       EpilogueOp::kGeluTanh};
  const LibraryEpilogue epilogue{Library::kCudnn, ops};
  EXPECT_EQ(epilogue.op_names(),
            (std::vector<std::string>{"scale", "clip(0,6)", "clip(-3.4028235e+38,1e-07)", "sigmoid",
                                      "tanh", "swish", "hardsigmoid(0.16666667,0.5)", "hardswish",
                                      "gelu", "gelu_tanh"}));
  Result<LibraryEpilogue> read = read_epilogue_attributes(node_with(epilogue_attributes(epilogue)));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, epilogue);
}

TEST(LibraryEpilogueTest, LegacyFormIsBiasResidualAndAFinalRelu) {
  using Ops = std::vector<EpilogueOp>;
  auto legacy = [](Ops ops) { return LibraryEpilogue{Library::kCudnn, ops}.legacy_form(); };
  EXPECT_TRUE(legacy({}));
  EXPECT_TRUE(legacy({EpilogueOp::kBias, EpilogueOp::kResidualAdd, EpilogueOp::kRelu}));
  EXPECT_TRUE(legacy({EpilogueOp::kResidualAdd, EpilogueOp::kBias}));
  EXPECT_FALSE(legacy({EpilogueOp::kBias, EpilogueOp::kBias}));
  EXPECT_FALSE(legacy({EpilogueOp::kRelu, EpilogueOp::kBias}));
  EXPECT_FALSE(legacy({EpilogueOp::kBias, EpilogueOp::clip(0, 6)}));
  EXPECT_FALSE(legacy({EpilogueOp::kScale}));
}

}  // namespace
}  // namespace stitch::artifact

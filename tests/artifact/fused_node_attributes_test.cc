// Tests for artifact/fused_node_attributes.h: the fused node's attribute schema, and
// the names of its category (artifact/group_category.h).
#include "artifact/fused_node_attributes.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/artifact/fused_node_test_util.h"

namespace stitch::artifact {
namespace {

FusedNodeAttributes kernel_group() {
  FusedNodeAttributes attributes;
  attributes.kernel = "stitch_k0";
  attributes.category = GroupCategory::kReduction;
  attributes.codegen =
      FusedNodeAttributes::Codegen{"kernels/stitch_k0.cu", 128, 256, "block", "reduce_1[GRID]"};
  attributes.predicted_time_us = 1.5f;
  attributes.shared_memory_bytes = 1024;
  attributes.fused_nodes = {"sum", "exp"};
  return attributes;
}

ir::Node node_with(std::vector<ir::Attribute> attributes) {
  return test_util::fused_node("stitch_k0_0", std::move(attributes));
}

// The order is part of model.fused.onnx's bytes.
TEST(FusedNodeAttributesTest, WritesInTheSchemaOrder) {
  std::vector<std::string> names;
  for (const ir::Attribute& attribute : kernel_group().to_attributes()) {
    names.push_back(attribute.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"kernel", "category", "source", "grid", "block",
                                             "composition", "template", "predicted_time_us",
                                             "shared_memory_bytes", "fused_nodes"}));
  FusedNodeAttributes library;
  library.kernel = "stitch_k1";
  library.category = GroupCategory::kLibrary;
  library.epilogue = LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kBias, EpilogueOp::kRelu}};
  names.clear();
  for (const ir::Attribute& attribute : library.to_attributes()) names.push_back(attribute.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"kernel", "category", "library", "epilogue",
                                      "predicted_time_us", "shared_memory_bytes", "fused_nodes"}));
}

TEST(FusedNodeAttributesTest, ReadsBackWhatItWrites) {
  FusedNodeAttributes written = kernel_group();
  Result<FusedNodeAttributes> read =
      FusedNodeAttributes::from_node(node_with(written.to_attributes()));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, written);

  FusedNodeAttributes library;
  library.kernel = "stitch_k1";
  library.category = GroupCategory::kLibrary;
  library.epilogue = LibraryEpilogue{
      Library::kCudnn, {EpilogueOp::kBias, EpilogueOp::kResidualAdd, EpilogueOp::kRelu}};
  const std::vector<ir::Attribute> attributes = library.to_attributes();
  EXPECT_EQ(attributes[2].s, "cuDNN");
  EXPECT_EQ(attributes[3].strings, (std::vector<std::string>{"bias", "residual add", "relu"}));
  read = FusedNodeAttributes::from_node(node_with(attributes));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(*read, library);
}

TEST(FusedNodeAttributesTest, AMissingKernelIsTheOpType) {
  Result<FusedNodeAttributes> read = FusedNodeAttributes::from_node(
      node_with({ir::Attribute::make_string("category", "elementwise")}));
  ASSERT_TRUE(read.is_ok()) << read.status().message();
  EXPECT_EQ(read->kernel, "stitch_k0");
  EXPECT_FALSE(read->codegen.has_value());
}

TEST(FusedNodeAttributesTest, BadAttributesAreErrorsNamingTheNode) {
  const std::string node = "fused node \"stitch_k0_0\" (stitchopt.stitch_k0): ";
  Result<FusedNodeAttributes> missing = FusedNodeAttributes::from_node(node_with({}));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(), node + "no \"category\" attribute; recompile the model");
  Result<FusedNodeAttributes> unknown =
      FusedNodeAttributes::from_node(node_with({ir::Attribute::make_string("category", "fancy")}));
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().message(), node + "unknown category \"fancy\"; recompile the model");
  Result<FusedNodeAttributes> wrong =
      FusedNodeAttributes::from_node(node_with({ir::Attribute::make_int("category", 3)}));
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_EQ(wrong.status().message(),
            node + "attribute \"category\" has the wrong type; recompile the model");
  Result<FusedNodeAttributes> partial = FusedNodeAttributes::from_node(
      node_with({ir::Attribute::make_string("category", "elementwise"),
                 ir::Attribute::make_string("source", "kernels/stitch_k0.cu")}));
  ASSERT_FALSE(partial.is_ok());
  EXPECT_EQ(partial.status().message(),
            node +
                "\"source\" without grid, block, composition and template; recompile the "
                "model");
}

// The library group's epilogue is read by artifact/library_epilogue.h, whose errors
// name the node too.
TEST(FusedNodeAttributesTest, ALibraryGroupNeedsItsEpilogue) {
  Result<FusedNodeAttributes> missing = FusedNodeAttributes::from_node(
      node_with({ir::Attribute::make_string("category", "library")}));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_EQ(missing.status().message(),
            "node \"stitch_k0_0\" (stitchopt.stitch_k0): a library call needs the string "
            "attribute \"library\" and the strings attribute \"epilogue\"; recompile the model");
  Result<FusedNodeAttributes> unknown = FusedNodeAttributes::from_node(
      node_with({ir::Attribute::make_string("category", "library"),
                 ir::Attribute::make_string("library", "cuFFT"),
                 ir::Attribute::make_strings("epilogue", {"bias"})}));
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_EQ(unknown.status().message(),
            "node \"stitch_k0_0\" (stitchopt.stitch_k0): library \"cuFFT\" is neither cuBLASLt "
            "nor cuDNN; recompile the model");
}

// The report and the fused node's "category" attribute spell these; their bytes
// must not change.
TEST(GroupCategoryTest, NamesRoundTrip) {
  EXPECT_EQ(to_string(GroupCategory::kElementwise), "elementwise");
  EXPECT_EQ(to_string(GroupCategory::kReduction), "reduction");
  EXPECT_EQ(to_string(GroupCategory::kGemm), "gemm");
  EXPECT_EQ(to_string(GroupCategory::kLibrary), "library");
  for (GroupCategory category :
       {GroupCategory::kElementwise, GroupCategory::kReduction, GroupCategory::kGemm,
        GroupCategory::kLibrary, GroupCategory::kStencil}) {
    EXPECT_EQ(parse_group_category(to_string(category)), category);
  }
  EXPECT_EQ(parse_group_category("Library"), std::nullopt);
  EXPECT_EQ(parse_group_category(""), std::nullopt);
}

}  // namespace
}  // namespace stitch::artifact

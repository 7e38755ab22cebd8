// What the simplification pipeline reports about partial evaluation
// (SimplifyStatistics; report.json simplify.constant_folding and
// simplify.unknown_type_roots, docs/report-schema.md).
#include "ir/passes/pipeline.h"

#include <gtest/gtest.h>

#include <string>

#include "ir/text/text.h"

namespace stitch::ir {
namespace {

SimplifyStatistics simplify(const std::string& text, int64_t limit = 1 << 20) {
  Result<Model> model = parse_model(text, "pipeline.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  PipelineOptions options;
  options.max_folded_constant_bytes = limit;
  Result<SimplifyStatistics> statistics = run_passes(*model, options);
  EXPECT_TRUE(statistics.is_ok()) << statistics.status().message();
  return statistics.is_ok() ? *statistics : SimplifyStatistics{};
}

// A causal mask as exporters build it: ConstantOfShape -> Trilu -> Where, all on
// constants, folds; an Expand of a scalar to 32 KiB stays under a 4 KiB limit, and the
// report says why.
TEST(PipelineTest, CountsWhatConstantFoldingFoldedAndKept) {
  SimplifyStatistics statistics = simplify(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4,4], %y: f32[8192]) {
  %shape: i64[2] = dense<i64[2]>[4, 4]
  %big: i64[1] = dense<i64[1]>[8192]
  %zero: f32[] = dense<f32[]>[0]
  %ninf: f32[] = dense<f32[]>[-1e9]
  %two: f32[] = dense<f32[]>[2]
  %ones: f32[4,4] = ConstantOfShape(%shape) {name="ones", value=dense<f32[1]>[1]}
  %lower: f32[4,4] = Trilu(%ones) {name="trilu", upper=0}
  %keep: bool[4,4] = Cast(%lower) {name="cast", to=9}
  %mask: f32[4,4] = Where(%keep, %zero, %ninf) {name="where"}
  %masked: f32[4,4] = Add(%x, %mask) {name="add"}
  %wide: f32[8192] = Expand(%two, %big) {name="expand"}
  %sum: f32[8192] = Mul(%y, %wide) {name="mul"}
  return %masked, %sum
}
)",
                                           /*limit=*/4096);
  // ConstantOfShape, Cast and Where by shape folding, Trilu by constant folding.
  EXPECT_EQ(statistics.folded_nodes, 4);
  EXPECT_EQ(statistics.folded_bytes, 64 + 64 + 16 + 64);
  EXPECT_EQ(statistics.max_folded_constant_bytes, 4096);
  ASSERT_EQ(statistics.kept_constant_nodes, 1);
  ASSERT_EQ(statistics.kept_constants.size(), 1u);
  EXPECT_EQ(statistics.kept_constants[0].node, "expand");
  EXPECT_EQ(statistics.kept_constants[0].op_type, "Expand");
  EXPECT_EQ(statistics.kept_constants[0].reason,
            "its 32768-byte result is over the 4096-byte limit and frees only 12 bytes of inputs");
  EXPECT_EQ(statistics.unknown_types, 0);
}

// Only data-dependent ops leave a shape unknown when the inputs are static, and the
// report names them as such.
TEST(PipelineTest, NamesDataDependentRootsOfUnknownShapes) {
  SimplifyStatistics statistics = simplify(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[8]) {
  %nz: i64[?,?] = NonZero(%x) {name="nonzero"}
  %t: i64[?,?] = Transpose(%nz) {name="transpose"}
  return %t
}
)");
  EXPECT_EQ(statistics.unknown_types, 2);
  ASSERT_EQ(statistics.unknown_type_roots.size(), 1u);
  EXPECT_EQ(statistics.unknown_type_roots[0].node, "nonzero");
  EXPECT_EQ(statistics.unknown_type_roots[0].op_type, "NonZero");
  EXPECT_EQ(statistics.unknown_type_roots[0].reason, "data-dependent");
  EXPECT_EQ(statistics.kept_constant_nodes, 0);
}

}  // namespace
}  // namespace stitch::ir

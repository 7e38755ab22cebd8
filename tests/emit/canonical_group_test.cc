// Tests for emit/canonical_group: the text that decides which groups share a kernel.
#include "emit/canonical_group.h"

#include <gtest/gtest.h>

#include "emit/cuda_text.h"
#include "ir/text/text.h"

namespace stitch::emit {
namespace {

ir::Model parse(const char* text) {
  Result<ir::Model> model = ir::parse_model(text, "test.ir");
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return std::move(model).value();
}

std::string text_of(const ir::Model& model, const std::vector<std::string>& names) {
  std::vector<ir::NodeId> nodes;
  for (const std::string& name : names) {
    for (ir::NodeId id : model.graph.node_ids()) {
      if (model.graph.node(id).name == name) nodes.push_back(id);
    }
  }
  EXPECT_EQ(nodes.size(), names.size());
  return canonical_group_text(model, group_boundary(model.graph, nodes));
}

TEST(CanonicalGroupTest, NamesValuesByRoleAndListsTypes) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[4,8], %w: f32[8]) {
  %t: f32[4,8] = Mul(%a, %w) {name="mul"}
  %y: f32[4,8] = Add(%t, %a) {name="add"}
  return %y
}
)");
  EXPECT_EQ(text_of(model, {"mul", "add"}),
            "in x0:f32[4,8] x1:f32[8]\n"
            "out y0:f32[4,8]\n"
            "node 3:Mul 0: 17 (x0 x1 ) -> (t0:f32[4,8] ) {}\n"
            "node 3:Add 0: 17 (t0 x0 ) -> (y0 ) {}");
}

// Same ops on other names: the same text. Another attribute value, another shape
// or another wiring: a different text.
TEST(CanonicalGroupTest, IdenticalGroupsOnlyAreEqual) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[4,8], %b: f32[4,8], %c: f32[2,8]) {
  %s1: f32[4] = ReduceSum(%a) {name="sum1", axes=[1], keepdims=0}
  %e1: f32[4] = Exp(%s1) {name="exp1"}
  %s2: f32[4] = ReduceSum(%b) {name="sum2", axes=[1], keepdims=0}
  %e2: f32[4] = Exp(%s2) {name="exp2", origin=["other"]}
  %s3: f32[8] = ReduceSum(%a) {name="sum3", axes=[0], keepdims=0}
  %e3: f32[8] = Exp(%s3) {name="exp3"}
  %s4: f32[2] = ReduceSum(%c) {name="sum4", axes=[1], keepdims=0}
  %e4: f32[2] = Exp(%s4) {name="exp4"}
  %m1: f32[4,8] = Sub(%a, %b) {name="sub1"}
  %m2: f32[4,8] = Sub(%b, %a) {name="sub2"}
  %m3: f32[4,8] = Sub(%a, %a) {name="sub3"}
  return %e1, %e2, %e3, %e4, %m1, %m2, %m3
}
)");
  const std::string first = text_of(model, {"sum1", "exp1"});
  EXPECT_EQ(text_of(model, {"sum2", "exp2"}), first);
  EXPECT_NE(text_of(model, {"sum3", "exp3"}), first);  // axes=[0]
  EXPECT_NE(text_of(model, {"sum4", "exp4"}), first);  // f32[2,8]
  // Sub(a, b) and Sub(b, a) both read two inputs in order; Sub(a, a) reads one twice.
  EXPECT_EQ(text_of(model, {"sub1"}), text_of(model, {"sub2"}));
  EXPECT_NE(text_of(model, {"sub1"}), text_of(model, {"sub3"}));
}

// The code generator folds integer constant operands (Slice starts and ends,
// reduction axes) into the kernel: two groups that differ only in those values are
// different kernels. Float constants of more than one element are data the kernel
// reads through a pointer (per-layer weights), so groups that differ only in them
// still share one kernel.
TEST(CanonicalGroupTest, FoldedIntegerConstantsArePartOfTheText) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[8,16]) {
  %s0: i64[1] = dense<i64[1]>[0]
  %e0: i64[1] = dense<i64[1]>[4]
  %s1: i64[1] = dense<i64[1]>[4]
  %e1: i64[1] = dense<i64[1]>[8]
  %s2: i64[1] = dense<i64[1]>[0]
  %e2: i64[1] = dense<i64[1]>[4]
  %w0: f32[16] = dense<f32[16]>[1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
  %w1: f32[16] = dense<f32[16]>[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2]
  %a: f32[4,16] = Slice(%x, %s0, %e0) {name="slice0"}
  %ya: f32[4,16] = Mul(%a, %w0) {name="mul0"}
  %b: f32[4,16] = Slice(%x, %s1, %e1) {name="slice1"}
  %yb: f32[4,16] = Mul(%b, %w0) {name="mul1"}
  %c: f32[4,16] = Slice(%x, %s2, %e2) {name="slice2"}
  %yc: f32[4,16] = Mul(%c, %w1) {name="mul2"}
  return %ya, %yb, %yc
}
)");
  const std::string first = text_of(model, {"slice0", "mul0"});
  EXPECT_NE(text_of(model, {"slice1", "mul1"}), first);  // starts 4, ends 8
  EXPECT_EQ(text_of(model, {"slice2", "mul2"}), first);  // same starts, other weights
}

// One-element constants are literals in the kernel text (emit::is_baked_scalar):
// LayerNorms that differ only in epsilon are different kernels; a scalar that is a
// graph input (a default the caller may override) stays a pointer and is shared.
TEST(CanonicalGroupTest, BakedScalarConstantsArePartOfTheText) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[8,16], %k: f32[] = dense<f32[]>[3]) {
  %eps0: f32[] = dense<f32[]>[1e-05]
  %eps1: f32[] = dense<f32[]>[1e-12]
  %eps2: f32[] = dense<f32[]>[1e-05]
  %a: f32[8,16] = Add(%x, %eps0) {name="add0"}
  %b: f32[8,16] = Add(%x, %eps1) {name="add1"}
  %c: f32[8,16] = Add(%x, %eps2) {name="add2"}
  %d: f32[8,16] = Mul(%x, %k) {name="mul"}
  return %a, %b, %c, %d
}
)");
  const std::string first = text_of(model, {"add0"});
  EXPECT_NE(text_of(model, {"add1"}), first);  // epsilon 1e-12
  EXPECT_EQ(text_of(model, {"add2"}), first);  // the same value
  EXPECT_TRUE(emit::is_baked_scalar(model.graph.value(*model.graph.find_value("eps0"))));
  EXPECT_FALSE(emit::is_baked_scalar(model.graph.value(*model.graph.find_value("k"))));
}

// A string attribute cannot forge the text of another group: strings carry their
// length.
TEST(CanonicalGroupTest, StringsAreLengthPrefixed) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%a: f32[4]) {
  %y: f32[4] = Gelu(%a) {name="g1", approximate="tanh"}
  return %y
}
)");
  EXPECT_NE(text_of(model, {"g1"}).find("11:approximate=3:4:tanh"), std::string::npos);
}

}  // namespace
}  // namespace stitch::emit

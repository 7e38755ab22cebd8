// ir::clamp_attention_masks (--precision bf16 | fp16): a Hugging Face mask scaled by
// float32's lowest gets its scale clamped, a mask from elsewhere is read through a Max,
// a causal Where's constant is copied clamped; what is in range, positive or not a
// score chain operand is left alone; the clamped model computes what the original
// does wherever a key is unmasked.
#include "ir/passes/attention_mask_clamp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "ir/core/verifier.h"
#include "ir/passes/reduced_precision.h"
#include "ir/reference/interpreter.h"
#include "tests/ir/ir_test_util.h"

namespace stitch::ir {
namespace {

using test_util::node_named;
using test_util::parse_graph;

constexpr double kLowest = -3.4028234663852886e38;

// The softmax opened as the decompose pass writes it, of %x, then P x V.
const char* kSoftmaxAndPv =
    "  %mx: f32[2,4,16,1] = ReduceMax(%x) {name=\"max\", axes=[3], keepdims=1}\n"
    "  %d: f32[2,4,16,24] = Sub(%x, %mx) {name=\"sub\"}\n"
    "  %e: f32[2,4,16,24] = Exp(%d) {name=\"exp\"}\n"
    "  %z: f32[2,4,16,1] = ReduceSum(%e, %axes) {name=\"sum\", keepdims=1}\n"
    "  %p: f32[2,4,16,24] = Div(%e, %z) {name=\"div\"}\n"
    "  %o: f32[2,4,16,12] = MatMul(%p, %v) {name=\"pv\"}\n";

constexpr const char* kInputs = "%q: f32[2,4,16,8], %k: f32[2,4,8,24], %v: f32[2,4,24,12]";

// BERT's extended mask: (1 - Cast(mask)) * lowest, added to the scaled scores.
Model bert_form() {
  return parse_graph(std::string(kInputs) + ", %mask: i64[2,1,1,24]",
                     "  %axes: i64[1] = dense<i64[1]>[3]\n"
                     "  %one: f32[] = dense<f32[]>[1]\n"
                     "  %low: f32[] = dense<f32[]>[-3.4028234663852886e38]\n"
                     "  %scale: f32[] = dense<f32[]>[0.35]\n"
                     "  %c: f32[2,1,1,24] = Cast(%mask) {name=\"cast\", to=1}\n"
                     "  %inv: f32[2,1,1,24] = Sub(%one, %c) {name=\"invert\"}\n"
                     "  %m: f32[2,1,1,24] = Mul(%inv, %low) {name=\"extend\"}\n"
                     "  %s: f32[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n"
                     "  %t: f32[2,4,16,24] = Div(%s, %scale) {name=\"scale\"}\n"
                     "  %x: f32[2,4,16,24] = Add(%t, %m) {name=\"mask\"}\n" +
                         std::string(kSoftmaxAndPv));
}

ValueId value_named(const Graph& graph, const std::string& name) {
  std::optional<ValueId> id = graph.find_value(name);
  EXPECT_TRUE(id.has_value()) << name;
  return id.value_or(kNoId);
}

// max |x| and the largest value of every float32 value on `inputs`, as the driver
// measures them.
MaskClampOptions calibrated(const Model& model, const std::map<std::string, Tensor>& inputs,
                            DType reduced) {
  MaskClampOptions options;
  options.reduced = reduced;
  EvaluationOptions evaluation;
  evaluation.observe = [&](ValueId id, const Tensor& tensor) {
    if (tensor.dtype != DType::kFloat32) return;
    double largest = 0, top = -HUGE_VAL;
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      largest = std::max(largest, std::fabs(tensor.float_at(i)));
      top = std::max(top, tensor.float_at(i));
    }
    options.max_abs[id] = largest;
    options.max_value[id] = top;
  };
  EXPECT_TRUE(evaluate_graph(model, inputs, evaluation).is_ok());
  return options;
}

std::map<std::string, Tensor> inputs_with_mask() {
  std::vector<float> q(2 * 4 * 16 * 8), k(2 * 4 * 8 * 24), v(2 * 4 * 24 * 12);
  for (size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  for (size_t i = 0; i < k.size(); ++i) k[i] = std::cos(0.11f * static_cast<float>(i));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.05f * static_cast<float>(i) + 1);
  std::vector<int64_t> mask(48, 1);
  for (int i = 17; i < 24; ++i) mask[static_cast<size_t>(i)] = 0;  // the first batch's padding
  for (int i = 24 + 10; i < 48; ++i) mask[static_cast<size_t>(i)] = 0;
  return {{"q", Tensor::from_float({2, 4, 16, 8}, q)},
          {"k", Tensor::from_float({2, 4, 8, 24}, k)},
          {"v", Tensor::from_float({2, 4, 24, 12}, v)},
          {"mask", Tensor::from_int64({2, 1, 1, 24}, mask)}};
}

TEST(AttentionMaskClampTest, ClampsTheScaleOfAHuggingFaceMaskAndKeepsTheResult) {
  for (DType reduced : {DType::kBFloat16, DType::kFloat16}) {
    Model model = bert_form();
    const Model original = model;
    const std::map<std::string, Tensor> inputs = inputs_with_mask();
    Result<std::vector<ClampedMask>> clamped =
        clamp_attention_masks(model, calibrated(model, inputs, reduced));
    ASSERT_TRUE(clamped.is_ok()) << clamped.status().message();
    ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
    ASSERT_EQ(clamped->size(), 1u);
    const ClampedMask& mask = clamped->front();
    EXPECT_EQ(mask.value, "m");
    EXPECT_EQ(mask.clamped, "m");  // the scale changed, the mask keeps its name
    EXPECT_EQ(mask.lowest, kLowest);
    EXPECT_EQ(mask.clamped_to, -range_limit(reduced) / 2);
    EXPECT_EQ(mask.readers, 1);
    const Node& extend = model.graph.node(node_named(model.graph, "extend"));
    EXPECT_EQ(model.graph.value(extend.inputs[1]).constant->float_at(0), mask.clamped_to);
    Result<std::map<std::string, Tensor>> want = evaluate_graph(original, inputs);
    Result<std::map<std::string, Tensor>> got = evaluate_graph(model, inputs);
    ASSERT_TRUE(want.is_ok() && got.is_ok());
    for (int64_t i = 0; i < want->at("o").num_elements(); ++i) {
      EXPECT_NEAR(got->at("o").float_at(i), want->at("o").float_at(i), 1e-6) << i;
    }
  }
}

// The mask a graph input (no producer to change) is read through Max(mask, -L), by
// every core that adds it; a causal Where's lowest constant becomes a clamped copy.
TEST(AttentionMaskClampTest, ReadsOtherMasksThroughAMaxAndCopiesConstants) {
  Model model = parse_graph(std::string(kInputs) + ", %m: f32[2,1,1,24], %causal: bool[1,1,16,24]",
                            "  %axes: i64[1] = dense<i64[1]>[3]\n"
                            "  %low: f32[] = dense<f32[]>[-3.4028234663852886e38]\n"
                            "  %s: f32[2,4,16,24] = MatMul(%q, %k) {name=\"qk\"}\n"
                            "  %w: f32[2,4,16,24] = Where(%causal, %s, %low) {name=\"causal\"}\n"
                            "  %x: f32[2,4,16,24] = Add(%w, %m) {name=\"mask\"}\n" +
                                std::string(kSoftmaxAndPv) +
                                "  %r: f32[2,1,1,24] = Relu(%m) {name=\"other\"}\n",
                            "%o, %r");
  MaskClampOptions options;
  options.reduced = DType::kFloat16;
  const ValueId m = value_named(model.graph, "m");
  options.max_abs[m] = 3.4e38;
  options.max_value[m] = 0;
  Result<std::vector<ClampedMask>> clamped = clamp_attention_masks(model, options);
  ASSERT_TRUE(clamped.is_ok()) << clamped.status().message();
  ASSERT_TRUE(verify(model).is_ok()) << verify(model).message();
  ASSERT_EQ(clamped->size(), 2u);
  EXPECT_EQ((*clamped)[0].value, "low");  // the Where comes first in the chain
  EXPECT_EQ((*clamped)[1].value, "m");
  const Graph& graph = model.graph;
  const Node& where = graph.node(node_named(graph, "causal"));
  EXPECT_EQ(graph.value(where.inputs[2]).constant->float_at(0), -65504.0 / 8);
  const Node& add = graph.node(node_named(graph, "mask"));
  const Node& max = graph.node(graph.value(add.inputs[1]).producer);
  EXPECT_EQ(max.op_type, "Max");
  EXPECT_EQ(max.inputs[0], m);
  // The mask's other reader still reads it unclamped.
  EXPECT_EQ(graph.node(node_named(graph, "other")).inputs[0], m);
}

// In range, a large positive value, or an operand of no score chain: nothing changes.
TEST(AttentionMaskClampTest, LeavesWhatIsNoOutOfRangeMaskAlone) {
  Model model = bert_form();
  MaskClampOptions options;
  options.reduced = DType::kBFloat16;
  const ValueId m = value_named(model.graph, "m");
  options.max_abs[value_named(model.graph, "inv")] = 1;
  for (auto [abs, top] : {std::pair{1e4, 0.0}, std::pair{3.4e38, 3.4e38}}) {
    options.max_abs[m] = abs;
    options.max_value[m] = top;
    Result<std::vector<ClampedMask>> clamped = clamp_attention_masks(model, options);
    ASSERT_TRUE(clamped.is_ok());
    EXPECT_TRUE(clamped->empty()) << abs << " " << top;
  }
  EXPECT_EQ(model.graph.value(model.graph.node(node_named(model.graph, "extend")).inputs[1]).name,
            "low");
}

}  // namespace
}  // namespace stitch::ir

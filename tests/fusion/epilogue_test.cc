// Tests for fusion/epilogue: which library-call chains become epilogue candidates
// (with their library, epilogue ops and scores), the must-not-fire cases, and the
// planner choosing an epilogue and counting it as one library launch.
#include "fusion/epilogue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fusion/candidates.h"
#include "fusion/planner.h"
#include "tests/fusion/fusion_test_util.h"

namespace stitch::fusion {
namespace {

using artifact::EpilogueOp;
using artifact::Library;
using artifact::LibraryEpilogue;
using test_util::h100;
using test_util::node_named;

ir::Model parse(const std::string& body, int64_t opset = 17) {
  return test_util::parse_ir(
      "stitchopt.ir 1\nmodel ir_version=9 opsets={\"\":" + std::to_string(opset) + "}\n" + body);
}

// Epilogue candidates as "library {names} [ops]" lines, in candidate order.
std::vector<std::string> describe(const ir::Graph& graph, const std::vector<Pattern>& patterns) {
  std::vector<std::string> lines;
  for (const Pattern& pattern : patterns) {
    EXPECT_TRUE(pattern.epilogue.has_value());
    if (!pattern.epilogue) continue;
    std::string line = std::string(library_name(pattern.epilogue->library)) + " {";
    for (size_t i = 0; i < pattern.nodes.size(); ++i) {
      line += (i ? ", " : "") + graph.node(pattern.nodes[i]).name;
    }
    line += "} [";
    const std::vector<std::string> ops = pattern.epilogue->op_names();
    for (size_t i = 0; i < ops.size(); ++i) line += (i ? ", " : "") + ops[i];
    lines.push_back(line + "]");
  }
  return lines;
}

std::vector<Pattern> epilogues(const ir::Graph& graph) {
  Partition partition = partition_graph(graph, PartitionOptions{});
  std::vector<Pattern> patterns =
      generate_epilogue_candidates(graph, partition, h100(), cost_model::ScoreOptions{});
  for (const Pattern& pattern : patterns) {
    EXPECT_EQ(pattern.source, PatternSource::kEpilogue);
    EXPECT_TRUE(std::is_sorted(pattern.nodes.begin(), pattern.nodes.end()));
  }
  return patterns;
}

// The epilogue score with the h100 profile: the DRAM time of the chain's nodes as
// kernels of their own (`alone`: the bytes each moves) less the chain's (`fused`:
// the bytes it moves), + (N - 1) * (phi + the tie-break).
double expected_score(const std::vector<int64_t>& alone, int64_t fused) {
  cost_model::DeviceProfile profile = h100();
  double score = -cost_model::memory_time_us(profile, static_cast<double>(fused));
  for (int64_t bytes : alone)
    score += cost_model::memory_time_us(profile, static_cast<double>(bytes));
  return score + static_cast<double>(alone.size() - 1) *
                     (profile.launch_latency_us + cost_model::kEpilogueTieBreakUs);
}

// f32[1,32,30,30]: 115200 bytes; x f32[1,16,32,32] 65536; w f32[32,16,3,3] 18432.
constexpr int64_t kConvOutputBytes = 32 * 30 * 30 * 4;
constexpr int64_t kConvInputBytes = 16 * 32 * 32 * 4;
constexpr int64_t kConvWeightBytes = 32 * 16 * 3 * 3 * 4;

TEST(EpilogueTest, ConvWithBiasThenRelu) {
  ir::Model model = parse(R"(graph "g" (%x: f32[1,16,32,32], %w: f32[32,16,3,3], %b: f32[32]) {
  %c: f32[1,32,30,30] = Conv(%x, %w, %b) {name="conv"}
  %y: f32[1,32,30,30] = Relu(%c) {name="relu"}
  return %y
})");
  std::vector<Pattern> patterns = epilogues(model.graph);
  EXPECT_EQ(describe(model.graph, patterns),
            std::vector<std::string>{"cuDNN {conv, relu} [bias, relu]"});
  ASSERT_EQ(patterns.size(), 1u);
  EXPECT_EQ(patterns[0].bytes_saved, 2 * kConvOutputBytes);
  // Alone, conv moves x, w, b, c and relu c, y; the chain x, w, b, y.
  const int64_t conv = kConvInputBytes + kConvWeightBytes + 32 * 4 + kConvOutputBytes;
  EXPECT_DOUBLE_EQ(patterns[0].score_us, expected_score({conv, 2 * kConvOutputBytes}, conv));
}

TEST(EpilogueTest, ConvResidualAddThenReluGivesEveryPrefix) {
  ir::Model model = parse(
      R"(graph "g" (%x: f32[1,16,32,32], %w: f32[32,16,3,3], %z: f32[1,32,30,30]) {
  %c: f32[1,32,30,30] = Conv(%x, %w) {name="conv"}
  %s: f32[1,32,30,30] = Add(%z, %c) {name="add"}
  %y: f32[1,32,30,30] = Relu(%s) {name="relu"}
  return %y
})");
  std::vector<Pattern> patterns = epilogues(model.graph);
  EXPECT_EQ(describe(model.graph, patterns),
            (std::vector<std::string>{"cuDNN {conv, add} [residual add]",
                                      "cuDNN {conv, add, relu} [residual add, relu]"}));
  ASSERT_EQ(patterns.size(), 2u);
  // Alone, conv moves x, w, c, add z, c, s and relu s, y; each chain x, w, z and its
  // last output.
  const int64_t conv = kConvInputBytes + kConvWeightBytes + kConvOutputBytes;
  const int64_t chain = kConvInputBytes + kConvWeightBytes + 2 * kConvOutputBytes;
  EXPECT_EQ(patterns[0].bytes_saved, 2 * kConvOutputBytes);
  EXPECT_DOUBLE_EQ(patterns[0].score_us, expected_score({conv, 3 * kConvOutputBytes}, chain));
  EXPECT_EQ(patterns[1].bytes_saved, 4 * kConvOutputBytes);
  EXPECT_DOUBLE_EQ(patterns[1].score_us,
                   expected_score({conv, 3 * kConvOutputBytes, 2 * kConvOutputBytes}, chain));
}

TEST(EpilogueTest, ChannelBiasAndResidualInOneConvChain) {
  ir::Model model = parse(
      R"(graph "g" (%x: f32[1,16,32,32], %w: f32[32,16,3,3], %z: f32[1,32,30,30]) {
  %b: f32[32,1,1] = dense<f32[32,1,1]>[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                       16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
                                       31]
  %c: f32[1,32,30,30] = Conv(%x, %w) {name="conv"}
  %t: f32[1,32,30,30] = Add(%c, %b) {name="bias"}
  %s: f32[1,32,30,30] = Add(%t, %z) {name="add"}
  %y: f32[1,32,30,30] = Relu(%s) {name="relu"}
  return %y
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            (std::vector<std::string>{"cuDNN {conv, bias} [bias]",
                                      "cuDNN {conv, bias, add} [bias, residual add]",
                                      "cuDNN {conv, bias, add, relu} [bias, residual add, relu]"}));
}

// 128x256x128 multiply-adds: over the fused 64^3 limit, so a cuBLAS library call.
constexpr const char* kGemmBiasRelu =
    R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %bias: f32[128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f32[128,128] = Add(%t, %bias) {name="add"}
  %y: f32[128,128] = Relu(%u) {name="relu"}
  return %y
})";

TEST(EpilogueTest, MatMulBiasRelu) {
  ir::Model model = parse(kGemmBiasRelu);
  std::vector<Pattern> patterns = epilogues(model.graph);
  EXPECT_EQ(describe(model.graph, patterns),
            (std::vector<std::string>{"cuBLASLt {mm, add} [bias]",
                                      "cuBLASLt {mm, add, relu} [bias, relu]"}));
  ASSERT_EQ(patterns.size(), 2u);
  constexpr int64_t kBytes = 128 * 128 * 4;
  EXPECT_EQ(patterns[1].bytes_saved, 4 * kBytes);
  // Alone, mm moves a, w (2 x 131072) and t, add t, bias (512), u and relu u, y; the
  // chain a, w, bias, y.
  const int64_t chain = 2 * 131072 + 512 + kBytes;
  EXPECT_DOUBLE_EQ(patterns[1].score_us,
                   expected_score({2 * 131072 + kBytes, 2 * kBytes + 512, 2 * kBytes}, chain));
}

TEST(EpilogueTest, GenerateCandidatesAddsEpiloguesUnlessTurnedOff) {
  ir::Model model = parse(kGemmBiasRelu);
  Partition partition = partition_graph(model.graph, PartitionOptions{});
  CandidateOptions options;
  CandidateStatistics statistics;
  std::vector<Pattern> patterns = generate_candidates(
      model.graph, partition, h100(), cost_model::ScoreOptions{}, options, statistics);
  EXPECT_EQ(statistics.epilogue, 2);
  int epilogue_patterns = 0;
  for (const Pattern& pattern : patterns) {
    epilogue_patterns += pattern.source == PatternSource::kEpilogue ? 1 : 0;
  }
  EXPECT_EQ(epilogue_patterns, 2);
  options.epilogue = false;
  patterns = generate_candidates(model.graph, partition, h100(), cost_model::ScoreOptions{},
                                 options, statistics);
  EXPECT_EQ(statistics.epilogue, 0);
  for (const Pattern& pattern : patterns) EXPECT_NE(pattern.source, PatternSource::kEpilogue);
}

TEST(EpilogueTest, GemmOwnCIsTheBiasOrTheResidual) {
  // C f32[128] with beta = 1 is the bias; a full C the residual (beta scales it);
  // a bias-shaped C with beta != 1 has no cuBLASLt form, so that Gemm starts no chain.
  ir::Model model = parse(
      R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %c: f32[128], %z: f32[128,128]) {
  %t: f32[128,128] = Gemm(%a, %w, %c) {name="gemm_bias"}
  %y: f32[128,128] = Relu(%t) {name="relu1"}
  %u: f32[128,128] = Gemm(%a, %w, %z) {name="gemm_residual", beta=0.5}
  %v: f32[128,128] = Add(%u, %c) {name="add"}
  %p: f32[128,128] = Gemm(%a, %w, %c) {name="gemm_scaled", beta=0.5}
  %q: f32[128,128] = Relu(%p) {name="relu2"}
  return %y, %v, %q
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            (std::vector<std::string>{"cuBLASLt {gemm_bias, relu1} [bias, relu]",
                                      "cuBLASLt {gemm_residual, add} [residual add, bias]"}));
}

// -----  Must not fire.

TEST(EpilogueTest, IntermediateWithASecondConsumerStopsTheChain) {
  ir::Model model = parse(R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %bias: f32[128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f32[128,128] = Add(%t, %bias) {name="add"}
  %y: f32[128,128] = Relu(%u) {name="relu"}
  %v: f32[128,128] = Tanh(%u) {name="tanh"}
  return %y, %v
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            std::vector<std::string>{"cuBLASLt {mm, add} [bias]"});
}

TEST(EpilogueTest, GraphOutputInTheMiddleStopsTheChain) {
  ir::Model model = parse(R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %bias: f32[128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm"}
  %y: f32[128,128] = Relu(%t) {name="relu"}
  return %y, %t
})");
  EXPECT_TRUE(epilogues(model.graph).empty());
}

TEST(EpilogueTest, AddOfAValueProducedInsideTheChainIsNoEpilogue) {
  ir::Model model = parse(R"(graph "g" (%a: f32[128,256], %w: f32[256,128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f32[128,128] = Add(%t, %t) {name="double"}
  %y: f32[128,128] = Relu(%u) {name="relu"}
  return %y
})");
  EXPECT_TRUE(epilogues(model.graph).empty());
}

TEST(EpilogueTest, BiasAlongTheWrongAxisIsNoEpilogue) {
  // f32[30] broadcasts along the Conv output's width, not its channels; f32[128,1]
  // along the GEMM's rows, not its columns N.
  ir::Model model = parse(
      R"(graph "g" (%x: f32[1,16,32,32], %w: f32[32,16,3,3], %b: f32[30], %a: f32[128,256],
               %v: f32[256,64], %rows: f32[128,1]) {
  %c: f32[1,32,30,30] = Conv(%x, %w) {name="conv"}
  %s: f32[1,32,30,30] = Add(%c, %b) {name="width_bias"}
  %t: f32[128,64] = MatMul(%a, %v) {name="mm"}
  %u: f32[128,64] = Add(%t, %rows) {name="row_bias"}
  return %s, %u
})");
  EXPECT_TRUE(epilogues(model.graph).empty());
}

TEST(EpilogueTest, SecondBiasAndOpsAfterReluAreNotAbsorbed) {
  ir::Model model = parse(
      R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %b1: f32[128], %b2: f32[1,128],
               %z: f32[128,128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f32[128,128] = Add(%t, %b1) {name="bias1"}
  %v: f32[128,128] = Add(%u, %b2) {name="bias2"}
  %r: f32[128,128] = Relu(%v) {name="relu"}
  %s: f32[128,128] = Add(%r, %z) {name="after_relu"}
  return %s
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            std::vector<std::string>{"cuBLASLt {mm, bias1} [bias]"});
}

TEST(EpilogueTest, GeluAndSigmoidAfterAGemmAreNotAbsorbed) {
  ir::Model model = parse(R"(graph "g" (%a: f32[128,256], %w: f32[256,128], %bias: f32[128]) {
  %t: f32[128,128] = MatMul(%a, %w) {name="mm1"}
  %g: f32[128,128] = Gelu(%t) {name="gelu"}
  %p: f32[128,128] = MatMul(%a, %w) {name="mm2"}
  %q: f32[128,128] = Sigmoid(%p) {name="sigmoid"}
  %r: f32[128,128] = MatMul(%a, %w) {name="mm3"}
  %s: f32[128,128] = Add(%r, %bias) {name="add"}
  %e: f32[128,128] = Sigmoid(%s) {name="sigmoid_after_bias"}
  return %g, %q, %e
})",
                          20);
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            std::vector<std::string>{"cuBLASLt {mm3, add} [bias]"});
}

// A float16 Conv with even channels takes any chain of the pointwise ops as one cuDNN
// graph: its own bias, a per-channel scale, ReLU6, then SiLU (two nodes: no prefix
// ends at its Sigmoid).
TEST(EpilogueTest, HalfConvTakesAPointwiseChainAsOneGraph) {
  ir::Model model = parse(R"(graph "g" (%x: f16[1,16,32,32], %w: f16[32,16,3,3], %b: f16[32],
               %s: f16[32,1,1]) {
  %lo: f16[] = dense<f16[]>[0]
  %hi: f16[] = dense<f16[]>[6]
  %c: f16[1,32,30,30] = Conv(%x, %w, %b) {name="conv"}
  %m: f16[1,32,30,30] = Mul(%s, %c) {name="scale"}
  %p: f16[1,32,30,30] = Clip(%m, %lo, %hi) {name="relu6"}
  %g: f16[1,32,30,30] = Sigmoid(%p) {name="gate"}
  %y: f16[1,32,30,30] = Mul(%p, %g) {name="silu"}
  %z: f16[1,32,30,30] = Neg(%y) {name="next"}
  return %z
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            (std::vector<std::string>{
                "cuDNN {conv, scale} [bias, scale]",
                "cuDNN {conv, scale, relu6} [bias, scale, clip(0,6)]",
                "cuDNN {conv, scale, relu6, gate, silu} [bias, scale, clip(0,6), swish]"}));
  // Each intermediate is written once and read by each of its readers.
  std::vector<Pattern> patterns = epilogues(model.graph);
  ASSERT_EQ(patterns.size(), 3u);
  constexpr int64_t kBytes = 32 * 30 * 30 * 2;
  EXPECT_EQ(patterns[2].bytes_saved, 2 * kBytes + 2 * kBytes + 3 * kBytes + 2 * kBytes);
}

// What keeps the legacy form: a float32 Conv (the runtime fusion engines compute it in
// TF32), a float16 Conv with an odd channel count, and a chain with a residual add.
TEST(EpilogueTest, PointwiseChainsNeedAHalfConvWithoutResidual) {
  ir::Model model = parse(R"(graph "g" (%x: f32[1,16,32,32], %w: f32[32,16,3,3],
               %xh: f16[1,3,32,32], %wh: f16[32,3,3,3], %xe: f16[1,4,32,32], %wr: f16[16,4,3,3],
               %r: f16[1,16,30,30]) {
  %c: f32[1,32,30,30] = Conv(%x, %w) {name="conv_f32"}
  %y: f32[1,32,30,30] = Sigmoid(%c) {name="sigmoid_f32"}
  %ch: f16[1,32,30,30] = Conv(%xh, %wh) {name="conv_odd"}
  %yh: f16[1,32,30,30] = Tanh(%ch) {name="tanh_odd"}
  %cr: f16[1,16,30,30] = Conv(%xe, %wr) {name="conv_residual"}
  %ar: f16[1,16,30,30] = Add(%cr, %r) {name="residual"}
  %hr: f16[1,16,30,30] = HardSwish(%ar) {name="hardswish"}
  return %y, %yh, %hr
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            std::vector<std::string>{"cuDNN {conv_residual, residual} [residual add]"});
}

// HardSwish as the decompose pass opens it (five nodes) is one op; with another slope
// (0.2: a HardSigmoid's default, not HardSwish's 1/6) it is none.
TEST(EpilogueTest, OpenedHardSwishIsOneOp) {
  for (const char* slope : {"0.16667", "0.2"}) {
    ir::Model model = parse(std::string(R"(graph "g" (%x: f16[1,4,16,16], %w: f16[8,4,1,1]) {
  %k1: f16[] = dense<f16[]>[)") +
                            slope + R"(]
  %k2: f16[] = dense<f16[]>[0.5]
  %k3: f16[] = dense<f16[]>[1]
  %k4: f16[] = dense<f16[]>[0]
  %c: f16[1,8,16,16] = Conv(%x, %w) {name="conv"}
  %s: f16[1,8,16,16] = Mul(%c, %k1) {name="scaled"}
  %a: f16[1,8,16,16] = Add(%s, %k2) {name="shifted"}
  %n: f16[1,8,16,16] = Min(%a, %k3) {name="min"}
  %m: f16[1,8,16,16] = Max(%n, %k4) {name="max"}
  %y: f16[1,8,16,16] = Mul(%m, %c) {name="gate_mul"}
  %z: f16[1,8,16,16] = Neg(%y) {name="next"}
  return %z
})");
    const std::vector<std::string> want =
        std::string(slope) == "0.2"
            ? std::vector<std::string>{}
            : std::vector<std::string>{
                  "cuDNN {conv, scaled, shifted, min, max, gate_mul} [hardswish]"};
    EXPECT_EQ(describe(model.graph, epilogues(model.graph)), want) << slope;
  }
}

// GELU (erf) as PyTorch exports it (Div by sqrt(2), Mul by the gate, then by 1/2) and
// as the decompose pass opens Gelu (Mul by 1/sqrt(2), halved first) is one op of a
// float16 MatMul's cuDNN graph; with another constant (Erf(x) + 2) it is none.
TEST(EpilogueTest, OpenedGeluIsOneOp) {
  const std::string pytorch = R"(
  %s: f16[128,128] = Div(%u, %k1) {name="scaled"}
  %e: f16[128,128] = Erf(%s) {name="erf"}
  %p: f16[128,128] = Add(%e, %k2) {name="plus_one"}
  %m: f16[128,128] = Mul(%u, %p) {name="gated"}
  %y: f16[128,128] = Mul(%m, %k3) {name="halved"})";
  const std::string decomposed = R"(
  %s: f16[128,128] = Mul(%k1, %u) {name="scaled"}
  %e: f16[128,128] = Erf(%s) {name="erf"}
  %p: f16[128,128] = Add(%e, %k2) {name="plus_one"}
  %m: f16[128,128] = Mul(%u, %k3) {name="halved"}
  %y: f16[128,128] = Mul(%m, %p) {name="gated"})";
  struct Case {
    const std::string& body;
    const char* k1;
    const char* k2;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {pytorch,
       "1.4142135",
       "1",
       {"cuBLASLt {mm, bias} [bias]",
        "cuDNN {mm, bias, scaled, erf, plus_one, gated, halved} [bias, gelu]"}},
      {decomposed,
       "0.70710677",
       "1",
       {"cuBLASLt {mm, bias} [bias]",
        "cuDNN {mm, bias, scaled, erf, plus_one, halved, gated} [bias, gelu]"}},
      {pytorch, "1.4142135", "2", {"cuBLASLt {mm, bias} [bias]"}}};
  for (const Case& c : cases) {
    ir::Model model =
        parse(std::string(R"(graph "g" (%a: f16[128,256], %w: f16[256,128], %b: f16[128]) {
  %k1: f16[] = dense<f16[]>[)") +
              c.k1 + "]\n  %k2: f16[] = dense<f16[]>[" + c.k2 + R"(]
  %k3: f16[] = dense<f16[]>[0.5]
  %t: f16[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f16[128,128] = Add(%t, %b) {name="bias"})" +
              c.body + R"(
  %z: f16[128,128] = Neg(%y) {name="next"}
  return %z
})");
    EXPECT_EQ(describe(model.graph, epilogues(model.graph)), c.want) << c.k1 << " " << c.k2;
  }
}

// GELU's tanh approximation (GPT-2's) as PyTorch 1.13 exports it (v * v * v, Mul by
// the gate, then by 1/2), with Pow(v, 3) as Hugging Face's NewGELU writes it, and as
// the decompose pass opens Gelu(approximate="tanh") (halved first) is one op of a
// float16 MatMul's cuDNN graph; with another cubic coefficient (0.05) or a fourth
// reader of v it is none.
TEST(EpilogueTest, OpenedTanhGeluIsOneOp) {
  const std::string tail_pytorch = R"(
  %e: f16[128,128] = Tanh(%s) {name="tanh"}
  %p: f16[128,128] = Add(%k3, %e) {name="plus_one"}
  %m: f16[128,128] = Mul(%u, %p) {name="gated"}
  %y: f16[128,128] = Mul(%k4, %m) {name="halved"})";
  const std::string inner = R"(
  %t3: f16[128,128] = Mul(%k1, %c) {name="cube_scaled"}
  %i: f16[128,128] = Add(%u, %t3) {name="inner"}
  %s: f16[128,128] = Mul(%k2, %i) {name="scaled"})";
  const std::string pytorch = R"(
  %q: f16[128,128] = Mul(%u, %u) {name="square"}
  %c: f16[128,128] = Mul(%u, %q) {name="cube"})" +
                              inner + tail_pytorch;
  const std::string pow = R"(
  %c: f16[128,128] = Pow(%u, %k0) {name="cube"})" +
                          inner + tail_pytorch;
  const std::string decomposed = R"(
  %q: f16[128,128] = Mul(%u, %u) {name="square"}
  %c: f16[128,128] = Mul(%q, %u) {name="cube"})" +
                                 inner + R"(
  %e: f16[128,128] = Tanh(%s) {name="tanh"}
  %p: f16[128,128] = Add(%e, %k3) {name="plus_one"}
  %m: f16[128,128] = Mul(%u, %k4) {name="halved"}
  %y: f16[128,128] = Mul(%m, %p) {name="gated"})";
  const std::string extra_reader = pow + R"(
  %x: f16[128,128] = Neg(%u) {name="other"})";
  struct Case {
    const std::string& body;
    const char* k1;
    std::vector<std::string> want;
  };
  const std::vector<Case> cases = {
      {pytorch,
       "0.044715",
       {"cuBLASLt {mm, bias} [bias]",
        "cuDNN {mm, bias, square, cube, cube_scaled, inner, scaled, tanh, plus_one, gated, "
        "halved} [bias, gelu_tanh]"}},
      {pow,
       "0.044715",
       {"cuBLASLt {mm, bias} [bias]",
        "cuDNN {mm, bias, cube, cube_scaled, inner, scaled, tanh, plus_one, gated, halved} "
        "[bias, gelu_tanh]"}},
      {decomposed,
       "0.044715",
       {"cuBLASLt {mm, bias} [bias]",
        "cuDNN {mm, bias, square, cube, cube_scaled, inner, scaled, tanh, plus_one, halved, "
        "gated} [bias, gelu_tanh]"}},
      {pytorch, "0.05", {"cuBLASLt {mm, bias} [bias]"}},
      {extra_reader, "0.044715", {"cuBLASLt {mm, bias} [bias]"}}};
  for (const Case& c : cases) {
    ir::Model model =
        parse(std::string(R"(graph "g" (%a: f16[128,256], %w: f16[256,128], %b: f16[128]) {
  %k0: f16[] = dense<f16[]>[3]
  %k1: f16[] = dense<f16[]>[)") +
              c.k1 + R"(]
  %k2: f16[] = dense<f16[]>[0.7978846]
  %k3: f16[] = dense<f16[]>[1]
  %k4: f16[] = dense<f16[]>[0.5]
  %t: f16[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f16[128,128] = Add(%t, %b) {name="bias"})" +
              c.body + R"(
  %z: f16[128,128] = Neg(%y) {name="next"}
  return %z
})");
    EXPECT_EQ(describe(model.graph, epilogues(model.graph)), c.want) << c.k1;
  }
}

// A float16 MatMul's chain beyond cuBLASLt's bias / residual / ReLU is a cuDNN graph;
// its prefix within that form stays a cuBLASLt call.
TEST(EpilogueTest, HalfMatMulChainBeyondCublasLtIsACudnnGraph) {
  ir::Model model = parse(R"(graph "g" (%a: f16[128,256], %w: f16[256,128], %b: f16[128]) {
  %t: f16[128,128] = MatMul(%a, %w) {name="mm"}
  %u: f16[128,128] = Add(%t, %b) {name="bias"}
  %v: f16[128,128] = Tanh(%u) {name="tanh"}
  %z: f16[128,128] = Neg(%v) {name="next"}
  return %z
})");
  EXPECT_EQ(describe(model.graph, epilogues(model.graph)),
            (std::vector<std::string>{"cuBLASLt {mm, bias} [bias]",
                                      "cuDNN {mm, bias, tanh} [bias, tanh]"}));
}

TEST(EpilogueTest, SmallFusibleGemmIsNoLibraryCall) {
  // 64x64x64 fits a generated kernel: the GEMM is kBatchedGemm, not a library call.
  ir::Model model = parse(R"(graph "g" (%a: f32[64,64], %w: f32[64,64], %bias: f32[64]) {
  %t: f32[64,64] = MatMul(%a, %w) {name="mm"}
  %u: f32[64,64] = Add(%t, %bias) {name="add"}
  return %u
})");
  EXPECT_TRUE(epilogues(model.graph).empty());
}

// -----  The planner.

// Two large GEMM layers: MatMul -> Add(bias) -> Relu -> MatMul -> Add(bias).
constexpr const char* kTwoLayers =
    R"(graph "g" (%x: f32[128,256], %w1: f32[256,256], %b1: f32[256], %w2: f32[256,128],
               %b2: f32[128]) {
  %h: f32[128,256] = MatMul(%x, %w1) {name="mm1"}
  %hb: f32[128,256] = Add(%h, %b1) {name="add1"}
  %r: f32[128,256] = Relu(%hb) {name="relu1"}
  %o: f32[128,128] = MatMul(%r, %w2) {name="mm2"}
  %y: f32[128,128] = Add(%o, %b2) {name="add2"}
  return %y
})";

TEST(EpiloguePlannerTest, ChosenEpilogueIsOneLibraryLaunch) {
  ir::Model model = parse(kTwoLayers);
  const ir::Graph& graph = model.graph;
  Result<PlannerResult> result = plan_fusion(graph, h100(), PlannerOptions{});
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  ASSERT_EQ(result->groups.size(), 2u);
  const PlannedGroup& first = result->groups[0];
  EXPECT_EQ(first.nodes,
            (std::vector<ir::NodeId>{node_named(graph, "mm1"), node_named(graph, "add1"),
                                     node_named(graph, "relu1")}));
  EXPECT_EQ(first.source, PatternSource::kEpilogue);
  EXPECT_EQ(first.category, artifact::GroupCategory::kLibrary);
  EXPECT_EQ(first.epilogue,
            (LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kBias, EpilogueOp::kRelu}}));
  const PlannedGroup& second = result->groups[1];
  EXPECT_EQ(second.nodes,
            (std::vector<ir::NodeId>{node_named(graph, "mm2"), node_named(graph, "add2")}));
  EXPECT_EQ(second.epilogue, (LibraryEpilogue{Library::kCublasLt, {EpilogueOp::kBias}}));
  // Two library calls and nothing else; no memory-intensive kernel is left.
  EXPECT_EQ(result->kernels_fused, 2);
  EXPECT_EQ(result->memory_intensive_before, 3);
  EXPECT_EQ(result->memory_intensive_after, 0);
  EXPECT_EQ(result->estimate.kernels_after, 2);
  EXPECT_EQ(result->candidate_statistics.epilogue, 3);
  EXPECT_TRUE(result->unfused.empty());
  // The group's time is the call's, reading x, w1, b1 and writing r: no [128,256]
  // intermediate round trips, so less than the three kernels it replaces.
  cost_model::GroupCost alone_mm =
      cost_model::estimate_group(graph, {node_named(graph, "mm1")}, h100());
  EXPECT_GT(first.predicted_time_us, 0);
  EXPECT_LT(
      first.predicted_time_us,
      alone_mm.time.total_us +
          cost_model::estimate_group(graph, {node_named(graph, "add1")}, h100()).time.total_us +
          cost_model::estimate_group(graph, {node_named(graph, "relu1")}, h100()).time.total_us);
  EXPECT_LT(result->estimate.time_after_us, result->estimate.time_before_us);
}

TEST(EpiloguePlannerTest, WithoutEpiloguesTheElementwiseOpsAreKernels) {
  ir::Model model = parse(kTwoLayers);
  PlannerOptions options;
  options.candidates.epilogue = false;
  Result<PlannerResult> result = plan_fusion(model.graph, h100(), options);
  ASSERT_TRUE(result.is_ok()) << result.status().message();
  // mm1, {add1, relu1}, mm2, add2.
  EXPECT_EQ(result->kernels_fused, 4);
  EXPECT_EQ(result->memory_intensive_after, 2);
  EXPECT_EQ(result->candidate_statistics.epilogue, 0);
  for (const PlannedGroup& group : result->groups) {
    EXPECT_NE(group.category, artifact::GroupCategory::kLibrary);
  }
}

}  // namespace
}  // namespace stitch::fusion

// Tests for fusion/candidates: substitution, exploratory and packing patterns,
// convexity, determinism, the time limit and scale.
#include "fusion/candidates.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "cost_model/device_profile.h"
#include "ir/core/analysis.h"
#include "ir/text/text.h"
#include "tests/fusion/fusion_test_util.h"

namespace stitch::fusion {
namespace {

using test_util::h100;

ir::Model parse(const std::string& text) { return test_util::parse_ir(text); }

// Node names of a pattern, sorted by id: "{a, r}".
std::string names(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes) {
  std::string text = "{";
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (i > 0) text += ", ";
    text += graph.node(nodes[i]).name;
  }
  return text + "}";
}

struct Generated {
  std::vector<Pattern> patterns;
  CandidateStatistics statistics;
};

Generated generate(const ir::Graph& graph, const CandidateOptions& options,
                   const PartitionOptions& partition_options = PartitionOptions{}) {
  Generated run;
  Partition partition = partition_graph(graph, partition_options);
  run.patterns = generate_candidates(graph, partition, h100(), cost_model::ScoreOptions{}, options,
                                     run.statistics);
  return run;
}

// Patterns as "source step {names}" lines, for exact comparisons.
std::set<std::string> describe(const ir::Graph& graph, const std::vector<Pattern>& patterns) {
  std::set<std::string> lines;
  for (const Pattern& pattern : patterns) {
    std::string source = pattern.source == PatternSource::kSubstitution  ? "substitution"
                         : pattern.source == PatternSource::kExploratory ? "exploratory"
                         : pattern.source == PatternSource::kPacking     ? "packing"
                                                                         : "epilogue";
    lines.insert(source + " " + std::to_string(pattern.substitution_step) + " " +
                 names(graph, pattern.nodes));
  }
  return lines;
}

bool has_pattern(const ir::Graph& graph, const std::vector<Pattern>& patterns,
                 const std::string& expected) {
  return std::any_of(patterns.begin(), patterns.end(),
                     [&](const Pattern& p) { return names(graph, p.nodes) == expected; });
}

// g1 and g2 are "large" (2*m*n*k = 2*64^3 with the threshold below); c is a column
// reduction and b a small GEMM (64x32x64).
constexpr const char* kChain = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "chain" (%x: f32[64,64], %w: f32[64,64], %v: f32[64,32], %u: f32[32,128]) {
  %axes0: i64[1] = dense<i64[1]>[0]
  %g1: f32[64,64] = MatMul(%x, %w) {name="g1"}
  %a: f32[64,64] = Add(%g1, %x) {name="a"}
  %r: f32[64,64] = Relu(%a) {name="r"}
  %c: f32[1,64] = ReduceSum(%r, %axes0) {name="c", keepdims=1}
  %s: f32[64,64] = Sub(%r, %c) {name="s"}
  %e: f32[64,64] = Exp(%s) {name="e"}
  %b: f32[64,32] = MatMul(%e, %v) {name="b"}
  %q: f32[64,32] = Relu(%b) {name="q"}
  %g2: f32[64,128] = MatMul(%q, %u) {name="g2"}
  %t: f32[64,128] = Tanh(%g2) {name="t"}
  %y: f32[64,128] = Sigmoid(%t) {name="y"}
  return %y
}
)";

PartitionOptions chain_partition() {
  PartitionOptions options;
  options.large_gemm_flops = 2 * 64 * 64 * 64;
  return options;
}

TEST(CandidatesTest, SubstitutionOnePatternPerSegmentAndStep) {
  ir::Model model = parse(kChain);
  CandidateOptions options;
  options.exploratory = false;
  options.packing = false;
  options.epilogue = false;
  Generated run = generate(model.graph, options, chain_partition());
  // Step 0 cuts at g1, g2; step 1 also at b; step 2 also at c; step 3 adds nothing
  // new. A set found again at a later step keeps its first step.
  EXPECT_EQ(describe(model.graph, run.patterns),
            (std::set<std::string>{"substitution 0 {a, r, c, s, e, b, q}", "substitution 0 {t, y}",
                                   "substitution 1 {a, r, c, s, e}", "substitution 2 {a, r}",
                                   "substitution 2 {s, e}"}));
  EXPECT_EQ(run.statistics.substitution, 5);
  EXPECT_EQ(run.statistics.exploratory, 0);
  EXPECT_EQ(run.statistics.packing, 0);
  EXPECT_EQ(run.statistics.rejected_non_convex, 0);
  for (const Pattern& pattern : run.patterns) {
    EXPECT_GT(pattern.score_us, 0) << names(model.graph, pattern.nodes);
    EXPECT_TRUE(std::is_sorted(pattern.nodes.begin(), pattern.nodes.end()));
  }
}

// Two independent branches interleaved in the topological order form two patterns,
// not one: components, not whole segments.
TEST(CandidatesTest, SubstitutionSplitsIndependentBranches) {
  ir::Model model = parse(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "branches" (%x: f32[64,64], %z: f32[64,64]) {
  %a1: f32[64,64] = Relu(%x) {name="a1"}
  %b1: f32[64,64] = Relu(%z) {name="b1"}
  %a2: f32[64,64] = Exp(%a1) {name="a2"}
  %b2: f32[64,64] = Exp(%b1) {name="b2"}
  return %a2, %b2
}
)");
  CandidateOptions options;
  options.exploratory = false;
  options.packing = false;
  Generated run = generate(model.graph, options);
  EXPECT_EQ(describe(model.graph, run.patterns),
            (std::set<std::string>{"substitution 0 {a1, a2}", "substitution 0 {b1, b2}"}));
}

// FusionStitching Fig. 3: A -> B (partition op) -> C and A -> C. {A, C} would need
// B both after and before the fused kernel.
constexpr const char* kFigure3 = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17, "com.example":1}
graph "figure3" (%x: f32[64,64]) {
  %a: f32[64,64] = Relu(%x) {name="A"}
  %b: f32[64,64] = Opaque(%a) {name="B", domain="com.example"}
  %c: f32[64,64] = Add(%a, %b) {name="C"}
  %d: f32[64,64] = Exp(%c) {name="D"}
  return %d
}
)";

TEST(CandidatesTest, Figure3NonConvexPatternIsNotGenerated) {
  ir::Model model = parse(kFigure3);
  Generated run = generate(model.graph, CandidateOptions{});
  EXPECT_FALSE(has_pattern(model.graph, run.patterns, "{A, C}"));
  EXPECT_FALSE(has_pattern(model.graph, run.patterns, "{A, C, D}"));
  EXPECT_TRUE(has_pattern(model.graph, run.patterns, "{C, D}"));
  EXPECT_GE(run.statistics.rejected_non_convex, 1);
  for (const Pattern& pattern : run.patterns) {
    EXPECT_FALSE(std::binary_search(pattern.nodes.begin(), pattern.nodes.end(), 1))
        << "partition op B in " << names(model.graph, pattern.nodes);
  }
}

// Softmax between an Add and a Mul: substitution takes the whole region; exploration
// from the ReduceMax seed finds the softmax alone.
constexpr const char* kSoftmax = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "softmax" (%x: f32[256,1024], %bias: f32[1024], %scale: f32[1024]) {
  %axes: i64[1] = dense<i64[1]>[1]
  %in: f32[256,1024] = Add(%x, %bias) {name="add"}
  %m: f32[256,1] = ReduceMax(%in) {name="max", axes=[1], keepdims=1}
  %d: f32[256,1024] = Sub(%in, %m) {name="sub"}
  %e: f32[256,1024] = Exp(%d) {name="exp"}
  %s: f32[256,1] = ReduceSum(%e, %axes) {name="sum", keepdims=1}
  %p: f32[256,1024] = Div(%e, %s) {name="div"}
  %y: f32[256,1024] = Mul(%p, %scale) {name="mul"}
  return %y
}
)";

TEST(CandidatesTest, ExploratoryFindsSoftmaxFromReductionSeed) {
  ir::Model model = parse(kSoftmax);
  Generated run = generate(model.graph, CandidateOptions{});
  std::set<std::string> lines = describe(model.graph, run.patterns);
  EXPECT_TRUE(lines.count("substitution 0 {add, max, sub, exp, sum, div, mul}"));
  EXPECT_TRUE(lines.count("exploratory -1 {max, sub, exp, sum, div}"));
  EXPECT_GT(run.statistics.exploratory, 0);
  EXPECT_FALSE(run.statistics.hit_time_limit);
}

TEST(CandidatesTest, ExplorationBoundsAreHonoured) {
  ir::Model model = parse(kSoftmax);
  CandidateOptions options;
  options.max_pattern_size = 3;
  options.max_patterns_per_seed = 2;
  options.packing = false;
  Generated run = generate(model.graph, options);
  for (const Pattern& pattern : run.patterns) {
    if (pattern.source == PatternSource::kExploratory) {
      EXPECT_LE(pattern.nodes.size(), 3u);
    }
  }
  // Seeds add, max, sub, exp, sum, div, mul (all large): at most 2 new sets each.
  EXPECT_LE(run.statistics.exploratory, 7 * 2);
  EXPECT_GT(run.statistics.exploratory, 0);
}

// Two small independent branches reading the same input, each ending in a partition
// op, so substitution cannot join them; packing does.
constexpr const char* kSiblings = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17, "com.example":1}
graph "siblings" (%x: f32[64,64]) {
  %e: f32[64,64] = Exp(%x) {name="exp"}
  %t: f32[64,64] = Tanh(%x) {name="tanh"}
  %y1: f32[64,64] = Opaque(%e) {name="opaque1", domain="com.example"}
  %y2: f32[64,64] = Opaque(%t) {name="opaque2", domain="com.example"}
  return %y1, %y2
}
)";

TEST(CandidatesTest, PackingMergesIndependentSmallBranches) {
  ir::Model model = parse(kSiblings);
  Generated run = generate(model.graph, CandidateOptions{});
  EXPECT_EQ(describe(model.graph, run.patterns), (std::set<std::string>{"packing -1 {exp, tanh}"}));
  EXPECT_EQ(run.statistics.packing, 1);

  CandidateOptions no_packing;
  no_packing.packing = false;
  EXPECT_TRUE(generate(model.graph, no_packing).patterns.empty());
}

// Three small projections of one input (an attention layer's Q, K and V), each read
// by an opaque op: pairs leave a third launch, so packing also offers all three.
constexpr const char* kThreeSiblings = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17, "com.example":1}
graph "three" (%x: f32[32,64], %wq: f32[64,64], %wk: f32[64,64], %wv: f32[64,64]) {
  %q: f32[32,64] = MatMul(%x, %wq) {name="q"}
  %k: f32[32,64] = MatMul(%x, %wk) {name="k"}
  %v: f32[32,64] = MatMul(%x, %wv) {name="v"}
  %y1: f32[32,64] = Opaque(%q) {name="opaque1", domain="com.example"}
  %y2: f32[32,64] = Opaque(%k) {name="opaque2", domain="com.example"}
  %y3: f32[32,64] = Opaque(%v) {name="opaque3", domain="com.example"}
  return %y1, %y2, %y3
}
)";

TEST(CandidatesTest, PackingOffersEverySiblingOfAValueTogether) {
  ir::Model model = parse(kThreeSiblings);
  Generated run = generate(model.graph, CandidateOptions{});
  EXPECT_EQ(describe(model.graph, run.patterns),
            (std::set<std::string>{"packing -1 {q, k}", "packing -1 {q, v}", "packing -1 {k, v}",
                                   "packing -1 {q, k, v}"}));
  EXPECT_EQ(run.statistics.packing, 4);
}

TEST(CandidatesTest, PackingNeverJoinsDependentNodes) {
  ir::Model model = parse(kFigure3);
  Generated run = generate(model.graph, CandidateOptions{});
  for (const Pattern& pattern : run.patterns) {
    EXPECT_NE(names(model.graph, pattern.nodes), "{A, D}");
    EXPECT_NE(names(model.graph, pattern.nodes), "{A, C}");
  }
}

// Transformer-like blocks: decomposed LayerNorm, attention with softmax, GELU MLP,
// residuals. 40 nodes per block.
ir::Graph transformer_graph(int blocks) {
  constexpr int64_t kRows = 128;
  constexpr int64_t kHidden = 256;
  ir::Graph graph;
  auto f32 = [](std::vector<int64_t> dims) {
    return ir::TensorType::make(ir::DType::kFloat32, dims);
  };
  int counter = 0;
  auto value = [&](std::vector<int64_t> dims) {
    return graph.add_value("v" + std::to_string(counter++), f32(std::move(dims)));
  };
  auto input = [&](const std::string& name, std::vector<int64_t> dims) {
    ir::ValueId id = graph.add_value(name, f32(std::move(dims)));
    graph.add_graph_input(id);
    return id;
  };
  auto op = [&](const std::string& type, std::vector<ir::ValueId> inputs,
                std::vector<int64_t> dims) {
    ir::ValueId out = value(std::move(dims));
    ir::NodeId node =
        graph.add_node(type, std::move(inputs), {out}, "", "n" + std::to_string(counter));
    graph.node(node).opset = 17;
    return std::make_pair(node, out);
  };
  auto simple = [&](const std::string& type, std::vector<ir::ValueId> inputs,
                    std::vector<int64_t> dims) {
    return op(type, std::move(inputs), std::move(dims)).second;
  };
  // Opset 17: ReduceSum takes its axes as an input, the others as an attribute.
  ir::ValueId axes = graph.add_initializer("axes", ir::Tensor::from_int64({1}, {1}));
  auto reduce = [&](const std::string& type, ir::ValueId in) {
    if (type == "ReduceSum") return op(type, {in, axes}, {kRows, 1}).second;
    auto [node, out] = op(type, {in}, {kRows, 1});
    graph.node(node).set_attribute(ir::Attribute::make_ints("axes", {1}));
    return out;
  };
  ir::ValueId x = input("x", {kRows, kHidden});
  ir::ValueId gamma = input("gamma", {kHidden});
  ir::ValueId beta = input("beta", {kHidden});
  ir::ValueId epsilon = input("epsilon", {1});
  ir::ValueId w_square = input("w_square", {kHidden, kHidden});
  ir::ValueId w_up = input("w_up", {kHidden, 4 * kHidden});
  ir::ValueId w_down = input("w_down", {4 * kHidden, kHidden});
  ir::ValueId half = input("half", {1});
  auto layer_norm = [&](ir::ValueId in) {
    ir::ValueId mean = reduce("ReduceMean", in);
    ir::ValueId centered = simple("Sub", {in, mean}, {kRows, kHidden});
    ir::ValueId square = simple("Mul", {centered, centered}, {kRows, kHidden});
    ir::ValueId variance = reduce("ReduceMean", square);
    ir::ValueId shifted = simple("Add", {variance, epsilon}, {kRows, 1});
    ir::ValueId deviation = simple("Sqrt", {shifted}, {kRows, 1});
    ir::ValueId normalized = simple("Div", {centered, deviation}, {kRows, kHidden});
    ir::ValueId scaled = simple("Mul", {normalized, gamma}, {kRows, kHidden});
    return simple("Add", {scaled, beta}, {kRows, kHidden});
  };
  for (int block = 0; block < blocks; ++block) {
    ir::ValueId ln1 = layer_norm(x);
    ir::ValueId q = simple("MatMul", {ln1, w_square}, {kRows, kHidden});
    ir::ValueId k = simple("MatMul", {ln1, w_square}, {kRows, kHidden});
    ir::ValueId v = simple("MatMul", {ln1, w_square}, {kRows, kHidden});
    auto [transpose, kt] = op("Transpose", {k}, {kHidden, kRows});
    graph.node(transpose).set_attribute(ir::Attribute::make_ints("perm", {1, 0}));
    ir::ValueId scores = simple("MatMul", {q, kt}, {kRows, kRows});
    ir::ValueId scaled = simple("Mul", {scores, half}, {kRows, kRows});
    ir::ValueId maximum = reduce("ReduceMax", scaled);
    ir::ValueId shifted = simple("Sub", {scaled, maximum}, {kRows, kRows});
    ir::ValueId exponent = simple("Exp", {shifted}, {kRows, kRows});
    ir::ValueId sum = reduce("ReduceSum", exponent);
    ir::ValueId probabilities = simple("Div", {exponent, sum}, {kRows, kRows});
    ir::ValueId attention = simple("MatMul", {probabilities, v}, {kRows, kHidden});
    ir::ValueId projected = simple("MatMul", {attention, w_square}, {kRows, kHidden});
    ir::ValueId residual = simple("Add", {projected, x}, {kRows, kHidden});
    ir::ValueId ln2 = layer_norm(residual);
    ir::ValueId up = simple("MatMul", {ln2, w_up}, {kRows, 4 * kHidden});
    ir::ValueId gelu_half = simple("Mul", {up, half}, {kRows, 4 * kHidden});
    ir::ValueId gelu_scaled = simple("Div", {up, half}, {kRows, 4 * kHidden});
    ir::ValueId gelu_erf = simple("Erf", {gelu_scaled}, {kRows, 4 * kHidden});
    ir::ValueId gelu_shift = simple("Add", {gelu_erf, half}, {kRows, 4 * kHidden});
    ir::ValueId gelu = simple("Mul", {gelu_half, gelu_shift}, {kRows, 4 * kHidden});
    ir::ValueId down = simple("MatMul", {gelu, w_down}, {kRows, kHidden});
    x = simple("Add", {down, residual}, {kRows, kHidden});
  }
  graph.add_graph_output(x);
  return graph;
}

PartitionOptions transformer_partition() {
  PartitionOptions options;
  options.large_gemm_flops = 2 * 128 * 256 * 256;  // the projections are library calls
  return options;
}

TEST(CandidatesTest, DeterministicAcrossRuns) {
  ir::Graph graph = transformer_graph(4);
  Generated first = generate(graph, CandidateOptions{}, transformer_partition());
  Generated second = generate(graph, CandidateOptions{}, transformer_partition());
  ASSERT_EQ(first.patterns.size(), second.patterns.size());
  for (size_t i = 0; i < first.patterns.size(); ++i) {
    EXPECT_EQ(first.patterns[i].nodes, second.patterns[i].nodes);
    EXPECT_EQ(first.patterns[i].source, second.patterns[i].source);
    EXPECT_EQ(first.patterns[i].score_us, second.patterns[i].score_us);
  }
  EXPECT_EQ(first.statistics.rejected_non_convex, second.statistics.rejected_non_convex);
  EXPECT_EQ(first.statistics.rejected_infeasible, second.statistics.rejected_infeasible);
  // Sorted by (first node, size, nodes), no duplicates.
  for (size_t i = 1; i < first.patterns.size(); ++i) {
    const auto& a = first.patterns[i - 1].nodes;
    const auto& b = first.patterns[i].nodes;
    EXPECT_TRUE(a.front() < b.front() || (a.front() == b.front() && a.size() < b.size()) ||
                (a.front() == b.front() && a.size() == b.size() && a < b));
  }
}

TEST(CandidatesTest, TinyTimeLimitKeepsSubstitutionPatterns) {
  ir::Graph graph = transformer_graph(4);
  CandidateOptions options;
  options.time_limit_s = 0;
  Generated run = generate(graph, options, transformer_partition());
  EXPECT_TRUE(run.statistics.hit_time_limit);
  EXPECT_GT(run.statistics.substitution, 0);
  EXPECT_EQ(run.statistics.exploratory, 0);
  EXPECT_EQ(run.statistics.packing, 0);
  // Epilogue and attention patterns are linear in the graph and not bounded by the
  // time limit.
  EXPECT_GT(run.statistics.epilogue, 0);
  EXPECT_EQ(static_cast<int64_t>(run.patterns.size()),
            run.statistics.substitution + run.statistics.epilogue + run.statistics.attention);
}

// Every returned pattern is convex, checked here by brute force on a small graph.
TEST(CandidatesTest, EveryPatternIsConvexByBruteForce) {
  ir::Graph graph = transformer_graph(2);
  Generated run = generate(graph, CandidateOptions{}, transformer_partition());
  ASSERT_FALSE(run.patterns.empty());
  Result<ir::Reachability> reachability = ir::Reachability::build(graph);
  ASSERT_TRUE(reachability.is_ok());
  std::vector<ir::NodeId> all = graph.node_ids();
  Partition partition = partition_graph(graph, transformer_partition());
  for (const Pattern& pattern : run.patterns) {
    // Only an epilogue pattern holds a partition node: its one library call.
    int partition_nodes = 0;
    for (ir::NodeId id : pattern.nodes) {
      partition_nodes += partition.role(id) == NodeRole::kPartition ? 1 : 0;
    }
    EXPECT_EQ(partition_nodes, pattern.source == PatternSource::kEpilogue ? 1 : 0)
        << names(graph, pattern.nodes);
    for (ir::NodeId outside : all) {
      if (std::binary_search(pattern.nodes.begin(), pattern.nodes.end(), outside)) continue;
      bool from = false;
      bool to = false;
      for (ir::NodeId inside : pattern.nodes) {
        from = from || reachability.value().reaches(inside, outside);
        to = to || reachability.value().reaches(outside, inside);
      }
      EXPECT_FALSE(from && to) << "node " << outside << " breaks convexity of "
                               << names(graph, pattern.nodes);
    }
  }
}

// With a reachability window of 64 positions on a 160-node graph the shifted-row
// bitsets are exercised: every pattern is still convex, the small patterns that fit
// the window are still found, and wide ones are refused rather than guessed.
TEST(CandidatesTest, NarrowReachabilityWindowStaysSound) {
  ir::Graph graph = transformer_graph(4);
  Generated full = generate(graph, CandidateOptions{}, transformer_partition());
  CandidateOptions narrow_options;
  narrow_options.reachability_memory_bytes = 160 * 64 / 8;  // 64 positions per node
  Generated narrow = generate(graph, narrow_options, transformer_partition());
  Result<ir::Reachability> reachability = ir::Reachability::build(graph);
  ASSERT_TRUE(reachability.is_ok());
  std::vector<ir::NodeId> all = graph.node_ids();
  auto convex = [&](const std::vector<ir::NodeId>& nodes) {
    for (ir::NodeId outside : all) {
      if (std::binary_search(nodes.begin(), nodes.end(), outside)) continue;
      bool from = false;
      bool to = false;
      for (ir::NodeId inside : nodes) {
        from = from || reachability.value().reaches(inside, outside);
        to = to || reachability.value().reaches(outside, inside);
      }
      if (from && to) return false;
    }
    return true;
  };
  std::set<std::vector<ir::NodeId>> narrow_sets;
  for (const Pattern& pattern : narrow.patterns) {
    EXPECT_TRUE(convex(pattern.nodes)) << names(graph, pattern.nodes);
    narrow_sets.insert(pattern.nodes);
  }
  // The ids of this graph are a topological order, so a span is max id - min id.
  size_t kept = 0;
  size_t narrow_enough = 0;
  for (const Pattern& pattern : full.patterns) {
    if (pattern.nodes.back() - pattern.nodes.front() >= 64) continue;
    if (pattern.source == PatternSource::kPacking) continue;  // pairs depend on the pool
    ++narrow_enough;
    kept += narrow_sets.count(pattern.nodes);
  }
  EXPECT_GT(narrow_enough, 0u);
  EXPECT_EQ(kept, narrow_enough);

  // A 100-node elementwise chain spans more than the window: refused, not guessed.
  ir::Graph chain;
  ir::TensorType type = ir::TensorType::make(ir::DType::kFloat32, {64, 64});
  ir::ValueId current = chain.add_value("x", type);
  chain.add_graph_input(current);
  for (int i = 0; i < 100; ++i) {
    ir::ValueId next = chain.add_value("v" + std::to_string(i), type);
    chain.add_node(i % 2 == 0 ? "Relu" : "Neg", {current}, {next}, "", "n" + std::to_string(i));
    current = next;
  }
  chain.add_graph_output(current);
  CandidateOptions substitution_only;
  substitution_only.exploratory = false;
  substitution_only.packing = false;
  Generated whole = generate(chain, substitution_only);
  ASSERT_EQ(whole.patterns.size(), 1u);
  EXPECT_EQ(whole.patterns[0].nodes.size(), 100u);
  substitution_only.reachability_memory_bytes = 100 * 64 / 8;
  Generated refused = generate(chain, substitution_only);
  EXPECT_TRUE(refused.patterns.empty());
  EXPECT_EQ(refused.statistics.rejected_non_convex, 1);
}

TEST(CandidatesTest, TenThousandNodeGraph) {
  ir::Graph graph = transformer_graph(250);
  ASSERT_GE(graph.num_nodes(), 10000);
  auto start = std::chrono::steady_clock::now();
  Generated run = generate(graph, CandidateOptions{}, transformer_partition());
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "10k-node candidates: %lld nodes, %zu patterns (substitution %lld, exploratory %lld, "
      "packing %lld, rejected infeasible %lld, non-convex %lld), %.3f s%s\n",
      static_cast<long long>(graph.num_nodes()), run.patterns.size(),
      static_cast<long long>(run.statistics.substitution),
      static_cast<long long>(run.statistics.exploratory),
      static_cast<long long>(run.statistics.packing),
      static_cast<long long>(run.statistics.rejected_infeasible),
      static_cast<long long>(run.statistics.rejected_non_convex), seconds,
      run.statistics.hit_time_limit ? " (hit time limit)" : "");
  EXPECT_GT(run.statistics.substitution, 0);
  EXPECT_GT(run.statistics.exploratory, 0);
}

}  // namespace
}  // namespace stitch::fusion

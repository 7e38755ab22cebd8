// Tests of the fusion plan: the ILP with clique rows, components, greedy warm
// start, deadline fallback, cycle cuts (FusionStitching Fig. 3) and the verifier.
#include "fusion/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

namespace stitch::fusion {
namespace {

using ir::NodeId;

// Builds graphs node by node: add("B", {"a"}, "b") adds node "B" (Relu) reading
// value a and producing value b; values nothing produced yet become graph inputs.
class GraphBuilder {
 public:
  NodeId add(const std::string& name, const std::vector<std::string>& inputs,
             const std::string& output) {
    std::vector<ir::ValueId> input_ids;
    for (const std::string& input : inputs) input_ids.push_back(value(input, true));
    return graph.add_node("Relu", input_ids, {value(output, false)}, "", name);
  }
  ir::ValueId value(const std::string& name, bool as_input) {
    if (auto id = graph.find_value(name)) return *id;
    ir::ValueId id = graph.add_value(name, ir::TensorType::make(ir::DType::kFloat32, {4}));
    if (as_input) graph.add_graph_input(id);
    return id;
  }
  // A chain n0 -> n1 -> ... of `length` nodes.
  void chain(int length, const std::string& prefix = "n") {
    std::string previous = prefix + "_in";
    for (int i = 0; i < length; ++i) {
      std::string name = prefix + std::to_string(i);
      add(name, {previous}, name + "_out");
      previous = name + "_out";
    }
  }
  ir::Graph graph;
};

Pattern pattern(std::vector<NodeId> nodes, double score) {
  Pattern result;
  result.nodes = std::move(nodes);
  result.score_us = score;
  return result;
}

FusionPlan solve(const ir::Graph& graph, const std::vector<Pattern>& candidates,
                 const PlanOptions& options = {}) {
  Result<FusionPlan> plan = solve_plan(graph, candidates, options);
  EXPECT_TRUE(plan.is_ok()) << plan.status().message();
  if (!plan.is_ok()) return {};
  Status verified = verify_plan(graph, *plan);
  EXPECT_TRUE(verified.is_ok()) << verified.message();
  return *plan;
}

// Deterministic pseudo-random numbers for the larger instances.
class Lcg {
 public:
  explicit Lcg(uint64_t seed = 42) : state_(seed) {}
  uint32_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state_ >> 33);
  }
  int below(int bound) { return static_cast<int>(next() % static_cast<uint32_t>(bound)); }

 private:
  uint64_t state_;
};

// Overlapping windows on a chain of `length` nodes with pseudo-random scores.
std::vector<Pattern> random_windows(int length, int count, Lcg& random) {
  std::vector<Pattern> candidates;
  for (int i = 0; i < count; ++i) {
    int size = 2 + random.below(5);
    int first = random.below(length - size + 1);
    std::vector<NodeId> nodes;
    for (int k = 0; k < size; ++k) nodes.push_back(first + k);
    candidates.push_back(pattern(nodes, 1.0 + random.below(1000) / 100.0));
  }
  return candidates;
}

// A random DAG of `size` nodes (each reads one or two of the 6 nodes before it) and
// up to `count` candidates: random subsets of 8-node id windows, many not convex.
std::vector<Pattern> random_dag(GraphBuilder& b, int size, int count, Lcg& random) {
  for (int i = 0; i < size; ++i) {
    std::vector<std::string> inputs = {"x"};
    if (i > 0) inputs = {"v" + std::to_string(i - 1 - random.below(std::min(i, 6)))};
    if (i > 1 && random.below(2) == 0) {
      inputs.push_back("v" + std::to_string(i - 1 - random.below(std::min(i, 6))));
    }
    b.add("n" + std::to_string(i), inputs, "v" + std::to_string(i));
  }
  std::vector<Pattern> candidates;
  for (int k = 0; k < count; ++k) {
    int first = random.below(size - 8);
    std::vector<NodeId> nodes;
    for (int j = 0; j < 8; ++j) {
      if (random.below(3) == 0) nodes.push_back(first + j);
    }
    if (nodes.size() < 2) continue;
    candidates.push_back(pattern(nodes, 1.0 + random.below(100) / 10.0));
  }
  return candidates;
}

TEST(SolvePlanTest, HandSolvedChain) {
  GraphBuilder b;
  b.chain(6);
  // Best: {0,1,2} + {3,4,5} = 8.5; next {0,1,2} + {4,5} = 8, {0,1} + {2,3} + {4,5} = 7.5.
  std::vector<Pattern> candidates = {pattern({0, 1}, 2),   pattern({1, 2}, 3),
                                     pattern({2, 3}, 2),   pattern({3, 4, 5}, 4),
                                     pattern({4, 5}, 3.5), pattern({0, 1, 2}, 4.5)};
  FusionPlan plan = solve(b.graph, candidates);
  EXPECT_EQ(plan.chosen, (std::vector<int>{3, 5}));
  EXPECT_EQ(plan.groups, (std::vector<std::vector<NodeId>>{{3, 4, 5}, {0, 1, 2}}));
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 8.5);
  EXPECT_EQ(plan.statistics.status, "optimal");
  EXPECT_EQ(plan.statistics.components, 1);
  EXPECT_EQ(plan.statistics.variables, 6);
  EXPECT_EQ(plan.statistics.cycle_cuts, 0);
}

TEST(SolvePlanTest, IlpBeatsGreedy) {
  GraphBuilder b;
  b.chain(4);
  // Greedy takes {0,1,2} (5), which blocks {0,1} and {2,3} (3 + 3 = 6).
  std::vector<Pattern> candidates = {pattern({0, 1, 2}, 5), pattern({0, 1}, 3), pattern({2, 3}, 3)};
  FusionPlan plan = solve(b.graph, candidates);
  EXPECT_EQ(plan.chosen, (std::vector<int>{1, 2}));
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 6);
  EXPECT_DOUBLE_EQ(plan.statistics.greedy_objective_us, 5);
  EXPECT_EQ(plan.statistics.status, "optimal");
  // Rows: nodes 0 and 1 share {c0, c1} (merged into one row), node 2 {c0, c2}; node 3
  // is in c2 alone (no row).
  EXPECT_EQ(plan.statistics.constraints, 2);

  PlanOptions greedy_only;
  greedy_only.use_greedy_only = true;
  FusionPlan greedy = solve(b.graph, candidates, greedy_only);
  EXPECT_EQ(greedy.chosen, (std::vector<int>{0}));
  EXPECT_EQ(greedy.statistics.status, "greedy");
  EXPECT_DOUBLE_EQ(greedy.statistics.objective_us, 5);
  EXPECT_EQ(greedy.statistics.components, 1);
}

// FusionStitching Fig. 3: A -> B -> C and A -> C. Fusing A and C without B puts B
// both after and before the fused kernel.
TEST(SolvePlanTest, Figure3CycleThroughUnfusedNodeIsCut) {
  GraphBuilder b;
  NodeId a = b.add("A", {"x"}, "a");
  NodeId bb = b.add("B", {"a"}, "b");
  NodeId c = b.add("C", {"a", "b"}, "c");
  std::vector<Pattern> candidates = {pattern({a, c}, 10), pattern({a, bb}, 4), pattern({bb, c}, 3)};
  FusionPlan plan = solve(b.graph, candidates);
  EXPECT_EQ(plan.chosen, (std::vector<int>{1}));
  EXPECT_GE(plan.statistics.cycle_cuts, 1);
  EXPECT_EQ(plan.statistics.status, "optimal");
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 4);
  // Greedy never takes {A, C}: its own acyclicity check refuses it.
  EXPECT_DOUBLE_EQ(plan.statistics.greedy_objective_us, 4);

  FusionPlan cyclic;
  cyclic.chosen = {0};
  cyclic.groups = {{a, c}};
  EXPECT_EQ(verify_plan(b.graph, cyclic).message(),
            "fusion plan: group 0 is not convex: a path leaves it through node \"B\" (Relu) and "
            "re-enters at node \"C\" (Relu)");
}

// Two groups, each convex alone, that cross: A -> B and C -> D with {A, D} and
// {B, C} fused make {A,D} -> {B,C} -> {A,D}. They start in separate components
// (no shared node); the cut joins them.
TEST(SolvePlanTest, CycleBetweenTwoGroupsJoinsComponents) {
  GraphBuilder b;
  NodeId a = b.add("A", {"x"}, "a");
  NodeId bb = b.add("B", {"a"}, "b");
  NodeId c = b.add("C", {"y"}, "c");
  NodeId d = b.add("D", {"c"}, "d");
  std::vector<Pattern> candidates = {pattern({a, d}, 5), pattern({bb, c}, 4)};
  FusionPlan plan = solve(b.graph, candidates);
  EXPECT_EQ(plan.chosen, (std::vector<int>{0}));
  EXPECT_EQ(plan.statistics.cycle_cuts, 1);
  EXPECT_EQ(plan.statistics.components, 1);
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 5);

  FusionPlan cyclic;
  cyclic.chosen = {0, 1};
  cyclic.groups = {{a, d}, {bb, c}};
  EXPECT_EQ(verify_plan(b.graph, cyclic).message(),
            "fusion plan: contracting the groups makes a cycle: group 0 (\"A\" (Relu)) -> "
            "group 1 (\"B\" (Relu)) -> group 0 (\"A\" (Relu))");
}

TEST(SolvePlanTest, IndependentComponentsAreCounted) {
  GraphBuilder b;
  b.chain(3, "p");  // nodes 0-2
  b.chain(3, "q");  // nodes 3-5
  b.chain(2, "r");  // nodes 6-7
  std::vector<Pattern> candidates = {pattern({0, 1}, 2), pattern({1, 2}, 3), pattern({3, 4}, 3),
                                     pattern({4, 5}, 2), pattern({6, 7}, 1), pattern({0, 2}, -1)};
  FusionPlan plan = solve(b.graph, candidates);
  EXPECT_EQ(plan.statistics.components, 3);
  EXPECT_EQ(plan.statistics.variables, 5);  // the negative score is not a variable
  EXPECT_EQ(plan.chosen, (std::vector<int>{1, 2, 4}));
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 7);
}

TEST(SolvePlanTest, DeadlineFallsBackToAValidPlan) {
  GraphBuilder b;
  b.chain(400);
  Lcg random;
  std::vector<Pattern> candidates = random_windows(400, 3000, random);
  PlanOptions options;
  options.time_limit_s = 1e-6;
  FusionPlan plan = solve(b.graph, candidates, options);
  // The deadline passes before GLPK finds anything of its own: the greedy plan.
  EXPECT_EQ(plan.statistics.status, "time limit: greedy");
  PlanOptions greedy_options;
  greedy_options.use_greedy_only = true;
  FusionPlan greedy = solve(b.graph, candidates, greedy_options);
  EXPECT_FALSE(plan.chosen.empty());
  EXPECT_EQ(plan.chosen, greedy.chosen);
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, greedy.statistics.objective_us);
}

TEST(SolvePlanTest, SameInputSamePlan) {
  GraphBuilder b;
  b.chain(200);
  Lcg random;
  std::vector<Pattern> candidates = random_windows(200, 600, random);
  FusionPlan first = solve(b.graph, candidates);
  FusionPlan second = solve(b.graph, candidates);
  EXPECT_EQ(first.statistics.status, "optimal");
  EXPECT_EQ(first.chosen, second.chosen);
  EXPECT_DOUBLE_EQ(first.statistics.objective_us, second.statistics.objective_us);
  EXPECT_GE(first.statistics.objective_us, first.statistics.greedy_objective_us);
}

// A random DAG (each node reads one or two earlier values) with random node sets
// in small id windows, many of them not convex: greedy's incremental acyclicity
// check and the ILP's cycle cuts must both end in plans the verifier accepts.
TEST(SolvePlanTest, RandomDagPlansAreValid) {
  for (int seed = 0; seed < 20; ++seed) {
    Lcg random(static_cast<uint64_t>(seed) * 7919 + 1);
    GraphBuilder b;
    std::vector<Pattern> candidates = random_dag(b, 120, 150, random);
    FusionPlan plan = solve(b.graph, candidates);
    EXPECT_EQ(plan.statistics.status, "optimal") << "seed " << seed;
    EXPECT_GE(plan.statistics.cycle_cuts, 1) << "seed " << seed;
    EXPECT_GE(plan.statistics.objective_us, plan.statistics.greedy_objective_us - 1e-9);
    PlanOptions greedy_only;
    greedy_only.use_greedy_only = true;
    FusionPlan greedy = solve(b.graph, candidates, greedy_only);
    EXPECT_DOUBLE_EQ(greedy.statistics.objective_us, plan.statistics.greedy_objective_us);
  }
}

// Set packing over independent nodes is hard for branch and bound: a short
// deadline stops GLPK, and the plan is its incumbent or greedy, never worse.
TEST(SolvePlanTest, ShortDeadlineOnHardInstanceKeepsBestOfIncumbentAndGreedy) {
  GraphBuilder b;
  const int size = 150;
  for (int i = 0; i < size; ++i) b.add("n" + std::to_string(i), {"x"}, "v" + std::to_string(i));
  Lcg random;
  std::vector<Pattern> candidates;
  for (int k = 0; k < 900; ++k) {
    std::vector<NodeId> nodes;
    for (int j = 0; j < 4; ++j) nodes.push_back(random.below(size));
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    candidates.push_back(pattern(nodes, 1.0 + random.below(1000) / 100.0));
  }
  PlanOptions options;
  options.time_limit_s = 0.2;
  auto start = std::chrono::steady_clock::now();
  FusionPlan plan = solve(b.graph, candidates, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "hard instance: " << seconds << " s, status " << plan.statistics.status
            << ", objective " << plan.statistics.objective_us << " (greedy "
            << plan.statistics.greedy_objective_us << "), gap " << plan.statistics.gap << "\n";
  EXPECT_TRUE(plan.statistics.status == "time limit: greedy" ||
              plan.statistics.status == "time limit: best incumbent")
      << plan.statistics.status;
  EXPECT_GE(plan.statistics.objective_us, plan.statistics.greedy_objective_us);
}

// Windows: a component larger than window_variables is solved window by window in
// topological order. Chain of 6, window of 2 candidates: the first window holds
// {0,1} (2) and {0,1,2} (4.5) and takes {0,1,2}; the second holds {1,2}/{2,3} — both
// overlap node 2, now taken — so only what lies after node 2 remains: {3,4,5} (4)
// against {4,5} (3.5); the plan is {0,1,2} + {3,4,5} = 8.5, the optimum here.
TEST(SolvePlanTest, WindowedComponentSolvesWindowsInOrder) {
  GraphBuilder b;
  b.chain(6);
  std::vector<Pattern> candidates = {pattern({0, 1}, 2),   pattern({1, 2}, 3),
                                     pattern({2, 3}, 2),   pattern({3, 4, 5}, 4),
                                     pattern({4, 5}, 3.5), pattern({0, 1, 2}, 4.5)};
  PlanOptions options;
  options.window_variables = 2;
  FusionPlan plan = solve(b.graph, candidates, options);
  EXPECT_EQ(plan.chosen, (std::vector<int>{3, 5}));
  EXPECT_DOUBLE_EQ(plan.statistics.objective_us, 8.5);
  EXPECT_EQ(plan.statistics.status, "optimal in windows");
  // Windows of two by first node: {c0, c5}, {c1, c2}, {c3, c4}; c1 and c2 overlap
  // the taken node 2, so the second window is empty and two programs run.
  EXPECT_EQ(plan.statistics.windows, 2);
}

// Windowed plans with cycle cuts spanning windows: feasible, acyclic (verify_plan)
// and no worse than greedy. (On these instances the single program with cycle cuts
// needs seconds per seed; the windows take milliseconds.)
TEST(SolvePlanTest, WindowedPlansOnRandomDagsAreValidAndNoWorseThanGreedy) {
  for (int seed = 0; seed < 20; ++seed) {
    Lcg random(static_cast<uint64_t>(seed) * 104729 + 3);
    GraphBuilder b;
    std::vector<Pattern> candidates = random_dag(b, 200, 400, random);
    PlanOptions options;
    options.window_variables = 40;
    FusionPlan windowed = solve(b.graph, candidates, options);  // verify_plan inside
    EXPECT_EQ(windowed.statistics.status, "optimal in windows") << "seed " << seed;
    EXPECT_GT(windowed.statistics.windows, 1) << "seed " << seed;
    EXPECT_GE(windowed.statistics.objective_us, windowed.statistics.greedy_objective_us - 1e-9)
        << "seed " << seed;
    EXPECT_GE(windowed.statistics.cycle_cuts, 1) << "seed " << seed;
  }
}

// The deadline in the middle of a windowed component: the solved windows stay, the
// rest is completed greedily, and the plan is valid and no worse than greedy.
TEST(SolvePlanTest, WindowedDeadlineKeepsSolvedWindowsAndCompletesGreedily) {
  GraphBuilder b;
  b.chain(20003);
  Lcg random(7);
  std::vector<Pattern> candidates = random_windows(20003, 40000, random);
  std::sort(candidates.begin(), candidates.end(),
            [](const Pattern& x, const Pattern& y) { return x.nodes < y.nodes; });
  candidates.erase(
      std::unique(candidates.begin(), candidates.end(),
                  [](const Pattern& x, const Pattern& y) { return x.nodes == y.nodes; }),
      candidates.end());
  PlanOptions options;
  options.window_variables = 200;
  options.time_limit_s = 0.02;
  FusionPlan plan = solve(b.graph, candidates, options);  // verify_plan inside
  EXPECT_TRUE(plan.statistics.status == "time limit: best incumbent" ||
              plan.statistics.status == "time limit: greedy")
      << plan.statistics.status;
  EXPECT_GE(plan.statistics.objective_us, plan.statistics.greedy_objective_us - 1e-9);
}

TEST(SolvePlanTest, RejectsUnsortedCandidate) {
  GraphBuilder b;
  b.chain(3);
  Result<FusionPlan> plan = solve_plan(b.graph, {pattern({2, 1}, 1)}, {});
  ASSERT_FALSE(plan.is_ok());
  EXPECT_EQ(plan.status().message(),
            "fusion candidate 0: node ids must be sorted ascending without duplicates (at "
            "\"n1\" (Relu))");
}

TEST(VerifyPlanTest, OverlappingGroupsNameTheNode) {
  GraphBuilder b;
  b.chain(3);
  FusionPlan plan;
  plan.chosen = {0, 1};
  plan.groups = {{0, 1}, {1, 2}};
  EXPECT_EQ(verify_plan(b.graph, plan).message(),
            "fusion plan: groups 0 and 1 both contain node \"n1\" (Relu)");
}

// Scale check (printed, not asserted): 2000 overlapping chain windows in one
// component.
TEST(SolvePlanTest, TwoThousandChainCandidates) {
  GraphBuilder b;
  b.chain(2003);
  std::vector<Pattern> candidates;
  for (int i = 0; i < 2000; ++i) {
    std::vector<NodeId> nodes = {i, i + 1, i + 2};
    if (i % 3 == 0) nodes.push_back(i + 3);
    candidates.push_back(pattern(nodes, 1.0 + (i * 7919 % 101) / 10.0));
  }
  auto start = std::chrono::steady_clock::now();
  FusionPlan plan = solve(b.graph, candidates);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "2000 chain candidates: " << seconds << " s, status " << plan.statistics.status
            << ", objective " << plan.statistics.objective_us << " (greedy "
            << plan.statistics.greedy_objective_us << "), " << plan.statistics.constraints
            << " rows\n";
  EXPECT_EQ(plan.statistics.status, "optimal");
  EXPECT_GE(plan.statistics.objective_us, plan.statistics.greedy_objective_us);
}

}  // namespace
}  // namespace stitch::fusion

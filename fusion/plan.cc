// The fusion plan: greedy warm start, per-component GLPK programs, cycle cuts.
#include "fusion/plan.h"

#include <glpk.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <sstream>
#include <utility>

#include "fusion/quotient_graph.h"
#include "ir/core/analysis.h"

namespace stitch::fusion {
namespace {

using Clock = std::chrono::steady_clock;
using ir::NodeId;

Status validate_candidates(const ir::Graph& graph, const std::vector<Pattern>& candidates) {
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Pattern& pattern = candidates[i];
    std::ostringstream where;
    where << "fusion candidate " << i << ": ";
    if (!std::isfinite(pattern.score_us)) {
      return Status::internal(where.str() + "score is not finite");
    }
    for (size_t k = 0; k < pattern.nodes.size(); ++k) {
      NodeId node = pattern.nodes[k];
      if (node < 0 || node >= graph.node_capacity() || graph.node(node).dead) {
        return Status::internal(where.str() + "node id " + std::to_string(node) +
                                " is not a live node of the graph");
      }
      if (k > 0 && pattern.nodes[k - 1] >= node) {
        return Status::internal(where.str() +
                                "node ids must be sorted ascending without duplicates (at " +
                                graph.node(node).display_name() + ")");
      }
    }
  }
  return Status::ok();
}

// The quotient graph while greedy contracts groups one at a time, kept acyclic
// with a topological rank per vertex. A vertex is named by its representative node
// (a group's smallest node id; an ungrouped node is its own vertex).
class IncrementalQuotient {
 public:
  explicit IncrementalQuotient(const NodeGraph& nodes) : nodes_(nodes) {
    const size_t capacity = static_cast<size_t>(nodes.capacity());
    vertex_of_.resize(capacity);
    std::iota(vertex_of_.begin(), vertex_of_.end(), 0);
    rank_ = nodes.position;
    slot_owner_ = nodes.order;
    members_.resize(capacity);
    in_group_.assign(capacity, 0);
    visited_.assign(capacity, 0);
  }

  // Contracts `group` (ungrouped nodes) into one vertex unless that closes a cycle:
  // a path from the group through other vertices back into it. Such a path climbs
  // in rank, so only ranks below the group's highest rank are searched. On success
  // the rank window [lowest, highest] is reordered: the other vertices, then the
  // group, then the vertices the group reaches.
  bool try_contract(const std::vector<NodeId>& group) {
    ++epoch_;
    int32_t low = std::numeric_limits<int32_t>::max();
    int32_t high = -1;
    for (NodeId node : group) {
      in_group_[static_cast<size_t>(node)] = epoch_;
      low = std::min(low, rank_[static_cast<size_t>(node)]);
      high = std::max(high, rank_[static_cast<size_t>(node)]);
    }
    stack_.clear();
    auto visit_successors = [&](NodeId member) {
      for (const NodeId* s = nodes_.successors_begin(member); s != nodes_.successors_end(member);
           ++s) {
        NodeId vertex = vertex_of_[static_cast<size_t>(*s)];
        if (in_group_[static_cast<size_t>(vertex)] == epoch_) return false;
        if (rank_[static_cast<size_t>(vertex)] < high &&
            visited_[static_cast<size_t>(vertex)] != epoch_) {
          visited_[static_cast<size_t>(vertex)] = epoch_;
          stack_.push_back(vertex);
        }
      }
      return true;
    };
    for (NodeId node : group) {
      for (const NodeId* s = nodes_.successors_begin(node); s != nodes_.successors_end(node); ++s) {
        NodeId vertex = vertex_of_[static_cast<size_t>(*s)];
        if (in_group_[static_cast<size_t>(vertex)] == epoch_) continue;
        if (rank_[static_cast<size_t>(vertex)] < high &&
            visited_[static_cast<size_t>(vertex)] != epoch_) {
          visited_[static_cast<size_t>(vertex)] = epoch_;
          stack_.push_back(vertex);
        }
      }
    }
    while (!stack_.empty()) {
      NodeId vertex = stack_.back();
      stack_.pop_back();
      if (members_[static_cast<size_t>(vertex)].empty()) {
        if (!visit_successors(vertex)) return false;
      } else {
        for (NodeId member : members_[static_cast<size_t>(vertex)]) {
          if (!visit_successors(member)) return false;
        }
      }
    }
    const NodeId representative = group.front();
    std::vector<NodeId> before;
    std::vector<NodeId> after;
    for (int32_t rank = low; rank <= high; ++rank) {
      NodeId owner = slot_owner_[static_cast<size_t>(rank)];
      if (owner == ir::kNoId || in_group_[static_cast<size_t>(owner)] == epoch_) continue;
      (visited_[static_cast<size_t>(owner)] == epoch_ ? after : before).push_back(owner);
    }
    before.push_back(representative);
    before.insert(before.end(), after.begin(), after.end());
    int32_t rank = low;
    for (NodeId vertex : before) {
      slot_owner_[static_cast<size_t>(rank)] = vertex;
      rank_[static_cast<size_t>(vertex)] = rank++;
    }
    for (; rank <= high; ++rank) slot_owner_[static_cast<size_t>(rank)] = ir::kNoId;
    for (NodeId node : group) vertex_of_[static_cast<size_t>(node)] = representative;
    members_[static_cast<size_t>(representative)] = group;
    return true;
  }

 private:
  const NodeGraph& nodes_;
  std::vector<NodeId> vertex_of_;
  std::vector<int32_t> rank_;                 // by vertex
  std::vector<NodeId> slot_owner_;            // by rank; kNoId for a slot freed by a contraction
  std::vector<std::vector<NodeId>> members_;  // by vertex; empty for an ungrouped node
  std::vector<uint32_t> in_group_;
  std::vector<uint32_t> visited_;
  std::vector<NodeId> stack_;
  uint32_t epoch_ = 0;
};

// Greedy plan: by score descending, ties by index; disjoint and acyclic.
std::vector<char> greedy_plan(const NodeGraph& nodes, const std::vector<Pattern>& candidates,
                              const std::vector<int>& positive) {
  std::vector<int> order = positive;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return candidates[static_cast<size_t>(a)].score_us >
           candidates[static_cast<size_t>(b)].score_us;
  });
  std::vector<char> chosen(candidates.size(), 0);
  std::vector<char> taken(static_cast<size_t>(nodes.capacity()), 0);
  IncrementalQuotient quotient(nodes);
  for (int index : order) {
    const std::vector<NodeId>& group = candidates[static_cast<size_t>(index)].nodes;
    if (group.empty()) continue;
    bool disjoint = std::none_of(group.begin(), group.end(),
                                 [&](NodeId node) { return taken[static_cast<size_t>(node)]; });
    if (!disjoint || !quotient.try_contract(group)) continue;
    for (NodeId node : group) taken[static_cast<size_t>(node)] = 1;
    chosen[static_cast<size_t>(index)] = 1;
  }
  return chosen;
}

// Union-find over candidate indices, smallest index as the root for determinism.
class DisjointSets {
 public:
  explicit DisjointSets(size_t size) : parent_(size) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      parent_[static_cast<size_t>(x)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
      x = parent_[static_cast<size_t>(x)];
    }
    return x;
  }
  void join(int a, int b) {
    a = find(a);
    b = find(b);
    if (a == b) return;
    if (b < a) std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
  }

 private:
  std::vector<int> parent_;
};

enum class ComponentOutcome { kOptimal, kIncumbent, kGreedyAfterDeadline };

struct ComponentSolution {
  ComponentOutcome outcome = ComponentOutcome::kOptimal;
  int rows = 0;
  double gap = 0;
  int windows = 0;  // programs solved for a windowed component
};

struct CallbackContext {
  Clock::time_point deadline;
  double gap = 0;
};

void glpk_callback(glp_tree* tree, void* info) {
  auto* context = static_cast<CallbackContext*>(info);
  double gap = glp_ios_mip_gap(tree);
  if (gap < std::numeric_limits<double>::max()) context->gap = gap;
  if (Clock::now() >= context->deadline) glp_ios_terminate(tree);
}

// One integer program: the clique rows of the nodes its variables touch (rows with
// a single variable dropped, identical rows merged) and its cut rows. Writes the
// value of every variable into `chosen`.
struct CutRow {
  std::vector<int> variables;  // candidate indices, all variables of the subproblem
  double bound = 0;            // sum of the variables <= bound
};

struct Subproblem {
  std::vector<int> variables;  // candidate indices, ascending
  std::vector<CutRow> cuts;
};

// Shared scratch for building rows: node and candidate markers, reused across
// subproblems so each costs time proportional to its own size.
struct RowScratch {
  std::vector<uint32_t> node_stamp;       // by node id
  std::vector<uint32_t> candidate_stamp;  // by candidate index
  uint32_t stamp = 0;
};

Result<ComponentSolution> solve_subproblem(const Subproblem& subproblem,
                                           const std::vector<Pattern>& candidates,
                                           const std::vector<int32_t>& candidates_of_node_begin,
                                           const std::vector<int>& candidates_of_node,
                                           RowScratch& scratch, Clock::time_point deadline,
                                           std::vector<char>& chosen) {
  ComponentSolution solution;
  const std::vector<int>& variables = subproblem.variables;
  ++scratch.stamp;
  for (int variable : variables) {
    scratch.candidate_stamp[static_cast<size_t>(variable)] = scratch.stamp;
  }
  std::vector<std::vector<int>> rows;
  std::vector<int> row;
  for (int variable : variables) {
    for (NodeId node : candidates[static_cast<size_t>(variable)].nodes) {
      const size_t n = static_cast<size_t>(node);
      if (scratch.node_stamp[n] == scratch.stamp) continue;
      scratch.node_stamp[n] = scratch.stamp;
      row.clear();
      for (int32_t k = candidates_of_node_begin[n]; k < candidates_of_node_begin[n + 1]; ++k) {
        int candidate = candidates_of_node[static_cast<size_t>(k)];
        if (scratch.candidate_stamp[static_cast<size_t>(candidate)] == scratch.stamp)
          row.push_back(candidate);
      }
      if (row.size() >= 2) rows.push_back(row);
    }
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  solution.rows = static_cast<int>(rows.size() + subproblem.cuts.size());

  const double remaining_s = std::chrono::duration<double>(deadline - Clock::now()).count();
  if (remaining_s <= 0) {
    solution.outcome = ComponentOutcome::kGreedyAfterDeadline;
    return solution;
  }

  // Column of each variable, 1-based as GLPK counts.
  auto column_of = [&](int candidate) {
    auto it = std::lower_bound(variables.begin(), variables.end(), candidate);
    STITCH_CHECK(it != variables.end() && *it == candidate) << "candidate outside its subproblem";
    return static_cast<int>(it - variables.begin()) + 1;
  };
  glp_prob* problem = glp_create_prob();
  glp_set_obj_dir(problem, GLP_MAX);
  glp_add_cols(problem, static_cast<int>(variables.size()));
  for (size_t j = 0; j < variables.size(); ++j) {
    glp_set_col_kind(problem, static_cast<int>(j) + 1, GLP_BV);
    glp_set_obj_coef(problem, static_cast<int>(j) + 1,
                     candidates[static_cast<size_t>(variables[j])].score_us);
  }
  std::vector<int> indices(variables.size() + 1);
  std::vector<double> values(variables.size() + 1, 1.0);
  auto add_row = [&](const std::vector<int>& members, double high) {
    int r = glp_add_rows(problem, 1);
    glp_set_row_bnds(problem, r, GLP_UP, 0.0, high);
    for (size_t k = 0; k < members.size(); ++k) indices[k + 1] = column_of(members[k]);
    glp_set_mat_row(problem, r, static_cast<int>(members.size()), indices.data(), values.data());
  };
  for (const std::vector<int>& members : rows) add_row(members, 1.0);
  for (const CutRow& cut : subproblem.cuts) add_row(cut.variables, cut.bound);

  glp_iocp parameters;
  glp_init_iocp(&parameters);
  parameters.msg_lev = GLP_MSG_OFF;
  parameters.presolve = GLP_ON;
  parameters.br_tech = GLP_BR_DTH;
  parameters.bt_tech = GLP_BT_BLB;
  parameters.pp_tech = GLP_PP_ALL;
  parameters.sr_heur = GLP_ON;
  parameters.fp_heur = GLP_OFF;
  parameters.ps_heur = GLP_OFF;
  parameters.gmi_cuts = GLP_OFF;
  parameters.mir_cuts = GLP_OFF;
  parameters.cov_cuts = GLP_OFF;
  parameters.clq_cuts = GLP_OFF;
  parameters.binarize = GLP_OFF;
  parameters.mip_gap = 0.0;
  parameters.tm_lim = static_cast<int>(std::clamp(remaining_s * 1000.0, 1.0, 2.0e9));
  CallbackContext context{deadline, 0.0};
  parameters.cb_func = glpk_callback;
  parameters.cb_info = &context;
  const int code = glp_intopt(problem, &parameters);
  const int status = glp_mip_status(problem);
  const bool stopped = code == GLP_ETMLIM || code == GLP_ESTOP;
  if ((code == 0 && status == GLP_OPT) || (stopped && status == GLP_FEAS)) {
    for (size_t j = 0; j < variables.size(); ++j) {
      chosen[static_cast<size_t>(variables[j])] =
          glp_mip_col_val(problem, static_cast<int>(j) + 1) > 0.5;
    }
    solution.outcome = code == 0 ? ComponentOutcome::kOptimal : ComponentOutcome::kIncumbent;
    solution.gap = code == 0 ? 0.0 : context.gap;
    glp_delete_prob(problem);
    return solution;
  }
  glp_delete_prob(problem);
  if (stopped) {
    solution.outcome = ComponentOutcome::kGreedyAfterDeadline;
    return solution;
  }
  std::ostringstream message;
  message << "fusion plan: GLPK glp_intopt failed (return code " << code << ", MIP status "
          << status << ") on a program of " << variables.size()
          << " candidates; rerun with --solver-time-limit 0 to plan greedily";
  return Status::internal(message.str());
}

// Solves one component: in one program when it has at most window_variables
// candidates, else window by window in topological order (see plan.h, "Windows").
// A windowed component whose windowed plan scores below its greedy part takes its
// greedy part; one stopped by the deadline keeps its solved windows and completes
// the rest greedily (an incumbent, checked by solve_plan).
Result<ComponentSolution> solve_component(
    const std::vector<int>& members, const std::vector<Pattern>& candidates, const NodeGraph& nodes,
    const std::vector<int32_t>& candidates_of_node_begin,
    const std::vector<int>& candidates_of_node, const std::vector<const std::vector<int>*>& cuts,
    const std::vector<char>& greedy, int window_variables, RowScratch& scratch,
    Clock::time_point deadline, std::vector<char>& chosen) {
  auto use_greedy = [&]() {
    for (int member : members)
      chosen[static_cast<size_t>(member)] = greedy[static_cast<size_t>(member)];
  };
  if (static_cast<int>(members.size()) <= window_variables) {
    Subproblem whole;
    whole.variables = members;
    for (const std::vector<int>* cut : cuts)
      whole.cuts.push_back(CutRow{*cut, static_cast<double>(cut->size()) - 1.0});
    STITCH_ASSIGN_OR_RETURN(ComponentSolution solution,
                            solve_subproblem(whole, candidates, candidates_of_node_begin,
                                             candidates_of_node, scratch, deadline, chosen));
    if (solution.outcome == ComponentOutcome::kGreedyAfterDeadline) use_greedy();
    return solution;
  }

  // Windows: members by the topological position of their first node.
  auto first_position = [&](int member) {
    int32_t first = std::numeric_limits<int32_t>::max();
    for (NodeId node : candidates[static_cast<size_t>(member)].nodes)
      first = std::min(first, nodes.position[static_cast<size_t>(node)]);
    return first;
  };
  std::vector<std::pair<int32_t, int>> ordered;
  ordered.reserve(members.size());
  for (int member : members) ordered.emplace_back(first_position(member), member);
  std::sort(ordered.begin(), ordered.end());

  ComponentSolution total;
  std::vector<char> taken(static_cast<size_t>(nodes.capacity()), 0);
  auto fits = [&](int member) {
    const std::vector<NodeId>& group = candidates[static_cast<size_t>(member)].nodes;
    return std::none_of(group.begin(), group.end(),
                        [&](NodeId node) { return taken[static_cast<size_t>(node)] != 0; });
  };
  auto take = [&](int member) {
    chosen[static_cast<size_t>(member)] = 1;
    for (NodeId node : candidates[static_cast<size_t>(member)].nodes)
      taken[static_cast<size_t>(node)] = 1;
  };
  // Only solve_subproblem's successes set a member, so while the windows run the
  // chosen members are exactly the earlier windows' choices.
  for (int member : members) chosen[static_cast<size_t>(member)] = 0;
  for (size_t begin = 0, end = 0; begin < ordered.size(); begin = end) {
    end = std::min(ordered.size(), begin + static_cast<size_t>(window_variables));
    while (end < ordered.size() && ordered[end].first == ordered[end - 1].first) ++end;
    Subproblem window;
    for (size_t k = begin; k < end; ++k) {
      if (fits(ordered[k].second)) window.variables.push_back(ordered[k].second);
    }
    if (window.variables.empty()) continue;
    std::sort(window.variables.begin(), window.variables.end());
    for (const std::vector<int>* cut : cuts) {
      // Earlier windows fixed their part of the cut; this window may take at most
      // what is left, later windows see this window's choice as fixed.
      CutRow row;
      double fixed = 0;
      for (int member : *cut) {
        if (chosen[static_cast<size_t>(member)]) {
          fixed += 1.0;
        } else if (std::binary_search(window.variables.begin(), window.variables.end(), member)) {
          row.variables.push_back(member);
        }
      }
      row.bound = static_cast<double>(cut->size()) - 1.0 - fixed;
      if (!row.variables.empty()) window.cuts.push_back(std::move(row));
    }
    STITCH_ASSIGN_OR_RETURN(ComponentSolution solution,
                            solve_subproblem(window, candidates, candidates_of_node_begin,
                                             candidates_of_node, scratch, deadline, chosen));
    total.rows += solution.rows;
    ++total.windows;
    for (int variable : window.variables) {
      if (chosen[static_cast<size_t>(variable)]) take(variable);
    }
    if (solution.outcome != ComponentOutcome::kOptimal) {
      // Deadline: keep the earlier windows (and this window's incumbent, if GLPK
      // had one) and complete the rest with the greedy plan's patterns that still
      // fit. solve_plan checks the combination like any incumbent: cyclic or worse
      // than greedy means the greedy plan.
      for (size_t k = begin; k < ordered.size(); ++k) {
        const int member = ordered[k].second;
        if (greedy[static_cast<size_t>(member)] && !chosen[static_cast<size_t>(member)] &&
            fits(member))
          take(member);
      }
      total.outcome = ComponentOutcome::kIncumbent;
      total.gap = solution.gap;  // the stopped window's gap (0 when it had no incumbent)
      return total;
    }
  }
  double windowed = 0, greedy_part = 0;
  for (int member : members) {
    const double score = candidates[static_cast<size_t>(member)].score_us;
    if (chosen[static_cast<size_t>(member)]) windowed += score;
    if (greedy[static_cast<size_t>(member)]) greedy_part += score;
  }
  if (windowed < greedy_part) use_greedy();
  return total;
}

double total_score(const std::vector<Pattern>& candidates, const std::vector<char>& chosen) {
  double total = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (chosen[i]) total += candidates[i].score_us;
  }
  return total;
}

std::vector<std::vector<NodeId>> groups_of(const std::vector<Pattern>& candidates,
                                           const std::vector<char>& chosen) {
  std::vector<std::vector<NodeId>> groups;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (chosen[i]) groups.push_back(candidates[i].nodes);
  }
  return groups;
}

// Positive-score candidates containing each node, ascending (CSR by node id).
struct CandidatesOfNode {
  std::vector<int32_t> begin;  // by node id, size capacity + 1
  std::vector<int> candidates;
};

CandidatesOfNode candidates_of_nodes(size_t capacity, const std::vector<Pattern>& candidates,
                                     const std::vector<int>& positive) {
  CandidatesOfNode result;
  result.begin.assign(capacity + 1, 0);
  for (int i : positive) {
    for (NodeId node : candidates[static_cast<size_t>(i)].nodes) {
      ++result.begin[static_cast<size_t>(node) + 1];
    }
  }
  for (size_t n = 0; n < capacity; ++n) result.begin[n + 1] += result.begin[n];
  result.candidates.resize(static_cast<size_t>(result.begin[capacity]));
  std::vector<int32_t> fill(result.begin.begin(), result.begin.end() - 1);
  for (int i : positive) {
    for (NodeId node : candidates[static_cast<size_t>(i)].nodes) {
      result.candidates[static_cast<size_t>(fill[static_cast<size_t>(node)]++)] = i;
    }
  }
  return result;
}

// The components of the positive candidates as `sets` joins them now, each in
// ascending order, in order of their smallest member.
std::vector<std::vector<int>> components_of(DisjointSets& sets, const std::vector<int>& positive,
                                            size_t num_candidates) {
  std::vector<std::vector<int>> components;
  std::vector<int> component_of_root(num_candidates, -1);
  for (int i : positive) {
    int root = sets.find(i);
    if (component_of_root[static_cast<size_t>(root)] < 0) {
      component_of_root[static_cast<size_t>(root)] = static_cast<int>(components.size());
      components.emplace_back();
    }
    components[static_cast<size_t>(component_of_root[static_cast<size_t>(root)])].push_back(i);
  }
  return components;
}

}  // namespace

Result<FusionPlan> solve_plan(const ir::Graph& graph, const std::vector<Pattern>& candidates,
                              const PlanOptions& options) {
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(std::max(0.0, options.time_limit_s)));
  STITCH_RETURN_IF_ERROR(validate_candidates(graph, candidates));
  STITCH_ASSIGN_OR_RETURN(NodeGraph nodes, build_node_graph(graph));

  std::vector<int> positive;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].score_us > 0 && !candidates[i].nodes.empty())
      positive.push_back(static_cast<int>(i));
  }
  const size_t capacity = static_cast<size_t>(nodes.capacity());
  const CandidatesOfNode of_node = candidates_of_nodes(capacity, candidates, positive);
  const std::vector<int32_t>& candidates_of_node_begin = of_node.begin;
  const std::vector<int>& candidates_of_node = of_node.candidates;
  DisjointSets sets(candidates.size());
  for (size_t n = 0; n < capacity; ++n) {
    for (int32_t k = candidates_of_node_begin[n] + 1; k < candidates_of_node_begin[n + 1]; ++k) {
      sets.join(candidates_of_node[static_cast<size_t>(k - 1)],
                candidates_of_node[static_cast<size_t>(k)]);
    }
  }

  FusionPlan plan;
  SolverStatistics& statistics = plan.statistics;
  statistics.variables = static_cast<int>(positive.size());
  const std::vector<char> greedy = greedy_plan(nodes, candidates, positive);
  statistics.greedy_objective_us = total_score(candidates, greedy);

  auto components_now = [&]() { return components_of(sets, positive, candidates.size()); };

  std::vector<char> chosen(candidates.size(), 0);
  if (options.use_greedy_only) {
    chosen = greedy;
    statistics.components = static_cast<int>(components_now().size());
    statistics.status = "greedy";
  } else {
    std::vector<std::vector<int>> cuts;
    std::vector<char> dirty(candidates.size(), 1);
    std::vector<int> rows_of_component(candidates.size(), 0);     // by first member
    std::vector<int> windows_of_component(candidates.size(), 0);  // by first member
    RowScratch scratch;
    scratch.node_stamp.assign(capacity, 0);
    scratch.candidate_stamp.assign(candidates.size(), 0);
    bool timed_out = false;
    bool used_incumbent = false;
    for (int round = 0;; ++round) {
      std::vector<std::vector<int>> components = components_now();
      std::vector<std::vector<const std::vector<int>*>> cuts_of(components.size());
      {
        std::vector<int> component_of(candidates.size(), -1);
        for (size_t c = 0; c < components.size(); ++c) {
          for (int i : components[c]) component_of[static_cast<size_t>(i)] = static_cast<int>(c);
        }
        for (const std::vector<int>& cut : cuts) {
          cuts_of[static_cast<size_t>(component_of[static_cast<size_t>(cut.front())])].push_back(
              &cut);
        }
      }
      int rows = 0;
      int windows = 0;
      for (size_t c = 0; c < components.size(); ++c) {
        const std::vector<int>& members = components[c];
        const size_t first = static_cast<size_t>(members.front());
        bool changed = std::any_of(members.begin(), members.end(),
                                   [&](int i) { return dirty[static_cast<size_t>(i)] != 0; });
        if (changed && members.size() == 1) {
          // Chosen unless a cut excludes it alone (a pattern that is not convex).
          chosen[first] = cuts_of[c].empty();
          rows_of_component[first] = static_cast<int>(cuts_of[c].size());
        } else if (changed) {
          STITCH_ASSIGN_OR_RETURN(
              ComponentSolution solution,
              solve_component(members, candidates, nodes, candidates_of_node_begin,
                              candidates_of_node, cuts_of[c], greedy, options.window_variables,
                              scratch, deadline, chosen));
          rows_of_component[first] = solution.rows;
          windows_of_component[first] = solution.windows;
          if (solution.outcome != ComponentOutcome::kOptimal) {
            timed_out = true;
            statistics.gap = std::max(statistics.gap, solution.gap);
            used_incumbent = used_incumbent || solution.outcome == ComponentOutcome::kIncumbent;
          }
        }
        for (int i : members) dirty[static_cast<size_t>(i)] = 0;
        rows += rows_of_component[first];
        windows += windows_of_component[first];
      }
      statistics.components = static_cast<int>(components.size());
      statistics.constraints = rows;
      statistics.windows = windows;

      std::vector<int> chosen_indices;
      for (size_t i = 0; i < candidates.size(); ++i) {
        if (chosen[i]) chosen_indices.push_back(static_cast<int>(i));
      }
      QuotientCycles quotient = find_quotient_cycles(nodes, groups_of(candidates, chosen));
      if (timed_out) {
        bool worse = total_score(candidates, chosen) < statistics.greedy_objective_us;
        if (!quotient.cycles.empty() || worse || !used_incumbent) {
          chosen = greedy;
          statistics.status = "time limit: greedy";
        } else {
          statistics.status = "time limit: best incumbent";
        }
        break;
      }
      if (quotient.cycles.empty()) {
        statistics.status = windows > 0 ? "optimal in windows" : "optimal";
        break;
      }
      if (round >= options.max_cycle_rounds) {
        chosen = greedy;
        statistics.status = "cycle rounds: greedy";
        break;
      }
      for (const std::vector<NodeId>& cycle : quotient.cycles) {
        std::vector<int> cut;
        for (NodeId vertex : cycle) {
          int group = quotient.group_of[static_cast<size_t>(vertex)];
          if (group >= 0) cut.push_back(chosen_indices[static_cast<size_t>(group)]);
        }
        std::sort(cut.begin(), cut.end());
        for (int i : cut) {
          dirty[static_cast<size_t>(i)] = 1;
          sets.join(cut.front(), i);
        }
        cuts.push_back(std::move(cut));
        ++statistics.cycle_cuts;
      }
    }
  }

  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!chosen[i]) continue;
    plan.chosen.push_back(static_cast<int>(i));
    plan.groups.push_back(candidates[i].nodes);
  }
  statistics.objective_us = total_score(candidates, chosen);
  statistics.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return plan;
}

}  // namespace stitch::fusion

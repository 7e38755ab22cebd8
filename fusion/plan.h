// The fusion plan: which candidate patterns become kernels, chosen by an integer
// program solved with GLPK, with cycle cuts (FusionStitching 4.1 and Fig. 3).
//
// Objective and constraints. One binary x_i per candidate with score_us > 0:
//   maximize  sum_i score_i * x_i
//   subject to, for every graph node v:  sum_{i : v in P_i} x_i <= 1   (one clique row)
//              for every cycle cut C:   sum_{i in C} x_i <= |C| - 1
// The paper writes the disjointness as x_u + x_v <= 1 for every overlapping pair;
// one row per node says the same with far fewer rows (the pairwise form stalls GLPK
// at a few thousand patterns). Rows of nodes covered by a single candidate are left
// out (the bound x_i <= 1 says it) and identical rows are merged.
//
// Algorithm:
//  1. Greedy: candidates by score descending (ties by index); take one when it is
//     disjoint from those taken and the quotient graph stays acyclic. The check is
//     incremental: the quotient keeps a topological rank per vertex, a search from
//     the new group's successors visits only ranks below the group's highest rank,
//     and an accepted group reorders only that rank window (Pearce-Kelly style).
//  2. Components: candidates sharing a node are connected (union-find over nodes);
//     each component is its own integer program. A one-candidate component is
//     chosen without GLPK.
//  3. Each component is solved by glp_intopt (presolve on, messages off, options
//     pinned). No bound row from the greedy objective: a dense row over every
//     column doubled GLPK's time on the 10k-node synthetic graph; greedy stays the
//     fallback instead.
//     Windows: a component with more than window_variables candidates (one long
//     chain of fusible ops, as in a deep stack of fine-grained layers) is one
//     program too large for GLPK's simplex within seconds (86k candidates: 16 s
//     for the LP relaxation alone). It is solved as a sequence of programs in
//     topological order: its candidates sorted by the position of their first node,
//     cut into windows of about window_variables; each window's program holds the
//     candidates that overlap no node taken by an earlier window, and each cycle cut
//     keeps only the budget the earlier windows left it (|C| - 1 - chosen so far).
//     Every window is solved to optimality given the earlier ones; the component's
//     plan is feasible and acyclic-checked like any other, but not globally optimal
//     (status "optimal in windows"), and when it scores below the component's
//     greedy part the greedy part is used. When the deadline stops a window, the
//     windows solved so far are kept and the rest is completed with the greedy
//     plan's patterns that still fit (an incumbent).
//  4. The chosen patterns are contracted (each group one vertex, every other live
//     node its own vertex); every strongly connected component of the quotient
//     with two or more vertices yields one cycle (a shortest one through its first
//     group) and a cut row over the groups on it. Cuts join their candidates'
//     components; the components touched are solved again. Repeat until acyclic
//     or max_cycle_rounds, then fall back to greedy.
//  5. Deadline: time_limit_s of wall clock for the whole solve, kept outside GLPK:
//     each component gets the remaining time as tm_lim and a callback calls
//     glp_ios_terminate once the deadline passes. A component that timed out uses
//     GLPK's best incumbent, else its greedy part; when the combination is cyclic or
//     worse than greedy, the plan is the greedy one.
//
// Statuses: "optimal", "optimal in windows", "time limit: best incumbent", "time limit: greedy",
// "cycle rounds: greedy" (max_cycle_rounds reached while still cyclic), "greedy"
// (use_greedy_only).
//
// Worked example (Fig. 3): A -> B -> C and A -> C, B in no pattern. Contracting a
// chosen {A, C} gives {A,C} -> B -> {A,C}: a cycle through one group, so the cut is
// x_{A,C} <= 0 and the next solve picks the best plan without it.
//
// Preconditions: the graph is acyclic; every candidate's nodes are sorted, unique
// and live. The result is deterministic for the same input unless the deadline is
// reached (then it depends on how far GLPK got).
#pragma once

#include <string>
#include <vector>

#include "fusion/pattern.h"
#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::fusion {

struct PlanOptions {
  double time_limit_s = 10.0;
  bool use_greedy_only = false;
  int max_cycle_rounds = 100;
  int window_variables = 3000;  // larger components are solved in windows (see 3.)
};

struct SolverStatistics {
  int components = 0;   // components of the last round (cycle cuts may join some)
  int variables = 0;    // candidates with a positive score
  int constraints = 0;  // rows of the last round's programs, cycle cuts included
  int cycle_cuts = 0;
  int windows = 0;  // programs of windowed components in the last round (0: none)
  double seconds = 0;
  std::string status;  // see the header comment
  double objective_us = 0;
  double greedy_objective_us = 0;
  double gap = 0;  // largest relative MIP gap of a component stopped by the deadline
};

struct FusionPlan {
  std::vector<int> chosen;                      // indices into the candidates, ascending
  std::vector<std::vector<ir::NodeId>> groups;  // the chosen patterns' nodes
  SolverStatistics statistics;
};

// Chooses disjoint candidates with the largest total score whose contraction keeps
// the graph acyclic. Error when a candidate names a dead or unknown node, is not
// sorted, the graph has a cycle, or GLPK fails.
Result<FusionPlan> solve_plan(const ir::Graph& graph, const std::vector<Pattern>& candidates,
                              const PlanOptions& options);

// Disjoint groups of live nodes, each convex, quotient graph (groups contracted,
// other nodes alone) acyclic. The error names the group index and a node. Nodes in
// no group run as single-op kernels or library calls, so every node is covered once
// by construction. Convexity is checked with a search bounded by the group's span
// in topological order (a path that leaves a group and re-enters it runs only
// through nodes ordered before the group's last node), which needs no N^2 bitset.
Status verify_plan(const ir::Graph& graph, const FusionPlan& plan);

}  // namespace stitch::fusion

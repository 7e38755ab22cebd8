// 128-bit accesses, shared by the compositions that take them: the thread and packing
// compositions (3b., emit/compositions/thread/vector_planner.h) and the row-local ones
// (2., emit/compositions/rows/row_planner.cc).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "ir/core/graph.h"

namespace stitch::emit {

// Broadcasting reads on the way from an output to one of its operands: (operand dims,
// reader dims) pairs, the output's reader first.
using BroadcastSteps = std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>;

// 128-bit accesses of float32 values, in runs of width = 4 aligned consecutive
// elements.
//
// The thread and packing compositions (3b., issue 16 part 3): each thread writes 4
// consecutive elements of every output with one 128-bit store. The values in `inputs`
// are read at aligned runs of 4 consecutive indices through one index map (same-shape
// elementwise reads, views, broadcasts along leading axes whose last axis, a multiple
// of 4, is the output's): a 16-byte window loaded once per run, at the run's start,
// holds every element the run reads. Those in `uniform_inputs` are read at one index
// per run (a per-row scale): one load per run into a register. maps[output][input] is
// the input's index map from that output's flat index (the broadcasts on the way). Any
// other read of memory leaves the kernel scalar.
//
// The row-local compositions (`windows_follow_reads`): each lane walks its row in runs
// of 4 consecutive elements, and the inputs' windows are loaded by their accessors
// whenever the index they read leaves the current window (a row's elements, a
// LayerNorm's scale and bias along the row), so every read is correct whatever its
// index and the runs of a row take one 128-bit load each.
//
// The kernel checks that every pointer it reads or writes 16 bytes at a time is
// 16-byte aligned and otherwise runs the same loops element by element (XLA's
// vectorized elementwise loops, with the alignment checked instead of assumed).
struct VectorAccess {
  int width = 1;  // 1: scalar
  std::set<ir::ValueId> inputs;
  std::set<ir::ValueId> uniform_inputs;
  std::map<ir::ValueId, std::map<ir::ValueId, BroadcastSteps>> maps;
  bool windows_follow_reads = false;
};

}  // namespace stitch::emit

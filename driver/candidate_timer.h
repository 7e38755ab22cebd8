// The emulated candidate timer: FusionStitching 4.3's execution-based scoring without
// a GPU (`stitchopt --score emulated`, docs/cost-model.md "Scoring by the emulated
// profile").
//
// FS 4.3 times each candidate kernel on the device. Here a candidate is timed by the
// emulated profile (docs/perf-model.md): its kernel runs in the CUDA emulation with
// the hardware counters on, at its real shapes, on random inputs, and the perf model
// turns the counters (and the SASS instruction estimate, when nvcc and nvdisasm are
// there) into microseconds. The same is done for each of its nodes alone, as the plan
// would run a node left alone: a single-op kernel, a library call for a GEMM or Conv
// (cost_model::estimate_library_call, as `stitchopt profile` estimates library steps),
// nothing for a view. The candidate's timing is both figures (fusion::CandidateTiming).
//
// Which candidates: those the planner requests (fusion/planner.h: a GEMM inside, or
// a score close to an overlapping candidate's) and every candidate whose kernel needs
// the global composition (grid barriers, workspace round trips: the analytic score
// cannot see their cost), at most `max_candidates` distinct kernels, global and GEMM
// ones first, then by analytic score. A candidate is timed once per distinct kernel
// text (identical layers share one probe), and a node's single-op kernel once.
//
// How: the chosen candidates and single nodes are copied, each as a disjoint
// subgraph, into one probe model (external inputs become graph inputs, constants
// stay constants); driver::emit_plan makes each candidate one group and leaves the
// single nodes alone; the probe output is written to `work_dir`/ROUND like a stitchopt
// output and profiled by profile_program. A probe whose kernel cannot be emitted,
// or a node without a kernel or library implementation, leaves its candidates
// untimed (their analytic score stands).
#pragma once

#include <memory>
#include <string>

#include "emit/schedule.h"
#include "fusion/planner.h"
#include "profiling/profile.h"

namespace stitch::driver {

struct EmulatedTimerOptions {
  profiling::ProfileOptions profile;  // the device and how kernels are compiled and estimated
  // The schedule choices the compile emits with (--no-stencil-tiles): a probe is the
  // kernel the plan would emit, not one of a default schedule.
  emit::ScheduleOptions schedule;
  // Probe outputs (kernels/, model.fused.onnx), one per timing round: WORK_DIR/0, ...
  std::string work_dir;
  int max_candidates = 48;
};

std::unique_ptr<fusion::CandidateTimer> make_emulated_timer(EmulatedTimerOptions options);

}  // namespace stitch::driver

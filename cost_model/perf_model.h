// The emulated performance model (docs/perf-model.md): what a kernel launch would cost
// on a device, from the hardware counters the CUDA emulation recorded while running it
// (artifact/stitch_emu_counters.h) and the device profile's constants. Library calls
// (cuBLAS/cuDNN) are estimated from their FLOPs, bytes and tiles (library_tiling.h).
//
// A kernel's estimate is
//   launch + max(memory, compute, shared, latency) + sync
// where
//   memory  = max(DRAM: M(unique sectors x 32) on the profile's bandwidth curve,
//                 L2:   (sectors requested - the L1's hits) x 32 / l2_bytes_per_second)
//   compute = the busiest of issue (the calibration's warp_schedulers_per_sm warp
//             instructions per SM per clock) and the FP32, FP64, integer,
//             special-function and load/store pipes (the calibration's lanes), over the
//             SMs in use, when an instruction estimate is given (from SASS), else 0
//   shared  = wavefronts / (SMs in use x clock)        (one wavefront per SM per clock)
//   latency = the busiest warp's global load requests (per phase, summed; those the L1
//             served whole left out) x the share
//             of them it waits out (load rounds / global loads of the instruction
//             estimate) x global_load_latency_ns, when an instruction estimate with
//             control bits is given, else 0
//   sync    = block barriers x block_barrier_cycles / (SMs in use x clock)
//             + grid barriers x grid_barrier_us
//             + most atomics on one address x atomic_same_address_ns
//   launch  = phi, launch_phi(profile): the launch mode's (once per launch)
// and the bound is the largest of launch, memory, compute, shared, latency and sync
// ("barrier"). The terms fill a KernelTime (kernel_time.h), the same result the
// analytic estimate fills: plain_us = launch + max(memory, compute); shared, latency
// and sync are the charges, named in KernelTime::charges.
#pragma once

#include <cstdint>
#include <optional>

#include "artifact/stitch_emu_counters.h"
#include "cost_model/device_profile.h"
#include "cost_model/kernel_time.h"
#include "cost_model/library_tiling.h"

namespace stitch::cost_model {

// Issued warp instructions of one launch by class (an estimate from SASS).
struct InstructionEstimate {
  double fp32 = 0;
  double fp64 = 0;
  double integer = 0;
  double special = 0;  // MUFU: exp, log, rsqrt, sin, ...
  double memory = 0;   // loads, stores, atomics
  double control = 0;  // branches, barriers, predicates, moves, conversions, other
  double total() const { return fp32 + fp64 + integer + special + memory + control; }
  // Not a class: global load instructions (counted in memory above) and the load
  // rounds they cost, each wait on a global load weighed 1 / the load groups in flight
  // (profiling/instruction_estimate.h, count_load_rounds). Their ratio is the share
  // of a warp's load requests whose latency it waits out.
  double global_loads = 0;
  double load_rounds = 0;
};

// The emulated KernelTime and the volumes behind it.
struct KernelEstimate : KernelTime {
  int64_t dram_bytes = 0;        // unique sectors x 32
  int64_t requested_bytes = 0;   // global bytes the lanes asked for
  int64_t l2_bytes = 0;          // sectors requested x 32, less the L1's hits
  int64_t l1_hit_bytes = 0;      // load sectors the L1 served x 32
  double sector_efficiency = 1;  // distinct bytes per request / (32 x sectors), <= 1
  double redundancy = 1;         // global load bytes requested / unique bytes loaded
  int sms_used = 0;
  double occupancy = 0;  // resident warps per SM / max warps per SM
};

// `registers` per thread from ptxas when known (0: 32 assumed) for the occupancy.
KernelEstimate estimate_kernel(const StitchEmuCounters& counters,
                               const std::optional<InstructionEstimate>& instructions,
                               int registers, const DeviceProfile& profile);

// A library call: launch + max(M(bytes), compute, latency). With its geometry
// (library_tiling.h) compute is the waves of its tiles, each at library_efficiency of
// one SM's share of peak, and latency its CTAs' load rounds x global_load_latency_ns;
// without, compute is flops / (library_efficiency x peak) and latency 0. The peak is
// fp16's for a float16/bfloat16 call (`fp16`), TF32's for a float32 one under
// profile.products kTf32, else fp32's.
KernelEstimate estimate_library_call(double flops, int64_t bytes, bool fp16,
                                     const std::optional<LibraryGemm>& gemm,
                                     const DeviceProfile& profile);

}  // namespace stitch::cost_model

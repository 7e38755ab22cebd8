// The DeviceProfile `stitchopt calibrate` writes, made of what the CUDA plugin read
// from the GPU and measured on it (runtime::DeviceMeasurement,
// runtime_stub/device_measurement.h). Here, above the runtime, because it needs the
// cost model's shipped profiles, which the plugin must not include
// (docs/architecture.md, "Layering"); and it needs no GPU, so tests pin it.
//
// The profile:
//   1. name, source, date, sku, note: the shipped profile's name when one matches
//      (below), else the device name lowercased with '-' for ' '; "calibrated";
//      today (UTC); the device name; a note saying what was measured and how.
//   2. The device's limits (SMs, threads, registers, shared memory, L2, SM clock,
//      blocks per SM) as the device reports them.
//   3. The measurements (bandwidth curve, L2 bandwidth, launch latency, grid barrier,
//      global load latency) as measured.
//   4. Peak DRAM bandwidth: 2 (DDR) x memory clock x bus width / 8; when the driver
//      reports no memory clock or bus width, the shipped profile's value, else the
//      highest measured bandwidth.
//   5. What the device does not report (fp32/fp16/fp64 peaks, block_barrier_cycles,
//      atomic_same_address_ns, library_efficiency, the calibration block): from the
//      shipped profile whose name appears in the device name and whose SM count
//      matches (an "H100 PCIe" with 114 SMs is not the shipped SXM "h100"). Without
//      one, fp32 = SMs x clock x 128 FP32 lanes x 2 (FMA), fp16 twice that (the half2
//      rate, not tensor cores), and the rest from the shipped profile of the nearest
//      architecture (v100 for sm_7x, a100 for sm_8x, h100 from sm_90), fp64 scaled by
//      the SM count x clock ratio, the calibration block but its sass_architecture
//      (the device's own, its provenance saying so); the note says so.
// Example: an "NVIDIA L4" (sm_89, 58 SMs at 2040 MHz) matches no shipped profile:
// fp32 = 58 x 2.04e9 x 128 x 2 = 3.03e13 FLOP/s, fp16 6.06e13, the a100's fits with
// sass_architecture "sm_89".
//
// The profile is not validated here: `stitchopt calibrate` checks it against every
// field's range (cost_model::parse_device_profile) before writing it.
#pragma once

#include "cost_model/device_profile.h"
#include "ir/core/status.h"
#include "runtime_stub/device_measurement.h"

namespace stitch::driver {

// The profile of `measurement` (steps 1-5 above). `verbose`: says on stderr when no
// shipped profile matches and the peaks are estimates. An error only when the nearest
// shipped profile cannot be loaded (a broken build).
Result<cost_model::DeviceProfile> calibrated_profile(const runtime::DeviceMeasurement& measurement,
                                                     bool verbose);

}  // namespace stitch::driver

// DeviceMeasurement: what `stitchopt calibrate` reads from one GPU and measures on it,
// as the CUDA plugin returns it (CudaRuntimeApi::calibrate, runtime_stub/cuda/
// calibrate.cc). A plain record of facts and timings: turning it into a
// cost_model::DeviceProfile (which shipped profile matches, the peaks the device does
// not report, the calibration block) is driver/calibrated_profile.h's, above the
// runtime, so that the plugin needs no cost model and the conversion is tested without
// a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stitch::runtime {

// One point of the bandwidth curve M(V): a copy moving `bytes` (read plus written)
// reached `bytes_per_second` (FusionStitching Fig. 4).
struct MeasuredBandwidth {
  double bytes = 0;
  double bytes_per_second = 0;
};

struct DeviceMeasurement {
  // The device's facts, as cudaGetDeviceProperties reports them.
  std::string name;  // cudaDeviceProp::name, "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int sm_count = 0;  // multiProcessorCount
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int warp_size = 0;
  int registers_per_block = 0;
  int registers_per_sm = 0;
  int64_t shared_memory_per_block = 0;
  int64_t shared_memory_per_block_optin = 0;
  int64_t shared_memory_per_sm = 0;
  int64_t l2_bytes = 0;
  // What cudaDeviceProp lost in CUDA 13, from cudaDeviceGetAttribute.
  int clock_khz = 0;         // cudaDevAttrClockRate, the boost clock
  int memory_clock_khz = 0;  // cudaDevAttrMemoryClockRate; 0 when the driver reports none
  int bus_bits = 0;          // cudaDevAttrGlobalMemoryBusWidth; 0 when none
  int max_blocks_per_sm = 0;
  // What was measured (calibrate.cc says how).
  std::vector<MeasuredBandwidth> bandwidth_curve;  // strictly increasing bytes
  double l2_bytes_per_second = 0;
  double launch_latency_us = 0;
  double grid_barrier_us = 0;
  double global_load_latency_ns = 0;
};

}  // namespace stitch::runtime

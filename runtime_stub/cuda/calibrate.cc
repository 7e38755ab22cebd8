// Calibration: measures one GPU's bandwidth curve, launch latency, grid barrier and
// global load latency and reads its limits into a DeviceMeasurement
// (CudaRuntimeApi::calibrate, `stitchopt calibrate`). The measurement only:
// driver/calibrated_profile.h makes the DeviceProfile of it, above the runtime.
//
// Kernels. Compiled at run time with NVRTC: a grid-stride float4 copy y[i] = x[i], an
// empty kernel, the grid barrier and a pointer chase; as a cubin for the device's sm_XY
// when NVRTC knows that architecture, else as PTX for the newest compute_XY it knows
// (the driver JIT-compiles it). They are loaded on the device's primary context
// (cudaSetDevice + cudaFree(0) make it current) with cuModuleLoadData /
// cuModuleGetFunction and launched with cuLaunchKernel on one stream. The driver entry
// points come from cudart (cudaGetDriverEntryPointByVersion), so this library never
// links libcuda.so.1 and loads on machines without a driver.
//
// Bandwidth curve (FusionStitching's M(V), Fig. 4). For each size V, bytes read plus
// written (log-spaced from min_bytes to max_bytes, points_per_decade per decade, both
// ends included, rounded to whole float4 pairs and deduplicated, so the curve is
// strictly increasing), the copy moves V/2 bytes with a grid that fills the device
// (SMs x resident blocks of 256 threads, capped by the element count). Before each
// timed run the L2 is flushed (a memset of twice its size, outside the timed
// interval), so the numbers are DRAM bandwidth: the cost model scores off-chip bytes.
// Each run is timed by CUDA events around the single launch, after a warm-up; the
// median of `repetitions` runs gives bytes_per_second = V / time.
//
// Launch latency phi: 1000 back-to-back empty launches between two events, divided
// by 1000, in microseconds; the median over `repetitions` batches.
//
// L2 bandwidth: the same copy over a quarter of the L2 (source and destination an
// eighth each), not flushed, after a warm-up, 50 copies back to back per timing (one
// alone lasts about its launch): bytes read plus written over the median time of one.
//
// Grid barrier: stitch_grid_sync, the barrier every generated cooperative kernel uses
// (taken from the embedded prelude, artifact::kernel_prelude, so what is timed is
// what is emitted), 1000 times in a cooperative launch of one 256-thread block per SM,
// the usual grid of a barrier kernel; the median launch over `repetitions`, less one
// launch latency, over 1000.
//
// Global load latency (global_load_latency_ns, the emulated profile's latency term):
// one thread walks a chain of 20000 dependent ld.global.cg loads through 16384 nodes
// 256 bytes apart (4 MiB, in L2 after a first walk); the median launch, less one launch
// latency, over the steps.
//
// Device facts come from cudaGetDeviceProperties. The memory clock and bus width
// (cudaDevAttrMemoryClockRate and GlobalMemoryBusWidth, still attributes in CUDA 13
// though cudaDeviceProp lost the clock), the SM clock (cudaDevAttrClockRate, the boost
// clock) and blocks per SM (cudaDevAttrMaxBlocksPerMultiprocessor) come from
// cudaDeviceGetAttribute: cudaDeviceProp lost those fields in CUDA 13. What the device
// does not report (fp32/fp16/fp64 peaks, block barrier cycles, same-address atomics,
// library efficiency, the model's calibration block) is not this plugin's to know: the
// shipped profiles are the cost model's, and driver/calibrated_profile.h fills them in.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "artifact/kernel_prelude.h"
#include "runtime_stub/cuda/cuda_plugin.h"
#include "runtime_stub/cuda/cuda_timing.h"

namespace stitch::runtime::cuda {
namespace {

constexpr const char* kCalibrationSource = R"(
extern "C" __global__ void stitch_calibrate_copy(const float4* __restrict__ x,
                                                 float4* __restrict__ y, unsigned long long n) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += stride) {
    y[i] = x[i];
  }
}
extern "C" __global__ void stitch_calibrate_empty() {}
// One thread walks a chain of dependent loads through L2 (ld.global.cg: not cached in
// L1), each address the value the previous load returned.
extern "C" __global__ void stitch_calibrate_chase(const unsigned int* __restrict__ next,
                                                  int steps, unsigned int* __restrict__ out) {
  unsigned int i = 0;
  for (int step = 0; step < steps; ++step) {
    unsigned int value;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(value) : "l"(next + i));
    i = value;
  }
  *out = i;
}
)";
// Appended after the prelude's stitch_grid_sync (calibration_source()).
constexpr const char* kBarrierSource = R"(
extern "C" __global__ void stitch_calibrate_grid_barrier(unsigned int* counter, int rounds) {
  for (int round = 0; round < rounds; ++round) stitch_grid_sync(counter);
}
)";
constexpr int kBarrierRounds = 1000;
constexpr int kL2Batch = 50;
constexpr int kCopyBlock = 256;
constexpr int kLaunchBatch = 1000;
// The load-latency chain: 16384 nodes 256 bytes apart (a sector and a line each; 4 MiB,
// inside every supported L2), walked 20000 steps per launch (about 2.6 ms at 130 ns).
constexpr unsigned int kChaseStride = 64;  // elements
constexpr unsigned int kChaseNodes = 16384;
constexpr int kChaseSteps = 20000;
constexpr int64_t kBytesPerElement = 2 * 16;  // one float4 read, one written
// The CUDA version whose driver ABI the entry points are requested at.
constexpr unsigned int kDriverApiVersion = 12000;

// The driver functions calibration uses, taken from cudart.
struct DriverApi {
  PFN_cuModuleLoadData_v2000 module_load_data = nullptr;
  PFN_cuModuleUnload_v2000 module_unload = nullptr;
  PFN_cuModuleGetFunction_v2000 module_get_function = nullptr;
  PFN_cuLaunchKernel_v4000 launch_kernel = nullptr;
  PFN_cuLaunchCooperativeKernel_v9000 launch_cooperative_kernel = nullptr;
  PFN_cuGetErrorString_v6000 get_error_string = nullptr;

  Status check(CUresult result, std::string_view call) const {
    if (result == CUDA_SUCCESS) return Status::ok();
    const char* text = nullptr;
    if (get_error_string == nullptr || get_error_string(result, &text) != CUDA_SUCCESS) {
      text = "unknown error";
    }
    return Status::internal(std::string(call) + ": " + text + " (CUresult " +
                            std::to_string(static_cast<int>(result)) + ")");
  }
};

template <typename Function>
Status driver_entry_point(const char* symbol, Function* function) {
  void* pointer = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  cudaError_t error = cudaGetDriverEntryPointByVersion(symbol, &pointer, kDriverApiVersion,
                                                       cudaEnableDefault, &found);
  if (error != cudaSuccess) {
    return Status::internal(
        cuda_error_text(std::string("cudaGetDriverEntryPointByVersion(") + symbol + ")", error));
  }
  if (found != cudaDriverEntryPointSuccess || pointer == nullptr) {
    return Status::unavailable(std::string("the CUDA driver does not provide ") + symbol +
                               " (driver too old?)");
  }
  *function = reinterpret_cast<Function>(pointer);
  return Status::ok();
}

Result<DriverApi> load_driver_api() {
  DriverApi api;
  STITCH_RETURN_IF_ERROR(driver_entry_point("cuGetErrorString", &api.get_error_string));
  STITCH_RETURN_IF_ERROR(driver_entry_point("cuModuleLoadData", &api.module_load_data));
  STITCH_RETURN_IF_ERROR(driver_entry_point("cuModuleUnload", &api.module_unload));
  STITCH_RETURN_IF_ERROR(driver_entry_point("cuModuleGetFunction", &api.module_get_function));
  STITCH_RETURN_IF_ERROR(driver_entry_point("cuLaunchKernel", &api.launch_kernel));
  STITCH_RETURN_IF_ERROR(
      driver_entry_point("cuLaunchCooperativeKernel", &api.launch_cooperative_kernel));
  return api;
}

// Owns an NVRTC program (nvrtcDestroyProgram takes the handle's address, so Owned<>
// does not fit).
class NvrtcProgram {
 public:
  NvrtcProgram() = default;
  ~NvrtcProgram() {
    if (program_ != nullptr) static_cast<void>(nvrtcDestroyProgram(&program_));
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;
  nvrtcProgram* receive() { return &program_; }
  nvrtcProgram get() const { return program_; }

 private:
  nvrtcProgram program_ = nullptr;
};

// Owns a loaded module.
class Module {
 public:
  explicit Module(const DriverApi& api) : api_(api) {}
  ~Module() {
    if (module_ != nullptr) static_cast<void>(api_.module_unload(module_));
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  CUmodule* receive() { return &module_; }
  CUmodule get() const { return module_; }

 private:
  const DriverApi& api_;
  CUmodule module_ = nullptr;
};

Status nvrtc_status(nvrtcResult result, std::string_view call) {
  if (result == NVRTC_SUCCESS) return Status::ok();
  return Status::internal(std::string(call) + ": " + nvrtcGetErrorString(result));
}

// The calibration kernels: the copy and the empty kernel, and the grid-barrier kernel
// over the prelude's stitch_grid_sync, cut out of the embedded prelude (the prelude
// as a whole includes headers NVRTC would need the toolkit's include directory for).
Result<std::string> calibration_source() {
  const std::string_view prelude = artifact::kernel_prelude();
  const std::string_view signature = "STITCH_DEVICE void stitch_grid_sync(";
  const size_t begin = prelude.find(signature);
  const size_t end = begin == std::string_view::npos ? begin : prelude.find("\n}\n", begin);
  if (end == std::string_view::npos) {
    return Status::internal("the embedded prelude has no stitch_grid_sync to calibrate");
  }
  return std::string(kCalibrationSource) + "#define STITCH_DEVICE __device__ __forceinline__\n" +
         std::string(prelude.substr(begin, end + 3 - begin)) + kBarrierSource;
}

// The calibration kernels as a cubin for sm_<major><minor>, or as PTX for the newest
// older architecture NVRTC supports.
Result<std::string> compile_calibration_kernels(int major, int minor, bool verbose) {
  STITCH_ASSIGN_OR_RETURN(const std::string source, calibration_source());
  int count = 0;
  STITCH_RETURN_IF_ERROR(
      nvrtc_status(nvrtcGetNumSupportedArchs(&count), "nvrtcGetNumSupportedArchs"));
  std::vector<int> architectures(static_cast<size_t>(std::max(count, 0)));
  if (count > 0) {
    STITCH_RETURN_IF_ERROR(
        nvrtc_status(nvrtcGetSupportedArchs(architectures.data()), "nvrtcGetSupportedArchs"));
  }
  const int target = major * 10 + minor;
  const bool exact =
      std::find(architectures.begin(), architectures.end(), target) != architectures.end();
  int ptx_target = 0;
  for (int architecture : architectures) {
    if (architecture <= target) ptx_target = std::max(ptx_target, architecture);
  }
  if (!exact && ptx_target == 0) {
    return Status::unavailable("NVRTC " + std::to_string(CUDART_VERSION) +
                               " supports no architecture up to sm_" + std::to_string(target));
  }
  const std::string option = exact ? "--gpu-architecture=sm_" + std::to_string(target)
                                   : "--gpu-architecture=compute_" + std::to_string(ptx_target);
  if (verbose) std::cerr << "calibrate: NVRTC " << option << "\n";

  NvrtcProgram program;
  STITCH_RETURN_IF_ERROR(
      nvrtc_status(nvrtcCreateProgram(program.receive(), source.c_str(), "stitch_calibrate.cu", 0,
                                      nullptr, nullptr),
                   "nvrtcCreateProgram"));
  const char* options[] = {option.c_str()};
  nvrtcResult compiled = nvrtcCompileProgram(program.get(), 1, options);
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    std::string log;
    if (nvrtcGetProgramLogSize(program.get(), &log_size) == NVRTC_SUCCESS && log_size > 1) {
      log.resize(log_size);
      if (nvrtcGetProgramLog(program.get(), log.data()) != NVRTC_SUCCESS) log.clear();
    }
    return Status::internal(std::string("nvrtcCompileProgram(") + option +
                            "): " + nvrtcGetErrorString(compiled) + "\n" + log);
  }
  size_t size = 0;
  std::string image;
  if (exact) {
    STITCH_RETURN_IF_ERROR(
        nvrtc_status(nvrtcGetCUBINSize(program.get(), &size), "nvrtcGetCUBINSize"));
    image.resize(size);
    STITCH_RETURN_IF_ERROR(
        nvrtc_status(nvrtcGetCUBIN(program.get(), image.data()), "nvrtcGetCUBIN"));
  } else {
    STITCH_RETURN_IF_ERROR(nvrtc_status(nvrtcGetPTXSize(program.get(), &size), "nvrtcGetPTXSize"));
    image.resize(size);  // includes the terminating NUL cuModuleLoadData needs for PTX
    STITCH_RETURN_IF_ERROR(nvrtc_status(nvrtcGetPTX(program.get(), image.data()), "nvrtcGetPTX"));
  }
  return image;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2.0;
}

// Element counts (float4 pairs) of the sizes to measure: log-spaced, both ends,
// strictly increasing.
std::vector<int64_t> copy_elements(const CalibrationOptions& options) {
  std::vector<int64_t> elements;
  const double decades =
      std::log10(static_cast<double>(options.max_bytes) / static_cast<double>(options.min_bytes));
  const int steps = static_cast<int>(std::ceil(decades * options.points_per_decade - 1e-9));
  for (int i = 0; i <= steps; ++i) {
    double bytes = static_cast<double>(options.min_bytes) *
                   std::pow(10.0, static_cast<double>(i) / options.points_per_decade);
    bytes = std::min(bytes, static_cast<double>(options.max_bytes));
    if (i == steps) bytes = static_cast<double>(options.max_bytes);
    elements.push_back(std::max<int64_t>(1, std::llround(bytes / kBytesPerElement)));
  }
  std::sort(elements.begin(), elements.end());
  elements.erase(std::unique(elements.begin(), elements.end()), elements.end());
  return elements;
}

// The device calibration runs on: its properties and the clocks cudaDeviceProp lacks.
struct DeviceFacts {
  cudaDeviceProp properties{};
  int clock_khz = 0;
  int memory_clock_khz = 0;
  int bus_bits = 0;
  int max_blocks_per_sm = 0;
};

Status check_options(const CalibrationOptions& options) {
  if (options.min_bytes < kBytesPerElement || options.max_bytes < options.min_bytes ||
      options.points_per_decade < 1 || options.repetitions < 1) {
    return Status::invalid_input(
        "calibrate: need " + std::to_string(kBytesPerElement) + " <= min_bytes (" +
        std::to_string(options.min_bytes) + ") <= max_bytes (" + std::to_string(options.max_bytes) +
        "), points_per_decade >= 1 (" + std::to_string(options.points_per_decade) +
        ") and repetitions >= 1 (" + std::to_string(options.repetitions) + ")");
  }
  return Status::ok();
}

// Selects options.device, makes its primary context current and reads its facts.
Result<DeviceFacts> open_device(const CalibrationOptions& options) {
  int count = 0;
  cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return Status::unavailable(cuda_error_text("cudaGetDeviceCount", error) +
                               ": no usable CUDA device");
  }
  if (options.device < 0 || options.device >= count) {
    return Status::invalid_input("CUDA device " + std::to_string(options.device) +
                                 " does not exist: this machine has " + std::to_string(count));
  }
  error = cudaSetDevice(options.device);
  if (error != cudaSuccess) return Status::unavailable(cuda_error_text("cudaSetDevice", error));
  // Makes the primary context current on this thread for the driver calls below.
  STITCH_RETURN_IF_ERROR(cuda_status(cudaFree(nullptr), "cudaFree(0)"));
  DeviceFacts facts;
  STITCH_RETURN_IF_ERROR(cuda_status(cudaGetDeviceProperties(&facts.properties, options.device),
                                     "cudaGetDeviceProperties"));
  auto attribute = [&](cudaDeviceAttr which, const char* name) -> Result<int> {
    int value = 0;
    STITCH_RETURN_IF_ERROR(cuda_status(cudaDeviceGetAttribute(&value, which, options.device),
                                       std::string("cudaDeviceGetAttribute(") + name + ")"));
    return value;
  };
  STITCH_ASSIGN_OR_RETURN(facts.clock_khz, attribute(cudaDevAttrClockRate, "ClockRate"));
  STITCH_ASSIGN_OR_RETURN(facts.memory_clock_khz,
                          attribute(cudaDevAttrMemoryClockRate, "MemoryClockRate"));
  STITCH_ASSIGN_OR_RETURN(facts.bus_bits,
                          attribute(cudaDevAttrGlobalMemoryBusWidth, "GlobalMemoryBusWidth"));
  STITCH_ASSIGN_OR_RETURN(facts.max_blocks_per_sm, attribute(cudaDevAttrMaxBlocksPerMultiprocessor,
                                                             "MaxBlocksPerMultiprocessor"));
  if (facts.clock_khz <= 0 || facts.max_blocks_per_sm <= 0) {
    return Status::unavailable("the driver reports no SM clock or blocks per SM for device " +
                               std::to_string(options.device));
  }
  return facts;
}

// The bandwidth curve M(V) into measurement.bandwidth_curve and the L2 bandwidth into
// measurement.l2_bytes_per_second.
Status measure_bandwidth(const DriverApi& driver, CUfunction copy, cudaStream_t stream,
                         const cudaDeviceProp& properties, const CalibrationOptions& options,
                         DeviceMeasurement& measurement) {
  const std::vector<int64_t> sizes = copy_elements(options);
  const int64_t max_elements = sizes.back();
  const size_t buffer_bytes = static_cast<size_t>(max_elements) * 16;
  OwnedDeviceMemory x;
  OwnedDeviceMemory y;
  OwnedDeviceMemory flush;
  const size_t flush_bytes = 2 * static_cast<size_t>(std::max(properties.l2CacheSize, 0));
  STITCH_RETURN_IF_ERROR(cuda_status(cudaMalloc(x.receive(), buffer_bytes), "cudaMalloc(source)"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(y.receive(), buffer_bytes), "cudaMalloc(destination)"));
  if (flush_bytes > 0) {
    STITCH_RETURN_IF_ERROR(
        cuda_status(cudaMalloc(flush.receive(), flush_bytes), "cudaMalloc(L2 flush)"));
  }
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(x.get(), 0, buffer_bytes, stream), "cudaMemsetAsync"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemsetAsync(y.get(), 0, buffer_bytes, stream), "cudaMemsetAsync"));

  const int64_t resident_blocks = static_cast<int64_t>(properties.multiProcessorCount) *
                                  std::max(1, properties.maxThreadsPerMultiProcessor / kCopyBlock);
  auto launch_copy = [&](int64_t elements) -> Status {
    const int64_t grid =
        std::clamp<int64_t>((elements + kCopyBlock - 1) / kCopyBlock, 1, resident_blocks);
    void* source = x.get();
    void* destination = y.get();
    unsigned long long n = static_cast<unsigned long long>(elements);
    void* arguments[] = {&source, &destination, &n};
    return driver.check(driver.launch_kernel(copy, static_cast<unsigned int>(grid), 1, 1,
                                             kCopyBlock, 1, 1, 0, stream, arguments, nullptr),
                        "cuLaunchKernel(copy)");
  };
  auto flush_l2 = [&]() -> Status {
    if (flush_bytes == 0) return Status::ok();
    return cuda_status(cudaMemsetAsync(flush.get(), 0, flush_bytes, stream),
                       "cudaMemsetAsync(L2 flush)");
  };

  for (int64_t elements : sizes) {
    for (int i = 0; i < 3; ++i) STITCH_RETURN_IF_ERROR(launch_copy(elements));  // warm-up
    std::vector<double> seconds;
    for (int i = 0; i < options.repetitions; ++i) {
      STITCH_RETURN_IF_ERROR(flush_l2());
      STITCH_ASSIGN_OR_RETURN(double milliseconds,
                              time_on_stream(stream, [&] { return launch_copy(elements); }));
      // Events resolve about 0.5 us; a zero reading would make an infinite bandwidth.
      seconds.push_back(std::max(milliseconds, 5e-4) * 1e-3);
    }
    const double bytes = static_cast<double>(elements * kBytesPerElement);
    const double bytes_per_second = bytes / median(seconds);
    measurement.bandwidth_curve.push_back({bytes, bytes_per_second});
    if (options.verbose) {
      std::cerr << "calibrate: " << static_cast<int64_t>(bytes)
                << " bytes: " << bytes_per_second / 1e9 << " GB/s\n";
    }
  }
  // L2: a copy of a quarter of the L2, read and written, kept there (no flush).
  const int64_t l2_elements = std::clamp<int64_t>(
      std::max(properties.l2CacheSize, 0) / (4 * kBytesPerElement), 1, max_elements);
  // kL2Batch copies back to back per timing: one copy that small lasts about as long
  // as its launch (an H100 measured 1.7 TB/s timing them one at a time).
  for (int i = 0; i < 3; ++i) STITCH_RETURN_IF_ERROR(launch_copy(l2_elements));
  std::vector<double> l2_seconds;
  for (int i = 0; i < options.repetitions; ++i) {
    STITCH_ASSIGN_OR_RETURN(double milliseconds, time_on_stream(stream, [&]() -> Status {
                              for (int copy = 0; copy < kL2Batch; ++copy) {
                                STITCH_RETURN_IF_ERROR(launch_copy(l2_elements));
                              }
                              return Status::ok();
                            }));
    l2_seconds.push_back(std::max(milliseconds, 5e-4) * 1e-3 / kL2Batch);
  }
  measurement.l2_bytes_per_second =
      static_cast<double>(l2_elements * kBytesPerElement) / median(l2_seconds);
  if (options.verbose) {
    std::cerr << "calibrate: L2 " << l2_elements * kBytesPerElement
              << " bytes: " << measurement.l2_bytes_per_second / 1e9 << " GB/s\n";
  }
  // The buffers are freed on return: nothing may still read them.
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return Status::ok();
}

// One grid barrier in microseconds: kBarrierRounds barriers in one cooperative launch
// of one block per SM, less the launch latency, over kBarrierRounds; the median over
// `repetitions` launches. The counter needs no reset between launches (each round
// returns its low bits to 0, stitch_prelude.cuh).
Result<double> measure_grid_barrier(const DriverApi& driver, CUfunction barrier,
                                    cudaStream_t stream, const cudaDeviceProp& properties,
                                    double launch_latency_us, const CalibrationOptions& options) {
  OwnedDeviceMemory counter;
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(counter.receive(), sizeof(unsigned int)), "cudaMalloc(barrier)"));
  STITCH_RETURN_IF_ERROR(cuda_status(
      cudaMemsetAsync(counter.get(), 0, sizeof(unsigned int), stream), "cudaMemsetAsync"));
  const unsigned int blocks = static_cast<unsigned int>(properties.multiProcessorCount);
  auto launch = [&]() -> Status {
    void* pointer = counter.get();
    int rounds = kBarrierRounds;
    void* arguments[] = {&pointer, &rounds};
    return driver.check(driver.launch_cooperative_kernel(barrier, blocks, 1, 1, kCopyBlock, 1, 1, 0,
                                                         stream, arguments),
                        "cuLaunchCooperativeKernel(grid barrier)");
  };
  STITCH_RETURN_IF_ERROR(launch());  // warm-up
  std::vector<double> barrier_us;
  for (int i = 0; i < options.repetitions; ++i) {
    STITCH_ASSIGN_OR_RETURN(double milliseconds, time_on_stream(stream, launch));
    barrier_us.push_back(std::max(milliseconds * 1e3 - launch_latency_us, 1e-3) / kBarrierRounds);
  }
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return median(barrier_us);
}

// A global load's latency in nanoseconds, as a warp waits it out when the data is in L2:
// one thread's chain of kChaseSteps dependent loads (stitch_calibrate_chase), less the
// launch latency, over the steps; the median over `repetitions` launches after one
// launch that walks the whole chain into L2.
Result<double> measure_load_latency(const DriverApi& driver, CUfunction chase, cudaStream_t stream,
                                    double launch_latency_us, const CalibrationOptions& options) {
  const unsigned int elements = kChaseStride * kChaseNodes;
  std::vector<unsigned int> next(elements, 0);
  for (unsigned int node = 0; node < kChaseNodes; ++node) {
    next[node * kChaseStride] = ((node + 1) % kChaseNodes) * kChaseStride;
  }
  OwnedDeviceMemory chain;
  OwnedDeviceMemory out;
  const size_t bytes = static_cast<size_t>(elements) * sizeof(unsigned int);
  STITCH_RETURN_IF_ERROR(cuda_status(cudaMalloc(chain.receive(), bytes), "cudaMalloc(chain)"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMalloc(out.receive(), sizeof(unsigned int)), "cudaMalloc(chain end)"));
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaMemcpyAsync(chain.get(), next.data(), bytes, cudaMemcpyHostToDevice, stream),
                  "cudaMemcpyAsync(chain)"));
  auto launch = [&](int steps) -> Status {
    void* pointer = chain.get();
    void* end = out.get();
    void* arguments[] = {&pointer, &steps, &end};
    return driver.check(
        driver.launch_kernel(chase, 1, 1, 1, 1, 1, 1, 0, stream, arguments, nullptr),
        "cuLaunchKernel(chase)");
  };
  STITCH_RETURN_IF_ERROR(launch(static_cast<int>(kChaseNodes)));  // into L2
  std::vector<double> latency_ns;
  for (int i = 0; i < options.repetitions; ++i) {
    STITCH_ASSIGN_OR_RETURN(double milliseconds,
                            time_on_stream(stream, [&] { return launch(kChaseSteps); }));
    latency_ns.push_back(std::max(milliseconds * 1e3 - launch_latency_us, 1e-3) * 1e3 /
                         kChaseSteps);
  }
  // The buffers are freed on return: nothing may still read them.
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return median(latency_ns);
}

// Launch latency phi in microseconds: the median over batches of back-to-back launches.
Result<double> measure_launch_latency(const DriverApi& driver, CUfunction empty,
                                      cudaStream_t stream, const CalibrationOptions& options) {
  std::vector<double> launch_us;
  auto launch_empty = [&]() -> Status {
    return driver.check(driver.launch_kernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr),
                        "cuLaunchKernel(empty)");
  };
  for (int i = 0; i < 100; ++i) STITCH_RETURN_IF_ERROR(launch_empty());  // warm-up
  for (int i = 0; i < options.repetitions; ++i) {
    STITCH_ASSIGN_OR_RETURN(double milliseconds, time_on_stream(stream, [&]() -> Status {
                              for (int launch = 0; launch < kLaunchBatch; ++launch) {
                                STITCH_RETURN_IF_ERROR(launch_empty());
                              }
                              return Status::ok();
                            }));
    launch_us.push_back(milliseconds * 1e3 / kLaunchBatch);
  }
  return std::max(median(launch_us), 1e-3);
}

// The measurement's device facts, as read by open_device.
DeviceMeasurement device_measurement(const DeviceFacts& facts) {
  const cudaDeviceProp& properties = facts.properties;
  DeviceMeasurement measurement;
  measurement.name = properties.name;
  measurement.compute_capability_major = properties.major;
  measurement.compute_capability_minor = properties.minor;
  measurement.sm_count = properties.multiProcessorCount;
  measurement.max_threads_per_block = properties.maxThreadsPerBlock;
  measurement.max_threads_per_sm = properties.maxThreadsPerMultiProcessor;
  measurement.warp_size = properties.warpSize;
  measurement.registers_per_block = properties.regsPerBlock;
  measurement.registers_per_sm = properties.regsPerMultiprocessor;
  measurement.shared_memory_per_block = static_cast<int64_t>(properties.sharedMemPerBlock);
  measurement.shared_memory_per_block_optin =
      static_cast<int64_t>(properties.sharedMemPerBlockOptin);
  measurement.shared_memory_per_sm = static_cast<int64_t>(properties.sharedMemPerMultiprocessor);
  measurement.l2_bytes = properties.l2CacheSize;
  measurement.clock_khz = facts.clock_khz;
  measurement.memory_clock_khz = facts.memory_clock_khz;
  measurement.bus_bits = facts.bus_bits;
  measurement.max_blocks_per_sm = facts.max_blocks_per_sm;
  return measurement;
}

}  // namespace

Result<DeviceMeasurement> calibrate_cuda_device(const CalibrationOptions& options) {
  STITCH_RETURN_IF_ERROR(check_options(options));
  STITCH_ASSIGN_OR_RETURN(DeviceFacts facts, open_device(options));
  const cudaDeviceProp& properties = facts.properties;
  if (options.verbose) {
    std::cerr << "calibrate: " << properties.name << " (sm_" << properties.major << properties.minor
              << ", " << properties.multiProcessorCount << " SMs)\n";
  }

  STITCH_ASSIGN_OR_RETURN(DriverApi driver, load_driver_api());
  STITCH_ASSIGN_OR_RETURN(
      std::string image,
      compile_calibration_kernels(properties.major, properties.minor, options.verbose));
  Module module(driver);
  STITCH_RETURN_IF_ERROR(
      driver.check(driver.module_load_data(module.receive(), image.data()), "cuModuleLoadData"));
  CUfunction copy = nullptr;
  CUfunction empty = nullptr;
  CUfunction barrier = nullptr;
  CUfunction chase = nullptr;
  STITCH_RETURN_IF_ERROR(
      driver.check(driver.module_get_function(&chase, module.get(), "stitch_calibrate_chase"),
                   "cuModuleGetFunction"));
  STITCH_RETURN_IF_ERROR(
      driver.check(driver.module_get_function(&copy, module.get(), "stitch_calibrate_copy"),
                   "cuModuleGetFunction"));
  STITCH_RETURN_IF_ERROR(
      driver.check(driver.module_get_function(&empty, module.get(), "stitch_calibrate_empty"),
                   "cuModuleGetFunction"));
  STITCH_RETURN_IF_ERROR(driver.check(
      driver.module_get_function(&barrier, module.get(), "stitch_calibrate_grid_barrier"),
      "cuModuleGetFunction"));

  OwnedStream stream;
  STITCH_RETURN_IF_ERROR(
      cuda_status(cudaStreamCreateWithFlags(stream.receive(), cudaStreamNonBlocking),
                  "cudaStreamCreateWithFlags"));
  DeviceMeasurement measurement = device_measurement(facts);
  STITCH_RETURN_IF_ERROR(
      measure_bandwidth(driver, copy, stream.get(), properties, options, measurement));
  STITCH_ASSIGN_OR_RETURN(measurement.launch_latency_us,
                          measure_launch_latency(driver, empty, stream.get(), options));
  if (options.verbose)
    std::cerr << "calibrate: launch latency " << measurement.launch_latency_us << " us\n";
  STITCH_ASSIGN_OR_RETURN(measurement.grid_barrier_us,
                          measure_grid_barrier(driver, barrier, stream.get(), properties,
                                               measurement.launch_latency_us, options));
  if (options.verbose)
    std::cerr << "calibrate: grid barrier " << measurement.grid_barrier_us << " us\n";
  STITCH_ASSIGN_OR_RETURN(
      measurement.global_load_latency_ns,
      measure_load_latency(driver, chase, stream.get(), measurement.launch_latency_us, options));
  if (options.verbose) {
    std::cerr << "calibrate: global load latency " << measurement.global_load_latency_ns << " ns\n";
  }
  STITCH_RETURN_IF_ERROR(cuda_status(cudaStreamSynchronize(stream.get()), "cudaStreamSynchronize"));
  return measurement;
}

}  // namespace stitch::runtime::cuda

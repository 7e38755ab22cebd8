// The runtime library on a GPU (issue 38), through the C++ API as a program would use
// it: device_api_test OUT_DIR. Exits 77 (ctest: skipped) with the reason when no GPU is
// usable, as on CI. On a GPU:
//   - device inputs and outputs (cudaMalloc'd) on the caller's stream, three runs, equal
//     to the reference backend's outputs on the same host inputs (max |a-b| / max |b|
//     <= 1e-4), and the session replays a CUDA graph after the first run (or says which
//     step keeps it from one);
//   - host and device memory mixed in one run; graphs turned off give the same outputs;
//   - a host pointer passed as device memory, a device pointer passed as host memory and
//     a misaligned device pointer are errors, and the session runs again afterwards;
//   - five sessions opened, run and closed leave the device's free memory within 1 MiB
//     of where it was after the first.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "stitchopt/session.hpp"

namespace {

int failures = 0;

void fail(const std::string& what) {
  std::printf("FAIL %s\n", what.c_str());
  ++failures;
}

// Seeded host inputs: floats in [-1, 1), integers 0 or 1 (valid indices and masks).
std::map<std::string, std::vector<char>> host_inputs(const stitchopt::Session& session) {
  std::map<std::string, std::vector<char>> inputs;
  uint32_t state = 12345;
  for (const stitchopt::TensorInfo& info : session.inputs()) {
    std::vector<char> bytes(info.bytes);
    const size_t count = info.bytes / stitchopt_dtype_size(info.dtype);
    for (size_t i = 0; i < count; ++i) {
      state = state * 1664525u + 1013904223u;
      if (info.dtype == STITCHOPT_FLOAT32) {
        const float value = static_cast<float>(state >> 8) / 8388608.0f - 1.0f;
        std::memcpy(bytes.data() + i * 4, &value, 4);
      } else if (info.dtype == STITCHOPT_INT64) {
        const int64_t value = (state >> 16) & 1;
        std::memcpy(bytes.data() + i * 8, &value, 8);
      } else {
        bytes[i * stitchopt_dtype_size(info.dtype)] = static_cast<char>((state >> 16) & 1);
      }
    }
    inputs[info.name] = std::move(bytes);
  }
  return inputs;
}

double relative_error(const std::vector<char>& got, const std::vector<char>& want,
                      StitchoptDType dtype) {
  if (dtype != STITCHOPT_FLOAT32) return got == want ? 0.0 : 1.0;
  double worst = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size() / 4; ++i) {
    float a = 0, b = 0;
    std::memcpy(&a, got.data() + i * 4, 4);
    std::memcpy(&b, want.data() + i * 4, 4);
    worst = std::max(worst, std::fabs(static_cast<double>(a) - b));
    scale = std::max(scale, std::fabs(static_cast<double>(b)));
  }
  return worst / scale;
}

struct DeviceRun {
  std::vector<void*> buffers;  // freed by the destructor
  ~DeviceRun() {
    for (void* buffer : buffers) cudaFree(buffer);
  }
  void* allocate(size_t bytes) {
    void* pointer = nullptr;
    if (cudaMalloc(&pointer, std::max<size_t>(bytes, 1)) != cudaSuccess) return nullptr;
    buffers.push_back(pointer);
    return pointer;
  }
};

// Runs `session` on device copies of `inputs` on `stream`; the outputs, copied back.
std::map<std::string, std::vector<char>> run_on_device(
    stitchopt::Session& session, const std::map<std::string, std::vector<char>>& inputs,
    cudaStream_t stream, int repeats) {
  DeviceRun memory;
  std::vector<stitchopt::Input> bound;
  for (const stitchopt::TensorInfo& info : session.inputs()) {
    void* device = memory.allocate(info.bytes);
    cudaMemcpy(device, inputs.at(info.name).data(), info.bytes, cudaMemcpyHostToDevice);
    bound.push_back(stitchopt::Input::on_device(info.name, info.dtype, info.shape, device));
  }
  std::vector<StitchoptBufferRef> outputs;
  for (const stitchopt::TensorInfo& info : session.outputs()) {
    outputs.push_back({nullptr, memory.allocate(info.bytes), info.bytes, STITCHOPT_MEMORY_CUDA});
  }
  const std::vector<stitchopt::TensorInfo> infos = session.outputs();
  for (size_t i = 0; i < infos.size(); ++i) outputs[i].name = infos[i].name.c_str();
  for (int r = 0; r < repeats; ++r) session.run_on(stream, bound, outputs);
  cudaStreamSynchronize(stream);
  std::map<std::string, std::vector<char>> results;
  for (size_t i = 0; i < infos.size(); ++i) {
    std::vector<char> bytes(infos[i].bytes);
    cudaMemcpy(bytes.data(), outputs[i].data, bytes.size(), cudaMemcpyDeviceToHost);
    results[infos[i].name] = std::move(bytes);
  }
  return results;
}

void compare(const std::string& what, const stitchopt::Session& session,
             const std::map<std::string, std::vector<char>>& got,
             const std::map<std::string, std::vector<char>>& want) {
  for (const stitchopt::TensorInfo& info : session.outputs()) {
    const double error = relative_error(got.at(info.name), want.at(info.name), info.dtype);
    if (!(error <= 1e-4)) {
      fail(what + ": output " + info.name + " differs from the reference by " +
           std::to_string(error));
    }
  }
}

template <class Call>
void expect_error(const std::string& what, const std::string& needle, Call call) {
  try {
    call();
    fail(what + ": no error");
  } catch (const stitchopt::Error& error) {
    if (std::string(error.what()).find(needle) == std::string::npos) {
      fail(what + ": the error does not say \"" + needle + "\": " + error.what());
    }
  }
}

void check_bad_pointers(stitchopt::Session& session,
                        const std::map<std::string, std::vector<char>>& inputs) {
  const stitchopt::TensorInfo first = session.inputs()[0];
  std::vector<stitchopt::Input> bound;
  for (const stitchopt::TensorInfo& info : session.inputs()) {
    bound.push_back(stitchopt::Input{info.name, info.dtype, info.shape, inputs.at(info.name).data(),
                                     STITCHOPT_MEMORY_HOST});
  }
  std::vector<StitchoptBufferRef> none;
  std::vector<stitchopt::Input> host_as_device = bound;
  host_as_device[0].memory = STITCHOPT_MEMORY_CUDA;
  expect_error("host memory as device memory", "host memory",
               [&]() { session.run_on(nullptr, host_as_device, none); });
  DeviceRun memory;
  char* device = static_cast<char*>(memory.allocate(first.bytes + 16));
  std::vector<stitchopt::Input> device_as_host = bound;
  device_as_host[0].data = device;
  expect_error("device memory as host memory", "passed as host memory",
               [&]() { session.run_on(nullptr, device_as_host, none); });
  std::vector<stitchopt::Input> misaligned = bound;
  misaligned[0] = stitchopt::Input::on_device(first.name, first.dtype, first.shape, device + 1);
  if (stitchopt_dtype_size(first.dtype) > 1) {
    expect_error("misaligned device memory", "not aligned",
                 [&]() { session.run_on(nullptr, misaligned, none); });
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: device_api_test OUT_DIR\n");
    return 2;
  }
  int count = 0;
  const cudaError_t probe = cudaGetDeviceCount(&count);
  if (probe != cudaSuccess || count == 0) {
    std::printf("device_api_test: skipped: no usable GPU (cudaGetDeviceCount: %s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }
  try {
    stitchopt::Session reference(argv[1], stitchopt::Backend::kReference);
    const std::map<std::string, std::vector<char>> inputs = host_inputs(reference);
    std::vector<stitchopt::Input> host;
    for (const stitchopt::TensorInfo& info : reference.inputs()) {
      host.push_back(
          stitchopt::Input{info.name, info.dtype, info.shape, inputs.at(info.name).data()});
    }
    std::map<std::string, std::vector<char>> want;
    for (auto& [name, output] : reference.run(host)) want[name] = output.bytes;

    stitchopt::Options options;
    options.backend = stitchopt::Backend::kGpu;
    stitchopt::Session gpu(argv[1], options);
    cudaStream_t stream = nullptr;
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    compare("device tensors on a stream", gpu, run_on_device(gpu, inputs, stream, 3), want);
    const std::string mode = gpu.launch_mode();
    std::printf("%s: %s; %s\n", argv[1], gpu.backend().c_str(), mode.c_str());
    if (mode.rfind("CUDA graph replay", 0) != 0 &&
        mode.find("runs on the host") == std::string::npos) {
      fail("after three runs the session does not replay a CUDA graph: " + mode);
    }
    std::map<std::string, std::vector<char>> host_outputs;
    for (auto& [name, output] : gpu.run(host)) host_outputs[name] = output.bytes;
    compare("host tensors on the GPU", gpu, host_outputs, want);
    options.cuda_graphs = false;
    stitchopt::Session launches(argv[1], options);
    compare("graphs off", launches, run_on_device(launches, inputs, stream, 2), want);
    if (launches.launch_mode().find("turned off") == std::string::npos) {
      fail("graphs off: " + launches.launch_mode());
    }
    check_bad_pointers(gpu, inputs);
    compare("after the errors", gpu, run_on_device(gpu, inputs, stream, 1), want);

    size_t free_before = 0, free_after = 0, total = 0;
    cudaMemGetInfo(&free_before, &total);
    for (int i = 0; i < 5; ++i) {
      stitchopt::Session cycle(argv[1], options);
      run_on_device(cycle, inputs, stream, 1);
    }
    cudaMemGetInfo(&free_after, &total);
    const long long lost = static_cast<long long>(free_before) - static_cast<long long>(free_after);
    std::printf("device memory after five open/run/close cycles: %lld bytes fewer free\n", lost);
    if (lost > (1 << 20)) fail("sessions closed leave " + std::to_string(lost) + " bytes behind");
    cudaStreamDestroy(stream);
  } catch (const stitchopt::Error& error) {
    fail(std::string("unexpected error: ") + error.what());
  }
  if (failures == 0) std::printf("device_api_test: all checks passed\n");
  return failures == 0 ? 0 : 1;
}

// stitchopt's runtime library, the C++ API: stitchopt::Session, a header-only wrapper
// of the C ABI (stitchopt/runtime.h), so a program built with another compiler or
// standard library than libstitchopt_runtime's uses it safely. Errors are thrown as
// stitchopt::Error (its code() and what()); a session stays usable after one.
//
//   stitchopt::Session session("out");                 // GPU if usable, else emulated
//   std::vector<float> pixels(32 * 784);
//   auto outputs = session.run({stitchopt::Input::of("input", pixels, {32, 784})});
//   const std::vector<float> logits = outputs.at("logits").as<float>();
//
// Device memory and a CUDA stream (GPU backend), IoBinding style:
//   session.run_on(stream, {stitchopt::Input::on_device("input", STITCHOPT_FLOAT32,
//                                                       {32, 784}, device_pixels)},
//                  {{"logits", device_logits, 32 * 10 * sizeof(float), STITCHOPT_MEMORY_CUDA}});
//
// docs/runtime.md, "Using a compiled model from your program".
#ifndef STITCHOPT_SESSION_HPP_
#define STITCHOPT_SESSION_HPP_

#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "stitchopt/runtime.h"

namespace stitchopt {

enum class Backend {
  kAuto = STITCHOPT_BACKEND_AUTO,
  kGpu = STITCHOPT_BACKEND_GPU,
  kEmulated = STITCHOPT_BACKEND_EMULATED,
  kReference = STITCHOPT_BACKEND_REFERENCE,
};

class Error : public std::runtime_error {
 public:
  Error(StitchoptCode code, const std::string& message)
      : std::runtime_error(message), code_(code) {}
  StitchoptCode code() const { return code_; }

 private:
  StitchoptCode code_;
};

namespace detail {
inline void check(StitchoptStatus* status) {
  if (status == nullptr) return;
  Error error(stitchopt_status_code(status), stitchopt_status_message(status));
  stitchopt_status_free(status);
  throw error;
}

template <class T>
constexpr StitchoptDType dtype_of();
template <>
constexpr StitchoptDType dtype_of<float>() {
  return STITCHOPT_FLOAT32;
}
template <>
constexpr StitchoptDType dtype_of<double>() {
  return STITCHOPT_FLOAT64;
}
template <>
constexpr StitchoptDType dtype_of<int64_t>() {
  return STITCHOPT_INT64;
}
template <>
constexpr StitchoptDType dtype_of<int32_t>() {
  return STITCHOPT_INT32;
}
template <>
constexpr StitchoptDType dtype_of<int8_t>() {
  return STITCHOPT_INT8;
}
template <>
constexpr StitchoptDType dtype_of<uint8_t>() {
  return STITCHOPT_UINT8;
}
template <>
constexpr StitchoptDType dtype_of<bool>() {
  return STITCHOPT_BOOL;
}
}  // namespace detail

// A model input or output.
struct TensorInfo {
  std::string name;
  StitchoptDType dtype;
  std::vector<int64_t> shape;
  size_t bytes;
};

// An input in host memory, or device memory of the session's GPU (not copied until
// run).
struct Input {
  std::string name;
  StitchoptDType dtype;
  std::vector<int64_t> shape;
  const void* data;
  StitchoptMemory memory = STITCHOPT_MEMORY_HOST;

  template <class T>
  static Input of(std::string name, const std::vector<T>& values, std::vector<int64_t> shape) {
    return Input{std::move(name), detail::dtype_of<T>(), std::move(shape), values.data()};
  }
  static Input on_device(std::string name, StitchoptDType dtype, std::vector<int64_t> shape,
                         const void* device_data) {
    return Input{std::move(name), dtype, std::move(shape), device_data, STITCHOPT_MEMORY_CUDA};
  }
};

// What a session is opened with beyond the output directory.
struct Options {
  Backend backend = Backend::kAuto;
  int cuda_device = 0;
  bool cuda_graphs = true;  // GPU: capture the steps at the first run, replay them after
};

// An output as run() returns it: its bytes, owned.
struct Output {
  StitchoptDType dtype;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  template <class T>
  std::vector<T> as() const {
    if (detail::dtype_of<T>() != dtype) {
      throw Error(STITCHOPT_INVALID_INPUT, "stitchopt::Output::as: the output's dtype is " +
                                               std::to_string(dtype) + ", not the type asked for");
    }
    std::vector<T> values(bytes.size() / sizeof(T));
    std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
    return values;
  }
};

class Session {
 public:
  explicit Session(const std::string& out_dir, Backend backend = Backend::kAuto)
      : Session(out_dir, Options{backend}) {}
  Session(const std::string& out_dir, const Options& options) {
    StitchoptSessionOptions c_options;
    stitchopt_session_options_init(&c_options);
    c_options.backend = static_cast<StitchoptBackend>(options.backend);
    c_options.cuda_device = options.cuda_device;
    c_options.cuda_graphs = options.cuda_graphs ? 1 : 0;
    detail::check(stitchopt_session_open_with(out_dir.c_str(), &c_options, &session_));
  }
  ~Session() { stitchopt_session_close(session_); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  Session(Session&& other) noexcept : session_(other.session_) { other.session_ = nullptr; }
  Session& operator=(Session&& other) noexcept {
    std::swap(session_, other.session_);
    return *this;
  }

  // "CPU: emulated kernels", "CPU: reference interpreter" or the GPU's name.
  std::string backend() const { return stitchopt_session_backend(session_); }
  // "CUDA graph replay (N steps in one graph)", "one launch per step: <why>", ...
  std::string launch_mode() const {
    std::string mode(stitchopt_session_launch_mode(session_, nullptr, 0), '\0');
    stitchopt_session_launch_mode(session_, &mode[0], mode.size() + 1);
    return mode;
  }

  std::vector<TensorInfo> inputs() const {
    return describe(stitchopt_session_input_count(session_), stitchopt_session_input);
  }
  std::vector<TensorInfo> outputs() const {
    return describe(stitchopt_session_output_count(session_), stitchopt_session_output);
  }

  // Writes the named outputs into the caller's buffers (IoBinding style: no copy of
  // the outputs beyond the one into `buffers`).
  void run(const std::vector<Input>& inputs, const std::vector<StitchoptBuffer>& buffers) {
    std::vector<StitchoptBufferRef> refs;
    refs.reserve(buffers.size());
    for (const StitchoptBuffer& buffer : buffers) {
      refs.push_back({buffer.name, buffer.data, buffer.capacity_bytes, STITCHOPT_MEMORY_HOST});
    }
    run_on(nullptr, inputs, refs);
  }

  // Host or device memory, ordered on `cuda_stream` (a cudaStream_t; may be null):
  // stitchopt_session_run_on.
  void run_on(void* cuda_stream, const std::vector<Input>& inputs,
              const std::vector<StitchoptBufferRef>& buffers) {
    std::vector<StitchoptTensorRef> tensors;
    tensors.reserve(inputs.size());
    for (const Input& input : inputs) {
      tensors.push_back({input.name.c_str(), input.dtype, static_cast<int32_t>(input.shape.size()),
                         input.shape.data(), input.data, input.memory});
    }
    detail::check(stitchopt_session_run_on(session_, cuda_stream, tensors.data(), tensors.size(),
                                           buffers.data(), buffers.size()));
  }

  // Every output, by name.
  std::map<std::string, Output> run(const std::vector<Input>& inputs) {
    std::map<std::string, Output> results;
    for (const TensorInfo& info : outputs()) {
      results[info.name] = Output{info.dtype, info.shape, std::vector<char>(info.bytes)};
    }
    std::vector<StitchoptBufferRef> buffers;
    for (auto& [name, output] : results) {
      buffers.push_back(
          {name.c_str(), output.bytes.data(), output.bytes.size(), STITCHOPT_MEMORY_HOST});
    }
    run_on(nullptr, inputs, buffers);
    return results;
  }

 private:
  template <class Describe>
  std::vector<TensorInfo> describe(size_t count, Describe describe_one) const {
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < count; ++i) {
      StitchoptTensorInfo info{};
      detail::check(describe_one(session_, i, &info));
      infos.push_back({info.name, static_cast<StitchoptDType>(info.dtype),
                       std::vector<int64_t>(info.shape, info.shape + info.rank), info.bytes});
    }
    return infos;
  }

  StitchoptSession* session_ = nullptr;
};

}  // namespace stitchopt

#endif  // STITCHOPT_SESSION_HPP_

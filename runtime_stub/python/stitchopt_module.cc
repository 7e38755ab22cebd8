// stitchopt._stitchopt: the Python package's binding of the runtime library's C ABI
// (runtime_stub/api/stitchopt/runtime.h). Only the C ABI is used, as any program
// would; stitchopt/__init__.py builds InferenceSession on it.
//
// Tensors arrive as nanobind ndarrays: numpy arrays and any DLPack producer (torch,
// CuPy, JAX), never copied here. Each is checked before the run: C-contiguous, a dtype
// the ONNX type system has, on the CPU (or CUDA pinned host memory) or on a CUDA
// device. Errors: ValueError for a bad argument (STITCHOPT_INVALID_INPUT),
// RuntimeError for no usable GPU or an internal error. The GIL is released while the
// model runs.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "stitchopt/runtime.h"

namespace nb = nanobind;

namespace {

// A failed call's status as the Python exception for its code.
void check(StitchoptStatus* status) {
  if (status == nullptr) return;
  const StitchoptCode code = stitchopt_status_code(status);
  const std::string message = stitchopt_status_message(status);
  stitchopt_status_free(status);
  if (code == STITCHOPT_INVALID_INPUT) throw nb::value_error(message.c_str());
  throw std::runtime_error(message);
}

// The ONNX element type of a DLPack dtype, or 0.
int32_t onnx_dtype(nb::dlpack::dtype dtype) {
  using Code = nb::dlpack::dtype_code;
  struct Entry {
    Code code;
    uint8_t bits;
    int32_t onnx;
  };
  static constexpr Entry kTypes[] = {
      {Code::Float, 16, STITCHOPT_FLOAT16}, {Code::Float, 32, STITCHOPT_FLOAT32},
      {Code::Float, 64, STITCHOPT_FLOAT64}, {Code::Bfloat, 16, STITCHOPT_BFLOAT16},
      {Code::Int, 8, STITCHOPT_INT8},       {Code::Int, 16, STITCHOPT_INT16},
      {Code::Int, 32, STITCHOPT_INT32},     {Code::Int, 64, STITCHOPT_INT64},
      {Code::UInt, 8, STITCHOPT_UINT8},     {Code::UInt, 16, STITCHOPT_UINT16},
      {Code::UInt, 32, STITCHOPT_UINT32},   {Code::UInt, 64, STITCHOPT_UINT64},
      {Code::Bool, 8, STITCHOPT_BOOL}};
  for (const Entry& entry : kTypes) {
    if (dtype.lanes == 1 && static_cast<Code>(dtype.code) == entry.code &&
        dtype.bits == entry.bits) {
      return entry.onnx;
    }
  }
  return 0;
}

// One tensor of a run, checked: its dtype, shape, data and memory.
struct Bound {
  int32_t dtype = 0;
  std::vector<int64_t> shape;
  void* data = nullptr;
  int32_t memory = STITCHOPT_MEMORY_HOST;
  size_t bytes = 0;
};

// `kind` and `name` ("input", "x") name the tensor in an error.
template <class Array>
Bound bind(const char* kind, const std::string& name, const Array& array) {
  auto what = [&]() { return std::string(kind) + " \"" + name + "\""; };
  Bound bound;
  bound.dtype = onnx_dtype(array.dtype());
  if (bound.dtype == 0) {
    throw nb::value_error((what() + ": its dtype (DLPack code " +
                           std::to_string(array.dtype().code) + ", " +
                           std::to_string(array.dtype().bits) + " bits, " +
                           std::to_string(array.dtype().lanes) + " lanes) is none stitchopt runs")
                              .c_str());
  }
  const int device = array.device_type();
  if (device == nb::device::cpu::value || device == nb::device::cuda_host::value) {
    bound.memory = STITCHOPT_MEMORY_HOST;
  } else if (device == nb::device::cuda::value || device == nb::device::cuda_managed::value) {
    bound.memory = STITCHOPT_MEMORY_CUDA;
  } else {
    throw nb::value_error((what() + ": it is on DLPack device type " + std::to_string(device) +
                           "; stitchopt takes CPU memory or CUDA device memory")
                              .c_str());
  }
  // C order: each stride is the product of the dims after it (dims of 1 may have any).
  int64_t expected = 1;
  bound.shape.resize(array.ndim());
  for (size_t i = array.ndim(); i-- > 0;) {
    bound.shape[i] = static_cast<int64_t>(array.shape(i));
    if (array.stride_ptr() != nullptr && array.shape(i) > 1 && array.stride(i) != expected) {
      throw nb::value_error((what() + ": it is not C-contiguous (strides in elements do not "
                                      "follow its shape); pass a contiguous copy, e.g. "
                                      "numpy.ascontiguousarray(x) or x.contiguous()")
                                .c_str());
    }
    expected *= static_cast<int64_t>(array.shape(i));
  }
  bound.data = const_cast<void*>(static_cast<const void*>(array.data()));
  bound.bytes = array.nbytes();
  return bound;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

// The model's inputs or outputs as (name, ONNX dtype, shape) triples.
using TensorInfos = std::vector<std::tuple<std::string, int32_t, std::vector<int64_t>>>;

template <class Count, class Describe>
TensorInfos describe(const StitchoptSession* session, Count count, Describe describe_one) {
  TensorInfos infos;
  for (size_t i = 0; i < count(session); ++i) {
    StitchoptTensorInfo info{};
    check(describe_one(session, i, &info));
    infos.emplace_back(info.name, info.dtype,
                       std::vector<int64_t>(info.shape, info.shape + info.rank));
  }
  return infos;
}

class Session {
 public:
  Session(const std::string& out_dir, const std::string& backend, int device, bool cuda_graphs) {
    StitchoptSessionOptions options;
    stitchopt_session_options_init(&options);
    if (backend == "auto") {
      options.backend = STITCHOPT_BACKEND_AUTO;
    } else if (backend == "gpu") {
      options.backend = STITCHOPT_BACKEND_GPU;
    } else if (backend == "emulated") {
      options.backend = STITCHOPT_BACKEND_EMULATED;
    } else if (backend == "reference") {
      options.backend = STITCHOPT_BACKEND_REFERENCE;
    } else {
      throw nb::value_error(
          ("backend \"" + backend + "\" is none of \"auto\", \"gpu\", \"emulated\", \"reference\"")
              .c_str());
    }
    options.cuda_device = device;
    options.cuda_graphs = cuda_graphs ? 1 : 0;
    StitchoptStatus* status = nullptr;
    {
      nb::gil_scoped_release release;  // kernels may be built
      status = stitchopt_session_open_with(out_dir.c_str(), &options, &session_);
    }
    check(status);
    // Fixed for the session's life: read once, not on every run.
    inputs_ = describe(session_, stitchopt_session_input_count, stitchopt_session_input);
    outputs_ = describe(session_, stitchopt_session_output_count, stitchopt_session_output);
  }
  ~Session() { close(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void close() {
    stitchopt_session_close(session_);
    session_ = nullptr;
  }
  const StitchoptSession* open_session() const {
    if (session_ == nullptr) throw std::runtime_error("the session was closed");
    return session_;
  }

  std::string backend() const { return stitchopt_session_backend(open_session()); }
  std::string launch_mode() const {
    std::string mode(stitchopt_session_launch_mode(open_session(), nullptr, 0), '\0');
    stitchopt_session_launch_mode(session_, mode.data(), mode.size() + 1);
    return mode;
  }
  const TensorInfos& inputs() const {
    open_session();
    return inputs_;
  }
  const TensorInfos& outputs() const {
    open_session();
    return outputs_;
  }

  // `stream`: a cudaStream_t as an integer, 0 for none.
  void run(const std::vector<std::pair<std::string, nb::ndarray<nb::ro>>>& inputs,
           const std::vector<std::pair<std::string, nb::ndarray<>>>& outputs, uintptr_t stream) {
    open_session();
    std::vector<Bound> bound_inputs;
    std::vector<StitchoptTensorRef> tensors;
    bound_inputs.reserve(inputs.size());
    for (const auto& [name, array] : inputs) {
      bound_inputs.push_back(bind("input", name, array));
      const Bound& b = bound_inputs.back();
      tensors.push_back({name.c_str(), b.dtype, static_cast<int32_t>(b.shape.size()),
                         b.shape.data(), b.data, b.memory});
    }
    std::vector<StitchoptBufferRef> buffers;
    for (const auto& [name, array] : outputs) {
      const Bound b = bind("output", name, array);
      // The C ABI checks a buffer's size; an array also has a dtype and a shape, which
      // must be the output's (an unknown name is the C ABI's error).
      for (const auto& [output, dtype, shape] : outputs_) {
        if (output == name && (dtype != b.dtype || shape != b.shape)) {
          throw nb::value_error(
              ("output \"" + name + "\": the array has ONNX dtype " + std::to_string(b.dtype) +
               " and " + std::to_string(b.shape.size()) + " dims; the output is ONNX dtype " +
               std::to_string(dtype) + " of shape " + shape_text(shape))
                  .c_str());
        }
      }
      buffers.push_back({name.c_str(), b.data, b.bytes, b.memory});
    }
    StitchoptStatus* status = nullptr;
    {
      nb::gil_scoped_release release;
      status = stitchopt_session_run_on(session_, reinterpret_cast<void*>(stream), tensors.data(),
                                        tensors.size(), buffers.data(), buffers.size());
    }
    check(status);
  }

 private:
  StitchoptSession* session_ = nullptr;
  TensorInfos inputs_;
  TensorInfos outputs_;
};

}  // namespace

NB_MODULE(_stitchopt, m) {
  m.doc() = "The C ABI of libstitchopt_runtime; use stitchopt.InferenceSession.";
  m.attr("api_version") = stitchopt_api_version();
  m.attr("version") = stitchopt_version();
  nb::class_<Session>(m, "Session")
      .def(nb::init<const std::string&, const std::string&, int, bool>(), nb::arg("out_dir"),
           nb::arg("backend") = "auto", nb::arg("device") = 0, nb::arg("cuda_graphs") = true)
      .def_prop_ro("backend", &Session::backend)
      .def_prop_ro("launch_mode", &Session::launch_mode)
      .def("inputs", &Session::inputs)
      .def("outputs", &Session::outputs)
      .def("run", &Session::run, nb::arg("inputs"), nb::arg("outputs"), nb::arg("stream") = 0)
      .def("close", &Session::close);
}

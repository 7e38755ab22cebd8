// The C ABI (runtime_stub/api/stitchopt/runtime.h) over runtime::Session: handles
// that own a Session, Status values turned into StitchoptStatus objects, and nothing
// thrown across the boundary (an exception escaping the runtime, std::bad_alloc
// included, becomes STITCHOPT_INTERNAL_ERROR).
#include "runtime_stub/api/stitchopt/runtime.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ir/core/dtype.h"
#include "runtime_stub/session.h"

struct StitchoptStatus {
  StitchoptCode code = STITCHOPT_OK;
  std::string message;
};

struct StitchoptSession {
  std::unique_ptr<stitch::runtime::Session> session;
};

namespace {

using stitch::Status;
using stitch::StatusCode;

StitchoptStatus* make_status(StitchoptCode code, std::string message) {
  StitchoptStatus* status = new (std::nothrow) StitchoptStatus;
  if (status == nullptr) return nullptr;  // out of memory: nothing better to say
  status->code = code;
  status->message = std::move(message);
  return status;
}

StitchoptStatus* from_status(const Status& status) {
  if (status.is_ok()) return nullptr;
  switch (status.code()) {
    case StatusCode::kInvalidInput:
    case StatusCode::kGateFailed:
      return make_status(STITCHOPT_INVALID_INPUT, status.message());
    case StatusCode::kUnavailable:
      return make_status(STITCHOPT_NO_DEVICE, status.message());
    default:
      return make_status(STITCHOPT_INTERNAL_ERROR, status.message());
  }
}

StitchoptStatus* invalid(const std::string& message) {
  return make_status(STITCHOPT_INVALID_INPUT, message);
}

// Runs `body` (returning StitchoptStatus*), turning an exception into a status.
template <class Body>
StitchoptStatus* guarded(Body body) {
  try {
    return body();
  } catch (const std::exception& error) {
    return make_status(STITCHOPT_INTERNAL_ERROR,
                       std::string("stitchopt runtime: internal error: ") + error.what());
  } catch (...) {
    return make_status(STITCHOPT_INTERNAL_ERROR, "stitchopt runtime: internal error");
  }
}

StitchoptStatus* describe(const std::vector<stitch::runtime::StepTensor>& tensors, size_t index,
                          const char* kind, StitchoptTensorInfo* info) {
  if (info == nullptr) return invalid(std::string("stitchopt_session_") + kind + ": info is NULL");
  if (index >= tensors.size()) {
    return invalid(std::string("stitchopt_session_") + kind + ": index " + std::to_string(index) +
                   " is past the model's " + std::to_string(tensors.size()) + " " + kind + "s");
  }
  const stitch::runtime::StepTensor& tensor = tensors[index];
  info->name = tensor.name.c_str();
  info->dtype = static_cast<int32_t>(tensor.type.dtype);
  info->rank = static_cast<int32_t>(tensor.type.dims.size());
  info->shape = tensor.type.dims.data();
  info->bytes = static_cast<size_t>(tensor.bytes);
  return nullptr;
}

// A StitchoptMemory as the runtime's Memory; *error is set for any other value.
stitch::runtime::Memory memory_of(int32_t memory, const char* kind, size_t index,
                                  StitchoptStatus** error) {
  if (memory == STITCHOPT_MEMORY_CUDA) return stitch::runtime::Memory::kDevice;
  if (memory != STITCHOPT_MEMORY_HOST) {
    *error = invalid(std::string("stitchopt_session_run: ") + kind + " " + std::to_string(index) +
                     " has memory " + std::to_string(memory) + ", which is no StitchoptMemory");
  }
  return stitch::runtime::Memory::kHost;
}

}  // namespace

extern "C" {

int32_t stitchopt_api_version(void) { return STITCHOPT_API_VERSION; }

const char* stitchopt_version(void) { return STITCH_VERSION; }

size_t stitchopt_dtype_size(int32_t dtype) {
  if (!stitch::ir::dtype_is_valid_onnx(dtype)) return 0;
  return static_cast<size_t>(stitch::ir::dtype_size(static_cast<stitch::ir::DType>(dtype)));
}

StitchoptCode stitchopt_status_code(const StitchoptStatus* status) {
  return status == nullptr ? STITCHOPT_OK : status->code;
}

const char* stitchopt_status_message(const StitchoptStatus* status) {
  return status == nullptr ? "" : status->message.c_str();
}

void stitchopt_status_free(StitchoptStatus* status) { delete status; }

void stitchopt_session_options_init(StitchoptSessionOptions* options) {
  if (options == nullptr) return;
  *options = StitchoptSessionOptions{};
  options->struct_size = sizeof(StitchoptSessionOptions);
  options->backend = STITCHOPT_BACKEND_AUTO;
  options->cuda_device = 0;
  options->cuda_graphs = 1;
}

StitchoptStatus* stitchopt_session_open_with(const char* out_dir,
                                             const StitchoptSessionOptions* options,
                                             StitchoptSession** session) {
  return guarded([&]() -> StitchoptStatus* {
    if (session == nullptr) return invalid("stitchopt_session_open: session is NULL");
    *session = nullptr;
    if (out_dir == nullptr) return invalid("stitchopt_session_open: out_dir is NULL");
    if (options == nullptr || options->struct_size < sizeof(StitchoptSessionOptions)) {
      return invalid(
          "stitchopt_session_open_with: options is NULL or was not filled by "
          "stitchopt_session_options_init");
    }
    stitch::runtime::SessionOptions session_options;
    switch (options->backend) {
      case STITCHOPT_BACKEND_AUTO:
        session_options.backend = stitch::runtime::SessionBackend::kAuto;
        break;
      case STITCHOPT_BACKEND_GPU:
        session_options.backend = stitch::runtime::SessionBackend::kGpu;
        break;
      case STITCHOPT_BACKEND_EMULATED:
        session_options.backend = stitch::runtime::SessionBackend::kEmulated;
        break;
      case STITCHOPT_BACKEND_REFERENCE:
        session_options.backend = stitch::runtime::SessionBackend::kReference;
        break;
      default:
        return invalid("stitchopt_session_open: backend " +
                       std::to_string(static_cast<int>(options->backend)) + " is none of 0-3");
    }
    if (options->cuda_device < 0) {
      return invalid("stitchopt_session_open: cuda_device " + std::to_string(options->cuda_device) +
                     " is negative");
    }
    session_options.gpu_device = options->cuda_device;
    session_options.cuda_graphs = options->cuda_graphs != 0;
    stitch::Result<std::unique_ptr<stitch::runtime::Session>> opened =
        stitch::runtime::Session::open(out_dir, session_options);
    if (!opened.is_ok()) return from_status(opened.status());
    *session = new StitchoptSession{std::move(opened).value()};
    return nullptr;
  });
}

StitchoptStatus* stitchopt_session_open(const char* out_dir, StitchoptBackend backend,
                                        StitchoptSession** session) {
  StitchoptSessionOptions options;
  stitchopt_session_options_init(&options);
  options.backend = backend;
  return stitchopt_session_open_with(out_dir, &options, session);
}

void stitchopt_session_close(StitchoptSession* session) { delete session; }

const char* stitchopt_session_backend(const StitchoptSession* session) {
  return session == nullptr ? "" : session->session->backend_name().c_str();
}

size_t stitchopt_session_input_count(const StitchoptSession* session) {
  return session == nullptr ? 0 : session->session->inputs().size();
}

size_t stitchopt_session_output_count(const StitchoptSession* session) {
  return session == nullptr ? 0 : session->session->outputs().size();
}

StitchoptStatus* stitchopt_session_input(const StitchoptSession* session, size_t index,
                                         StitchoptTensorInfo* info) {
  if (session == nullptr) return invalid("stitchopt_session_input: session is NULL");
  return describe(session->session->inputs(), index, "input", info);
}

StitchoptStatus* stitchopt_session_output(const StitchoptSession* session, size_t index,
                                          StitchoptTensorInfo* info) {
  if (session == nullptr) return invalid("stitchopt_session_output: session is NULL");
  return describe(session->session->outputs(), index, "output", info);
}

StitchoptStatus* stitchopt_session_run_on(StitchoptSession* session, void* cuda_stream,
                                          const StitchoptTensorRef* inputs, size_t input_count,
                                          const StitchoptBufferRef* outputs, size_t output_count) {
  return guarded([&]() -> StitchoptStatus* {
    if (session == nullptr) return invalid("stitchopt_session_run: session is NULL");
    if ((inputs == nullptr && input_count > 0) || (outputs == nullptr && output_count > 0)) {
      return invalid("stitchopt_session_run: a NULL array with a nonzero count");
    }
    std::vector<stitch::runtime::InputTensor> tensors;
    for (size_t i = 0; i < input_count; ++i) {
      const StitchoptTensorRef& input = inputs[i];
      if (input.name == nullptr || input.rank < 0 || (input.rank > 0 && input.shape == nullptr)) {
        return invalid("stitchopt_session_run: input " + std::to_string(i) +
                       " has a NULL name or shape, or a negative rank");
      }
      if (!stitch::ir::dtype_is_valid_onnx(input.dtype)) {
        return invalid("stitchopt_session_run: input " + std::to_string(i) + " has dtype " +
                       std::to_string(input.dtype) + ", which is no StitchoptDType");
      }
      StitchoptStatus* memory_error = nullptr;
      stitch::runtime::Memory memory = memory_of(input.memory, "input", i, &memory_error);
      if (memory_error != nullptr) return memory_error;
      stitch::runtime::InputTensor tensor;
      tensor.name = input.name;
      tensor.dtype = static_cast<stitch::ir::DType>(input.dtype);
      tensor.shape.assign(input.shape, input.shape + input.rank);
      tensor.data = input.data;
      tensor.memory = memory;
      tensors.push_back(std::move(tensor));
    }
    std::vector<stitch::runtime::OutputBuffer> buffers;
    for (size_t i = 0; i < output_count; ++i) {
      if (outputs[i].name == nullptr) {
        return invalid("stitchopt_session_run: output " + std::to_string(i) + " has a NULL name");
      }
      StitchoptStatus* memory_error = nullptr;
      stitch::runtime::Memory memory = memory_of(outputs[i].memory, "output", i, &memory_error);
      if (memory_error != nullptr) return memory_error;
      buffers.push_back({outputs[i].name, outputs[i].data, outputs[i].capacity_bytes, memory});
    }
    return from_status(session->session->run(tensors, buffers, cuda_stream));
  });
}

StitchoptStatus* stitchopt_session_run(StitchoptSession* session, const StitchoptTensor* inputs,
                                       size_t input_count, const StitchoptBuffer* outputs,
                                       size_t output_count) {
  return guarded([&]() -> StitchoptStatus* {
    std::vector<StitchoptTensorRef> tensors;
    for (size_t i = 0; inputs != nullptr && i < input_count; ++i) {
      const StitchoptTensor& input = inputs[i];
      tensors.push_back(
          {input.name, input.dtype, input.rank, input.shape, input.data, STITCHOPT_MEMORY_HOST});
    }
    std::vector<StitchoptBufferRef> buffers;
    for (size_t i = 0; outputs != nullptr && i < output_count; ++i) {
      buffers.push_back(
          {outputs[i].name, outputs[i].data, outputs[i].capacity_bytes, STITCHOPT_MEMORY_HOST});
    }
    return stitchopt_session_run_on(session, nullptr, inputs == nullptr ? nullptr : tensors.data(),
                                    input_count, outputs == nullptr ? nullptr : buffers.data(),
                                    output_count);
  });
}

size_t stitchopt_session_launch_mode(const StitchoptSession* session, char* text, size_t capacity) {
  const std::string mode = session == nullptr ? "" : session->session->launch_mode();
  if (text != nullptr && capacity > 0) {
    const size_t copied = std::min(mode.size(), capacity - 1);
    std::memcpy(text, mode.data(), copied);
    text[copied] = '\0';
  }
  return mode.size();
}

}  // extern "C"

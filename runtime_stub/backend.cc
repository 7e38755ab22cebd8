// What a backend without device memory or CUDA graphs answers (runtime_stub/backend.h).
#include "runtime_stub/backend.h"

namespace stitch::runtime {
namespace {

Status no_device_memory(const Backend& backend) {
  return Status::unavailable("device memory needs the GPU backend; this session runs on " +
                             backend.device_name() + ": pass host memory");
}

}  // namespace

Status Backend::check_device_memory(const void* /*pointer*/) const {
  return no_device_memory(*this);
}

Status Backend::copy_on_device(void* /*destination*/, const void* /*source*/, int64_t /*bytes*/) {
  return no_device_memory(*this);
}

Status Backend::wait_for_stream(void* /*stream*/) {
  return Status::unavailable("a CUDA stream needs the GPU backend; this session runs on " +
                             device_name());
}

Status Backend::signal_stream(void* stream) { return wait_for_stream(stream); }

Result<std::unique_ptr<CapturedWork>> Backend::capture(const std::function<Status()>& /*enqueue*/) {
  return Status::unavailable("CUDA graphs need the GPU backend; this session runs on " +
                             device_name());
}

}  // namespace stitch::runtime

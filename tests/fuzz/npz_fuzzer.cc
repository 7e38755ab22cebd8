// libFuzzer target for the .npz reader (runtime_stub/npz.h): any bytes must give
// arrays or an invalid_input Status, never a crash, an abort, an internal error or an
// allocation the file's size does not justify.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "runtime_stub/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  stitch::Result<stitch::runtime::NamedTensors> result =
      stitch::runtime::parse_npz(bytes, "fuzz.npz");
  if (!result.is_ok() && result.status().code() != stitch::StatusCode::kInvalidInput) {
    std::abort();  // an internal error on some input is a bug
  }
  return 0;
}

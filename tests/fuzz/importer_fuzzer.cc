// libFuzzer target for the ONNX importer: any bytes must give a model or an
// invalid_input Status, never a crash, an abort or an internal error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "onnx_import/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  stitch::onnx_import::ImportOptions options;
  // External data is looked up in a directory that does not exist, so the fuzzer
  // exercises the checks without reading the host's files.
  stitch::Result<stitch::ir::Model> result = stitch::onnx_import::import_model_from_bytes(
      bytes, "fuzz.onnx", "/nonexistent-stitch-fuzz-dir", options);
  if (!result.is_ok() && result.status().code() != stitch::StatusCode::kInvalidInput) {
    std::abort();  // an internal error on some input is a bug
  }
  return 0;
}

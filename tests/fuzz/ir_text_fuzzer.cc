// libFuzzer target for the textual IR parser (ninja's manifest_fuzzer.cc habit).
//
// Any input must parse or fail with a Status, never crash; when it parses, printing
// is a fixed point: print(parse(print(parse(t)))) == print(parse(t)). Seeds live in
// tests/fuzz/corpus/ir_text/. Run: ir_text_fuzzer tests/fuzz/corpus/ir_text
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/text/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  stitch::Result<stitch::ir::Model> model = stitch::ir::parse_model(text, "fuzz.ir");
  if (!model.is_ok()) return 0;
  std::string printed = stitch::ir::print_model(*model);
  stitch::Result<stitch::ir::Model> reparsed = stitch::ir::parse_model(printed, "printed.ir");
  if (!reparsed.is_ok()) {
    std::fprintf(stderr, "printed text does not parse: %s\n%s\n",
                 reparsed.status().message().c_str(), printed.c_str());
    std::abort();
  }
  std::string reprinted = stitch::ir::print_model(*reparsed);
  if (reprinted != printed) {
    std::fprintf(stderr, "print is not a fixed point:\n--- first\n%s\n--- second\n%s\n",
                 printed.c_str(), reprinted.c_str());
    std::abort();
  }
  return 0;
}

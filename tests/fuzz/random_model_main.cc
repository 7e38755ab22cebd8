// random_model: writes one random model of the generator (random_model.h) for the
// out-of-process model fuzzer (model_fuzzer.py). The decisions are 64 KiB of
// std::mt19937_64 output for the seed, so a seed names a model.
//
//   random_model [generator flags] --seed=N OUTPUT.onnx
// Exit codes: 0 written, 2 bad usage or unwritable output.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/random_model.h"

int main(int argc, char** argv) {
  stitch::fuzz::GeneratorOptions options;
  uint64_t seed = 0;
  std::string output;
  for (int i = 1; i < argc; ++i) {
    std::string_view argument = argv[i];
    if (argument.starts_with("--seed=")) {
      seed = std::stoull(std::string(argument.substr(7)));
    } else if (stitch::fuzz::parse_generator_flag(argument, &options)) {
      continue;
    } else if (!argument.starts_with("-") && output.empty()) {
      output = argument;
    } else {
      output.clear();
      break;
    }
  }
  if (output.empty()) {
    std::fprintf(stderr, "usage: random_model [flags] --seed=N OUTPUT.onnx\nflags:\n%s",
                 std::string(stitch::fuzz::generator_flags_help()).c_str());
    return 2;
  }
  std::mt19937_64 random(seed);
  std::vector<uint8_t> decisions(64 * 1024);
  for (uint8_t& byte : decisions) byte = static_cast<uint8_t>(random());
  FuzzedDataProvider data(decisions.data(), decisions.size());
  stitch::fuzz::GeneratedModel model = stitch::fuzz::generate_model(data, options);
  std::ofstream out(output, std::ios::binary);
  out << model.bytes;
  out.close();
  if (!out) {
    std::fprintf(stderr, "random_model: cannot write %s\n", output.c_str());
    return 2;
  }
  return 0;
}

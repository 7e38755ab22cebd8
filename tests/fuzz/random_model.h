// The random ONNX model generator shared by the graph fuzzer (graph_fuzzer.cc, in
// process) and the model fuzzer (model_fuzzer.py, through random_model_main.cc).
//
// Structure-aware: the bytes a fuzzer supplies are decisions read through
// FuzzedDataProvider, not a file format, so every input gives a well-formed model:
// registry ops with the arity, attributes and attribute-vs-input forms of the chosen
// opset (7..21), operands of fitting dtypes and broadcast-compatible shapes, dims 0
// and 1 among small sizes, initializers and Constant nodes (integer extremes among
// their values, so constant folding meets division by zero and INT64_MIN / -1), and
// names with hostile bytes (newline, "*/", "??/", a trailing backslash, NUL, invalid
// UTF-8, C identifiers of the generated code, names that collide once sanitized).
// Graph outputs and some intermediates declare the types ONNX defines, so the
// generator's idea of every shape is checked by whoever reads the model (our
// importer; ONNX's checker in model_fuzzer.py).
//
// Features that trip known bugs can be left out (GeneratorOptions), so that a long
// campaign keeps finding new ones; the defaults include everything. Name decisions
// read the same bytes whether names are hostile or plain, so `--plain-names` turns a
// model into its twin with the same graph and ASCII names (model_fuzzer.py feeds the
// twin to ONNX Runtime, whose Python API cannot name non-UTF-8 inputs).
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace stitch::fuzz {

struct GeneratorOptions {
  bool zero_dims = true;               // --no-zero-dims: no zero-size tensor, every dim >= 1
  bool integer_division = true;        // --no-int-div: Div and Mod on float tensors only
  bool hostile_names = true;           // --plain-names: names are [A-Za-z0-9_], node names unique
  bool extreme_fan_in = true;          // --no-wide: no variadic node with thousands of inputs
  bool special_floats = true;          // --no-special-floats: no NaN/Inf in constants
  std::set<std::string> excluded_ops;  // --exclude-ops=A,B: never generate these ops
};

// Reads one generator flag ("--no-zero-dims", "--exclude-ops=Softmax,Pad", ...) into
// `options`; false when `flag` is not a generator flag.
bool parse_generator_flag(std::string_view flag, GeneratorOptions* options);
// One line per flag, for --help texts.
std::string_view generator_flags_help();

struct GeneratedModel {
  std::string bytes;  // the serialized onnx.ModelProto
  // Every name the model holds that has a byte a generated source must not carry
  // raw (graph, value and node names, doc strings).
  std::vector<std::string> hostile_names;
};

GeneratedModel generate_model(FuzzedDataProvider& data, const GeneratorOptions& options);

// True for a name that generated source must not carry raw: one that could end a
// comment or a line, splice lines, or is not printable ASCII. (Dots, dashes, spaces
// and quotes are harmless in a comment; sanitized identifiers are checked by
// compiling.)
bool is_hostile_name(std::string_view name);

}  // namespace stitch::fuzz

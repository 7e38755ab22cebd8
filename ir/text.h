// The textual IR: a printer and a parser that round-trip exactly.
//
// parse(print(m)) gives a model that prints to the same text, byte for byte, and
// print(parse(t)) == t for any text the printer produced. Golden tests of passes are
// written in this form. Example:
//
//   stitchopt.ir 1
//   model ir_version=8 opsets={"":17} producer="pytorch" producer_version="2.1"
//   graph "main" (%x: f32[2,3], %w: f32[3] = dense<f32[3]>[1, 2, 3]) {
//     %y: f32[2,3] = Add(%x, %w) {name="add_0"}
//     %z: f32[2] = ReduceSum(%y) {name="sum", axes=[1], keepdims=0}
//     return %z
//   }
#pragma once

#include <string>
#include <string_view>

#include "ir/graph.h"
#include "ir/status.h"

namespace stitch::ir {

std::string print_model(const Model& model);
// `source_name` is used in error messages ("file.ir:3:14: expected ')'").
Result<Model> parse_model(std::string_view text, std::string_view source_name);

}  // namespace stitch::ir

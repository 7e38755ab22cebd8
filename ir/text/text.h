// The textual IR: a printer and a parser that round-trip exactly.
//
// print(parse(print(m))) == print(m) byte for byte, and parse(print(m)) restores the
// model: names, types, attributes (NaN bits included), constants, origin, opsets,
// metadata and functions. Dead nodes and values are not printed, so the parsed
// model is dead-free; node ids are the live nodes in id order (compact()'s ids), and
// value ids are the definition order of the text: graph inputs, initializers,
// undefined values, then node outputs in node order (the order an importer creates
// them; a model numbered otherwise comes back renumbered, links and names equal).
// Golden tests of passes are written in this form. Example:
//
//   stitchopt.ir 1
//   model ir_version=8 opsets={"":17} producer="pytorch" producer_version="2.1"
//   graph "main" (%x: f32[2,3], %w: f32[3] = dense<f32[3]>[1, 2, 3]) {
//     %b: f32[3] = dense<f32[3]>[0.5, -0, 1e-45]
//     %y: f32[2,3] = Add(%x, %w) {name="add_0"}
//     %z: f32[2] = ReduceSum(%y) {name="sum", axes=[1], keepdims=0}
//     %s: f32[1]!, _ = Split(%z, _) {opset=13, axis=0, origin=["Split_3"]}
//     return %z
//   }
//
// Grammar (whitespace free-form, `//` comments allowed):
//   header   'stitchopt.ir 1'
//   model    'model' ir_version=INT opsets={"domain":INT, ...} [producer=STR]
//            [producer_version=STR] [domain=STR] [model_version=INT] [doc=STR]
//            [metadata={"key":"value", ...}] [functions=[hex"..", ...]]
//            (opsets and metadata in model order; functions are serialized
//            FunctionProtos)
//   graph    'graph' STR [doc=STR] '(' input, ... ')' '{' statement* 'return'
//            [%v, ...] '}'
//   input    def ['=' tensor]      (an initializer that is also a graph input)
//   def      %name ':' type ['!']  ('!': Value::type_from_model)
//   type     f32[2,?,3] | f32[*] | i64[]     (to_string(TensorType))
//   statement
//            def '=' tensor                   an initializer (in model order)
//            def '=' 'undefined'              a live value nothing defines
//            outs '=' Op '(' in, ... ')' [fields]   a node (in id order)
//            Op '(' in, ... ')' [fields]      a node without outputs
//   outs/in  def / %name, or '_' for an omitted output / input
//   Op       an identifier, or a quoted string ("return", "My.Op")
//   fields   '{' field, ... '}' in the order name=STR, domain=STR, opset=INT
//            (only when it differs from the model's opset of the domain), the
//            attributes in node order, origin=[STR, ...] (omitted when it is
//            [name], or [] for an unnamed node: the origin of an imported node),
//            implicit=[%v, ...],
//            doc=STR. An attribute whose name is one of these keys or not an
//            identifier has a quoted key ("name"=3).
//   attribute value, then optional ' ref=STR' (ref_attr_name), ' doc=STR':
//            int 3 | float 1.0, 1e-07, inf, -inf, nan, nan(0x7fc00001) (shortest
//            exact text; always with '.' or 'e' so it stays a float) | string "..."
//            | ints [1, 2] | floats [1.0, 2.5] | strings ["a"] | tensors
//            [tensor, ...] | empty lists ints[] floats[] strings[] tensors[] |
//            tensor | graph<hex"..."> graphs<> sparse_tensor<> sparse_tensors<>
//            type_proto<> type_protos<> undefined<> (the serialized AttributeProto)
//   tensor   dense<f32[2,2]>[1, 2, 3, 4]: every element, exact (f16/bf16 as the
//            float they stand for, NaNs with other bits as nan(0x7e01), bool as
//            0/1, complex as real, imag pairs, strings as "..."); when the bytes do
//            not match the dims (or the dtype is undef): dense<f32[2]>hex"...".
//            Then optionally external(location=STR, offset=INT, length=INT).
//   STR      "..." with escapes \" \\ \n \t \xHH (bytes outside printable ASCII)
//   %name    bare when made of [A-Za-z0-9_./-], else quoted: %"onnx::Add_1".
//
// Parse errors are Status::invalid_input "source:line:col: message" and never
// abort, whatever the input (tests/fuzz/ir_text_fuzzer.cc checks it).
#pragma once

#include <string>
#include <string_view>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::ir {

std::string print_model(const Model& model);
// `source_name` is used in error messages ("file.ir:3:14: expected ')'").
Result<Model> parse_model(std::string_view text, std::string_view source_name);

}  // namespace stitch::ir

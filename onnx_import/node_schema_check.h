// A default-domain node against ONNX's operator schemas (DESIGN.md, Untrusted input):
// an op that is no ONNX operator at the model's opset, an attribute of the wrong
// type, an unknown attribute or a missing required one, or an int attribute naming a
// data type the op does not take there (LayerNormalization's stash_type, EyeLike's
// dtype, ...) is a bad model (exit 2), as it is for the ONNX checker and ONNX
// Runtime. Reading it anyway would compile something other than what the file says:
// Concat(axis=1.0) ran as axis 0 because an int attribute of the wrong type reads as
// absent.
//
// The schemas are Debian's ONNX 1.12, which knows opsets up to 17. For a node of a
// newer opset the schema of opset 17 decides the types of the attributes it knows,
// and attributes it does not know are accepted (opsets 18 to 21 added some); the
// operators added in opsets 18 to 20 are listed here with their first opset.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

#include "ir/core/status.h"

namespace stitch::onnx_import {

// ok, or an error "node "n" (Op): ...; how to fix" (without the model path).
Status check_node_schema(const onnx::NodeProto& node, int64_t opset, const std::string& label);

}  // namespace stitch::onnx_import

// Model-local functions whose calls lead back to themselves.
//
// A function may call other model-local functions, but no chain of calls may return
// to the function it starts in: expanding such a call never ends, and the ONNX
// checker and ONNX Runtime refuse the model. stitchopt keeps functions serialized
// (only `stitchopt run` expands its own), so without this check a self-recursive
// function compiled and was refused only at run time.
#pragma once

#include <onnx/onnx_pb.h>

#include "ir/core/status.h"

namespace stitch::onnx_import {

// OK, or the error naming the first cycle found (functions in model order, calls in
// node order; calls inside a body's subgraphs count), without the model path, e.g.
//   model-local function "cust.f" calls itself (2 calls: "cust.f" -> "cust.g" ->
//   "cust.f"); a function cannot be recursive: ...
// Any number of functions is searched without recursion.
Status check_function_recursion(const onnx::ModelProto& model);

}  // namespace stitch::onnx_import

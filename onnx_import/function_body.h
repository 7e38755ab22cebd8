// The body of a call to a model-local function as a model of its own.
//
// stitchopt's rewritten model calls one function per fused group (domain
// "stitchopt", emit/fused_model.h). To run such a node without its kernel (the
// runtime's reference path, its host fallback), the function's nodes are imported as
// the graph of a model whose inputs and outputs are the function's, typed with the
// call's values, so every shape is inferred by our rules like any model's.
#pragma once

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::onnx_import {

// `call` is a node of model.graph whose (domain, op_type) names one of
// model.functions. Graph inputs of the result are the function's inputs in order
// (named as in the function, typed as the call's inputs; an omitted input is an
// error), graph outputs the function's outputs (typed as the call's); an input whose
// argument is a constant of model.graph has that constant as its default. Errors
// name the node and the function.
Result<ir::Model> import_function_call(const ir::Model& model, const ir::Node& call);

}  // namespace stitch::onnx_import

// ONNX import: reads a .onnx file (with external data), validates it, specializes
// dynamic dimensions and builds an ir::Model with every shape inferred by our rules.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/core/graph.h"
#include "ir/core/status.h"

namespace stitch::onnx_import {

struct ImportOptions {
  // --input-shape NAME=1,128: replaces the dims of graph input NAME.
  std::map<std::string, std::vector<int64_t>> input_shapes;
  // Nodes in the "stitchopt" domain are refused (a model to compile has none; one
  // that has them is stitchopt's own output) unless this is set: `stitchopt run`
  // reads model.fused.onnx with it.
  bool allow_stitchopt_domain = false;
  // Graph-input dims left symbolic or unknown after --input-shape become symbolic dims
  // (ir::symbolic_dim, named by the model's dim_param or INPUT[AXIS]) instead of an
  // error, so that shape inference and simplification propagate them and the caller
  // can say which dims the model's shapes depend on (ir/shapes/symbolic_dims.h).
  // Unranked inputs are still an error.
  bool symbolic_dims = false;
};

// Accepts IR versions 3..10 and default-domain ("" or "ai.onnx") opsets 7..21; other
// domains pass through (their ops are Opaque). The model keeps its metadata, opset
// imports, model-local functions (serialized) and node order; nodes in the domain
// "ai.onnx" get domain "". Graph inputs that are also initializers stay graph inputs
// with the constant as default. Subgraph reads of outer values become
// Node::implicit_inputs. --input-shape is applied before ir::infer_shapes runs; it
// sets dynamic dims only (a static dim keeps its size), and dims that share a
// dim_param get one size. Refused besides malformed models: string tensors (nothing
// downstream computes with strings), model-local functions that call themselves,
// subgraphs nested past protobuf's recursion limit, and a path that is not a regular
// file (never read: a FIFO would block, /dev/zero never end).
//
// Every failure is Status::invalid_input with a one-line message that starts with the
// model path, names the node (`node "name" (OpType)`, `node <unnamed> (OpType)`),
// initializer or input concerned, and says how to fix it, e.g.
//   model.onnx: graph inputs have symbolic or unknown dims: input_ids [batch,seq],
//     attention_mask [batch,seq]; give them with --input-shape input_ids=1,128
//     --input-shape attention_mask=1,128
//   model.onnx: initializer "w" is stored in external file "w.bin", which does not
//     exist beside the model; copy it next to model.onnx
// (one line each; tests/onnx_import/importer_test.cc asserts every message).
Result<ir::Model> import_model(const std::string& path, const ImportOptions& options);

// The same from the bytes of the file at `path`, already read by the caller (who
// needs them for something else, e.g. a checksum). External data is looked up beside
// `path`.
Result<ir::Model> import_model_bytes(const std::string& bytes, const std::string& path,
                                     const ImportOptions& options);

// The same from bytes already in memory (fuzzing, tests). External data is looked up
// relative to `base_directory`; `path` is only used in messages.
Result<ir::Model> import_model_from_bytes(const std::string& bytes, const std::string& path,
                                          const std::string& base_directory,
                                          const ImportOptions& options);

}  // namespace stitch::onnx_import

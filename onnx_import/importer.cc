// ONNX import: ModelProto -> ir::Model, validated and shape-specialized.
//
// Steps, each a method of Importer below:
//  1. parse the protobuf (no size limit short of protobuf's 2 GiB; a failure caused
//     by subgraphs nested past its recursion limit is named as such);
//  2. check the IR version (3..10) and the default-domain opset (7..21);
//  3. copy the model's metadata and model-local functions (no chain of calls may
//     lead a function back to itself);
//  4. initializers in model order (external data read from beside the model);
//  5. graph inputs (an input that is also an initializer stays an input whose
//     default is the constant);
//  6. nodes in model order: every output name gets one value first, so duplicate
//     producers are found before any edge is made and nodes may be listed out of
//     topological order; then inputs are resolved, attributes converted and names
//     that subgraphs read from the outer graph become implicit inputs;
//  7. graph outputs, value_info types;
//  8. the graph must be acyclic;
//  9. --input-shape is applied (to dynamic dims only, one size per dim name) and
//     every graph input must then be static;
// 10. ir::infer_shapes; then no value may be a string tensor.
// Every failure is an invalid_input Status whose message starts with the model path.
#include "onnx_import/importer.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>

#include "ir/core/analysis.h"
#include "ir/core/edit_distance.h"
#include "ir/core/op_registry.h"
#include "ir/shapes/shape_inference.h"
#include "onnx_import/function_recursion.h"
#include "onnx_import/node_schema_check.h"
#include "onnx_import/subgraph_nesting.h"
#include "onnx_import/tensor_proto.h"
#include "support/escape.h"
#include "support/strings.h"

namespace stitch::onnx_import {
namespace {

constexpr int64_t kMinIrVersion = 3;
constexpr int64_t kMaxIrVersion = 10;
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 21;
// The largest tensor a model may hold (bytes): above any GPU's memory today.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;

// `node "name" (OpType)` or `node <unnamed> (OpType)`.
std::string node_label(const std::string& name, const std::string& op_type) {
  return "node " + (name.empty() ? std::string("<unnamed>") : support::quote_bounded(name)) + " (" +
         support::printable(op_type) + ")";
}

std::string node_label(const onnx::NodeProto& node) {
  return node_label(node.name(), node.op_type());
}

// The tensor type a TypeProto describes; nullopt for non-tensor types and element
// types we do not know. Symbolic and missing dims become kUnknownDim.
std::optional<ir::TensorType> type_from_proto(const onnx::TypeProto& proto) {
  if (!proto.has_tensor_type()) return std::nullopt;
  const onnx::TypeProto::Tensor& tensor = proto.tensor_type();
  if (!ir::dtype_is_valid_onnx(tensor.elem_type())) return std::nullopt;
  ir::TensorType type;
  type.dtype = static_cast<ir::DType>(tensor.elem_type());
  if (tensor.has_shape()) {
    type.has_shape = true;
    for (const onnx::TensorShapeProto::Dimension& dim : tensor.shape().dim()) {
      bool known = dim.has_dim_value() && dim.dim_value() >= 0;
      type.dims.push_back(known ? dim.dim_value() : ir::kUnknownDim);
    }
  }
  return type;
}

// The dims as the model wrote them, for messages: "[batch,128]", "[?,3]", "[*]".
std::vector<std::string> dim_texts(const onnx::TypeProto& proto) {
  const onnx::TypeProto::Tensor& tensor = proto.tensor_type();
  if (!tensor.has_shape()) return {"*"};
  std::vector<std::string> texts;
  for (const onnx::TensorShapeProto::Dimension& dim : tensor.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      texts.push_back(std::to_string(dim.dim_value()));
    } else if (dim.has_dim_param() && !dim.dim_param().empty()) {
      texts.push_back(dim.dim_param());
    } else {
      texts.push_back("?");
    }
  }
  return texts;
}

using support::join;

std::string dims_flag_text(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t dim : dims) parts.push_back(std::to_string(dim));
  return join(parts, ",");
}

// Names a subgraph (and the subgraphs nested in it) reads without defining them,
// in the order of first use. `scopes` are the names defined by the enclosing
// subgraphs, innermost last.
void collect_outer_references(const onnx::GraphProto& graph,
                              std::vector<const std::set<std::string>*>& scopes,
                              std::set<std::string>& seen, std::vector<std::string>& references) {
  std::set<std::string> defined;
  for (const onnx::ValueInfoProto& input : graph.input()) defined.insert(input.name());
  for (const onnx::TensorProto& initializer : graph.initializer()) {
    defined.insert(initializer.name());
  }
  for (const onnx::SparseTensorProto& sparse : graph.sparse_initializer()) {
    defined.insert(sparse.values().name());
  }
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& output : node.output()) defined.insert(output);
  }
  scopes.push_back(&defined);
  auto note = [&](const std::string& name) {
    if (name.empty()) return;
    for (const std::set<std::string>* scope : scopes) {
      if (scope->contains(name)) return;
    }
    if (seen.insert(name).second) references.push_back(name);
  };
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& input : node.input()) note(input);
    for (const onnx::AttributeProto& attribute : node.attribute()) {
      if (attribute.type() == onnx::AttributeProto::GRAPH) {
        collect_outer_references(attribute.g(), scopes, seen, references);
      } else if (attribute.type() == onnx::AttributeProto::GRAPHS) {
        for (const onnx::GraphProto& branch : attribute.graphs()) {
          collect_outer_references(branch, scopes, seen, references);
        }
      }
    }
  }
  for (const onnx::ValueInfoProto& output : graph.output()) note(output.name());
  scopes.pop_back();
}

class Importer {
 public:
  Importer(const onnx::ModelProto& proto, std::string path, std::string base_directory,
           const ImportOptions& options)
      : proto_(proto),
        path_(std::move(path)),
        context_{path_, std::move(base_directory)},
        options_(options) {}

  Result<ir::Model> run() {
    STITCH_RETURN_IF_ERROR(read_versions());
    read_metadata();
    STITCH_RETURN_IF_ERROR(check_function_recursion(proto_).with_prefix(path_ + ": "));
    STITCH_RETURN_IF_ERROR(read_initializers());
    STITCH_RETURN_IF_ERROR(read_inputs());
    STITCH_RETURN_IF_ERROR(read_nodes());
    STITCH_RETURN_IF_ERROR(read_outputs());
    read_value_info();
    Result<std::vector<ir::NodeId>> order = ir::topological_order(model_.graph);
    if (!order.is_ok()) return order.status().with_prefix(path_ + ": ");
    STITCH_RETURN_IF_ERROR(apply_input_shapes());
    STITCH_RETURN_IF_ERROR(check_static_inputs());
    ir::ShapeInferenceOptions inference_options;
    inference_options.model_path = path_;
    Status inferred = ir::infer_shapes(model_.graph, model_.default_opset(), inference_options);
    if (!inferred.is_ok()) {
      bool has_path = inferred.message().starts_with(path_ + ": ");
      return has_path ? inferred : inferred.with_prefix(path_ + ": ");
    }
    STITCH_RETURN_IF_ERROR(check_tensor_sizes());
    STITCH_RETURN_IF_ERROR(check_no_string_tensors());
    return std::move(model_);
  }

 private:
  // stitchopt compiles numeric tensors: no kernel, library call or runtime buffer
  // holds strings. A string tensor the model computes with is refused here, where its
  // type is known, rather than by `stitchopt run` after a compile that succeeded.
  Status check_no_string_tensors() const {
    const ir::Graph& graph = model_.graph;
    auto is_string = [&](ir::ValueId id) {
      return id != ir::kNoId && graph.value(id).type.dtype == ir::DType::kString;
    };
    auto refuse = [&](const std::string& what, ir::ValueId id) {
      const ir::Value& value = graph.value(id);
      return error(what + " " + support::quote_bounded(value.name) + " is a string tensor (" +
                   ir::to_string(value.type) +
                   "); stitchopt compiles models of numeric tensors: do the string work "
                   "(tokenizing, vocabulary lookups) outside the model, or split the graph "
                   "before it");
    };
    for (ir::ValueId id : graph.graph_inputs()) {
      if (is_string(id)) return refuse("graph input", id);
    }
    for (ir::NodeId id : graph.node_ids()) {
      const ir::Node& node = graph.node(id);
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        if (is_string(node.inputs[i])) {
          return refuse(node_label(node.name, node.op_type) + " input " + std::to_string(i),
                        node.inputs[i]);
        }
      }
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (is_string(node.outputs[i])) {
          return refuse(node_label(node.name, node.op_type) + " output " + std::to_string(i),
                        node.outputs[i]);
        }
      }
    }
    for (ir::ValueId id : graph.graph_outputs()) {
      if (is_string(id)) return refuse("graph output", id);
    }
    return Status::ok();
  }

  // Every tensor must fit a GPU: a dim of 10^9 in a declared shape, an --input-shape or
  // a ConstantOfShape would otherwise reach allocations and index arithmetic.
  Status check_tensor_sizes() const {
    const ir::Graph& graph = model_.graph;
    for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
      const ir::Value& value = graph.value(id);
      if (value.type.num_bytes() > kMaxTensorBytes) {
        return error("value " + support::quote(value.name) + " has type " +
                     ir::to_string(value.type) + ", more than the " +
                     std::to_string(kMaxTensorBytes >> 30) +
                     " GiB stitchopt accepts for one tensor; check its shape (and --input-shape)");
      }
    }
    return Status::ok();
  }

  Status error(const std::string& message) const {
    return Status::invalid_input(path_ + ": " + message);
  }

  Status read_versions() {
    if (proto_.ir_version() < kMinIrVersion || proto_.ir_version() > kMaxIrVersion) {
      return error("unsupported IR version " + std::to_string(proto_.ir_version()) +
                   "; stitchopt reads IR versions " + std::to_string(kMinIrVersion) + " to " +
                   std::to_string(kMaxIrVersion) +
                   ": re-export the model with an ONNX version that writes one of them");
    }
    std::set<std::string> domains;
    for (const onnx::OperatorSetIdProto& opset : proto_.opset_import()) {
      std::string domain = ir::is_default_domain(opset.domain()) ? "" : opset.domain();
      if (!domains.insert(domain).second) {
        return error("opset_import lists domain \"" + opset.domain() +
                     "\" more than once; keep one version per domain");
      }
      model_.opset_imports.push_back(ir::OpsetImport{opset.domain(), opset.version()});
      if (!domain.empty()) continue;
      if (opset.version() > kMaxOpset) {
        return error("default-domain opset " + std::to_string(opset.version()) + " is above " +
                     std::to_string(kMaxOpset) +
                     ", the newest stitchopt reads; convert the model to opset " +
                     std::to_string(kMaxOpset) + " or lower with onnx.version_converter");
      }
      if (opset.version() < kMinOpset) {
        return error("default-domain opset " + std::to_string(opset.version()) + " is below " +
                     std::to_string(kMinOpset) +
                     ", the oldest stitchopt reads; convert the model to opset " +
                     std::to_string(kMinOpset) + " or newer with onnx.version_converter");
      }
    }
    model_.ir_version = proto_.ir_version();
    return Status::ok();
  }

  void read_metadata() {
    model_.producer_name = proto_.producer_name();
    model_.producer_version = proto_.producer_version();
    model_.domain = proto_.domain();
    model_.model_version = proto_.model_version();
    model_.doc_string = proto_.doc_string();
    for (const onnx::StringStringEntryProto& entry : proto_.metadata_props()) {
      model_.metadata_props.emplace_back(entry.key(), entry.value());
    }
    for (const onnx::FunctionProto& function : proto_.functions()) {
      model_.functions.push_back(function.SerializeAsString());
    }
    model_.graph.name = proto_.graph().name();
    model_.graph.doc_string = proto_.graph().doc_string();
  }

  Status read_initializers() {
    ir::Graph& graph = model_.graph;
    for (const onnx::SparseTensorProto& sparse : proto_.graph().sparse_initializer()) {
      return error("sparse initializer \"" + sparse.values().name() +
                   "\" is not supported; convert it to a dense initializer");
    }
    for (const onnx::TensorProto& initializer : proto_.graph().initializer()) {
      std::string what = "initializer \"" + initializer.name() + "\"";
      if (initializer.name().empty()) {
        return error("an initializer has no name; give every initializer a unique name");
      }
      if (graph.find_value(initializer.name())) {
        return error(what + " is listed twice; give every initializer a unique name");
      }
      Result<ir::Tensor> tensor = tensor_from_proto(initializer, what, context_);
      if (!tensor.is_ok()) return tensor.status().with_prefix(path_ + ": ");
      graph.add_initializer(initializer.name(), std::move(tensor).value());
    }
    return Status::ok();
  }

  Status read_inputs() {
    ir::Graph& graph = model_.graph;
    for (const onnx::ValueInfoProto& input : proto_.graph().input()) {
      std::string what = "graph input \"" + input.name() + "\"";
      if (input.name().empty()) {
        return error("a graph input has no name; give every graph input a unique name");
      }
      std::optional<ir::ValueId> existing = graph.find_value(input.name());
      if (existing && graph.value(*existing).is_graph_input) {
        return error(what + " is listed twice; give every graph input a unique name");
      }
      if (existing) {  // an initializer: the constant is the input's default
        graph.add_graph_input(*existing);
        continue;
      }
      if (!input.type().has_tensor_type()) {
        return error(what +
                     " is not a tensor; stitchopt compiles models whose graph inputs "
                     "are tensors: re-export the model with tensor inputs");
      }
      for (const onnx::TensorShapeProto::Dimension& dim :
           input.type().tensor_type().shape().dim()) {
        if (dim.has_dim_value() && dim.dim_value() < 0) {
          return error(what + " declares the dim " + std::to_string(dim.dim_value()) +
                       ", which is negative; fix its shape (a dynamic dim is a name or left "
                       "empty) or re-export the model");
        }
      }
      std::optional<ir::TensorType> type = type_from_proto(input.type());
      if (!type) {
        return error(what + " has element type " +
                     std::to_string(input.type().tensor_type().elem_type()) +
                     ", which stitchopt does not support; re-export the model with a standard "
                     "element type");
      }
      ir::ValueId id = graph.add_value(input.name(), *type);
      graph.value(id).type_from_model = true;
      graph.add_graph_input(id);
      input_dim_texts_.emplace(id, dim_texts(input.type()));
    }
    return Status::ok();
  }

  Status read_nodes() {
    ir::Graph& graph = model_.graph;
    const auto& nodes = proto_.graph().node();
    // Pass 1: one value per output name, so every producer is known before any edge.
    std::vector<int> producer_index;  // by value id - first_output_id
    ir::ValueId first_output_id = graph.value_capacity();
    for (int index = 0; index < nodes.size(); ++index) {
      const onnx::NodeProto& node = nodes[index];
      for (const std::string& output : node.output()) {
        if (output.empty()) continue;
        std::optional<ir::ValueId> existing = graph.find_value(output);
        if (!existing) {
          graph.add_value(output, ir::TensorType{});
          producer_index.push_back(index);
          continue;
        }
        const ir::Value& value = graph.value(*existing);
        if (value.is_graph_input) {
          return error(node_label(node) + " outputs \"" + output +
                       "\", which is already a graph input; rename the node output");
        }
        if (value.is_initializer()) {
          return error(node_label(node) + " outputs \"" + output +
                       "\", which is already an initializer; rename the node output");
        }
        const onnx::NodeProto& first = nodes[producer_index[*existing - first_output_id]];
        return error(node_label(node) + " outputs \"" + output + "\", which " + node_label(first) +
                     " already produces; give every node output a unique name");
      }
    }
    // Pass 2: the nodes themselves.
    int64_t default_opset = model_.default_opset();
    for (const onnx::NodeProto& node : nodes) {
      std::vector<ir::ValueId> inputs;
      for (const std::string& input : node.input()) {
        if (input.empty()) {
          inputs.push_back(ir::kNoId);
          continue;
        }
        std::optional<ir::ValueId> found = graph.find_value(input);
        if (!found) {
          return error(node_label(node) + " reads \"" + input +
                       "\", which is not a graph input, initializer or node output; fix the "
                       "name or add the node that produces it");
        }
        inputs.push_back(*found);
      }
      std::vector<ir::ValueId> outputs;
      for (const std::string& output : node.output()) {
        outputs.push_back(output.empty() ? ir::kNoId : *graph.find_value(output));
      }
      std::string domain = ir::is_default_domain(node.domain()) ? "" : node.domain();
      if (domain.empty() && default_opset == 0) {
        return error(node_label(node) +
                     " is in the default ONNX domain, but the model imports no opset for it; "
                     "add an opset_import for domain \"\" with a version from " +
                     std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
      }
      if (domain.empty()) {
        STITCH_RETURN_IF_ERROR(
            check_node_schema(node, default_opset, node_label(node)).with_prefix(path_ + ": "));
      }
      if (domain == "stitchopt" && !options_.allow_stitchopt_domain) {
        return error(node_label(node) +
                     " is in the domain \"stitchopt\", which stitchopt keeps for the fused "
                     "nodes it writes: compile the original model, not a stitchopt output");
      }
      std::vector<ir::Attribute> attributes;
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        Result<ir::Attribute> converted = attribute_from_proto(attribute, node);
        if (!converted.is_ok()) return converted.status();
        attributes.push_back(std::move(converted).value());
      }
      std::vector<std::string> references;
      std::set<std::string> seen;
      for (const onnx::AttributeProto& attribute : node.attribute()) {
        std::vector<const std::set<std::string>*> scopes;
        if (attribute.type() == onnx::AttributeProto::GRAPH) {
          collect_outer_references(attribute.g(), scopes, seen, references);
        } else if (attribute.type() == onnx::AttributeProto::GRAPHS) {
          for (const onnx::GraphProto& branch : attribute.graphs()) {
            collect_outer_references(branch, scopes, seen, references);
          }
        }
      }
      std::vector<ir::ValueId> captured;
      for (const std::string& reference : references) {
        std::optional<ir::ValueId> found = graph.find_value(reference);
        if (!found) {
          return error(node_label(node) + " reads \"" + reference +
                       "\" in a subgraph, which is not a graph input, initializer or node "
                       "output of any enclosing graph; fix the name or add the node that "
                       "produces it");
        }
        captured.push_back(*found);
      }
      ir::NodeId id = graph.add_node(node.op_type(), std::move(inputs), std::move(outputs),
                                     std::move(domain), node.name());
      ir::Node& added = graph.node(id);
      added.opset = model_.opset_of(added.domain);
      added.attributes = std::move(attributes);
      added.doc_string = node.doc_string();
      added.origin = {node.name()};
      for (ir::ValueId value : captured) graph.add_implicit_input(id, value);
    }
    return Status::ok();
  }

  Result<ir::Attribute> attribute_from_proto(const onnx::AttributeProto& proto,
                                             const onnx::NodeProto& node) const {
    ir::Attribute attribute;
    attribute.name = proto.name();
    attribute.ref_attr_name = proto.ref_attr_name();
    attribute.doc_string = proto.doc_string();
    attribute.kind = static_cast<ir::AttributeKind>(proto.type());
    std::string what = node_label(node) + " attribute \"" + proto.name() + "\"";
    switch (proto.type()) {
      case onnx::AttributeProto::FLOAT:
        attribute.f = proto.f();
        break;
      case onnx::AttributeProto::INT:
        attribute.i = proto.i();
        break;
      case onnx::AttributeProto::STRING:
        attribute.s = proto.s();
        break;
      case onnx::AttributeProto::FLOATS:
        attribute.floats.assign(proto.floats().begin(), proto.floats().end());
        break;
      case onnx::AttributeProto::INTS:
        attribute.ints.assign(proto.ints().begin(), proto.ints().end());
        break;
      case onnx::AttributeProto::STRINGS:
        attribute.strings.assign(proto.strings().begin(), proto.strings().end());
        break;
      case onnx::AttributeProto::TENSOR: {
        Result<ir::Tensor> tensor = tensor_from_proto(proto.t(), what, context_);
        if (!tensor.is_ok()) return tensor.status().with_prefix(path_ + ": ");
        attribute.tensor = std::make_shared<const ir::Tensor>(std::move(tensor).value());
        break;
      }
      case onnx::AttributeProto::TENSORS:
        for (const onnx::TensorProto& element : proto.tensors()) {
          Result<ir::Tensor> tensor = tensor_from_proto(element, what, context_);
          if (!tensor.is_ok()) return tensor.status().with_prefix(path_ + ": ");
          attribute.tensors.push_back(std::move(tensor).value());
        }
        break;
      case onnx::AttributeProto::GRAPH:
      case onnx::AttributeProto::GRAPHS:
      case onnx::AttributeProto::SPARSE_TENSOR:
      case onnx::AttributeProto::SPARSE_TENSORS:
      case onnx::AttributeProto::TYPE_PROTO:
      case onnx::AttributeProto::TYPE_PROTOS:
        attribute.opaque_proto = proto.SerializeAsString();
        break;
      default:
        return error(what +
                     " has no valid type; re-export the model (attributes need a type "
                     "since IR version 2)");
    }
    return attribute;
  }

  Status read_outputs() {
    ir::Graph& graph = model_.graph;
    for (const onnx::ValueInfoProto& output : proto_.graph().output()) {
      std::optional<ir::ValueId> found = graph.find_value(output.name());
      if (output.name().empty() || !found) {
        return error("graph output \"" + output.name() +
                     "\" is never produced (it is not a graph input, initializer or node "
                     "output); fix the output name or add the node that produces it");
      }
      graph.add_graph_output(*found);
      set_model_type(*found, output.type());
    }
    return Status::ok();
  }

  void read_value_info() {
    for (const onnx::ValueInfoProto& info : proto_.graph().value_info()) {
      // value_info naming no value is stale metadata some exporters leave: ignored.
      std::optional<ir::ValueId> found = model_.graph.find_value(info.name());
      if (found) set_model_type(*found, info.type());
    }
  }

  // Types the model states for node outputs; inputs and initializers keep theirs.
  void set_model_type(ir::ValueId id, const onnx::TypeProto& proto) {
    ir::Value& value = model_.graph.value(id);
    if (value.is_graph_input || value.is_initializer()) return;
    std::optional<ir::TensorType> type = type_from_proto(proto);
    if (!type) return;
    value.type = *type;
    value.type_from_model = true;
  }

  // The non-initializer graph inputs: those --input-shape may name.
  std::vector<ir::ValueId> runtime_inputs() const {
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId id : model_.graph.graph_inputs()) {
      if (!model_.graph.value(id).is_initializer()) inputs.push_back(id);
    }
    return inputs;
  }

  // --input-shape sets the dynamic dims of graph inputs. A dim the model declares
  // static keeps its size (a different one would contradict every shape the model
  // derived from it), and the dims that share a name (dim_param "batch_size" in
  // input_ids and attention_mask) get one size.
  Status apply_input_shapes() {
    ir::Graph& graph = model_.graph;
    struct NamedDim {
      std::string flag;
      size_t axis;
      int64_t size;
    };
    std::map<std::string, NamedDim> named_dims;
    for (const auto& [name, dims] : options_.input_shapes) {
      std::string flag = "--input-shape " + name + "=" + dims_flag_text(dims);
      std::optional<ir::ValueId> found = graph.find_value(name);
      if (!found || !graph.value(*found).is_graph_input) {
        std::vector<ir::ValueId> candidates = runtime_inputs();
        if (candidates.empty()) {
          return error(flag + " names no graph input, and the model has none; remove the flag");
        }
        ir::ValueId closest = candidates.front();
        size_t best = SIZE_MAX;
        for (ir::ValueId candidate : candidates) {
          size_t distance = ir::edit_distance(name, graph.value(candidate).name);
          if (distance < best) {
            best = distance;
            closest = candidate;
          }
        }
        return error(flag + " names no graph input; did you mean --input-shape " +
                     graph.value(closest).name + "=" + dims_flag_text(dims) + "?");
      }
      ir::Value& input = graph.value(*found);
      if (input.is_initializer()) {
        return error(flag + " names \"" + name + "\", an initializer with fixed shape " +
                     ir::to_string(input.type) + "; remove the flag");
      }
      for (int64_t dim : dims) {
        if (dim < 0) return error(flag + " has a negative dim; give dims of 0 or more");
      }
      const std::vector<std::string>& texts = input_dim_texts_.at(*found);
      if (input.type.has_shape && input.type.dims.size() != dims.size()) {
        return error(flag + " gives " + std::to_string(dims.size()) + " dims, but graph input \"" +
                     name + "\" has rank " + std::to_string(texts.size()) + " [" +
                     join(texts, ",") + "]; give " + std::to_string(texts.size()) + " dims");
      }
      for (size_t axis = 0; axis < dims.size() && input.type.has_shape; ++axis) {
        const int64_t declared = input.type.dims[axis];
        if (declared >= 0 && declared != dims[axis]) {
          return error(flag + " sets dim " + std::to_string(axis) + " of graph input \"" + name +
                       "\" to " + std::to_string(dims[axis]) + ", but the model declares it [" +
                       join(texts, ",") + "], static " + std::to_string(declared) +
                       " there; --input-shape only sets dynamic dims: give " +
                       std::to_string(declared) +
                       " for that dim, or re-export the model with it dynamic");
        }
        if (declared >= 0 || texts[axis] == "?") continue;
        auto [shared, first] = named_dims.emplace(texts[axis], NamedDim{flag, axis, dims[axis]});
        if (!first && shared->second.size != dims[axis]) {
          return error(shared->second.flag + " and " + flag + " give the dim \"" + texts[axis] +
                       "\" the sizes " + std::to_string(shared->second.size) + " and " +
                       std::to_string(dims[axis]) +
                       (shared->second.axis == axis
                            ? " (dim " + std::to_string(axis) + " of both)"
                            : " (dims " + std::to_string(shared->second.axis) + " and " +
                                  std::to_string(axis) + ")") +
                       "; the model declares them one dim: give it the same size in every "
                       "--input-shape");
        }
      }
      input.type = ir::TensorType::make(input.type.dtype, dims);
    }
    return Status::ok();
  }

  // With ImportOptions::symbolic_dims, the dims --input-shape left open become
  // symbols (ir::symbolic_dim): a dim_param names one (the same name, the same
  // symbol), an unnamed dim is INPUT[AXIS]. Unranked inputs cannot be.
  bool make_symbolic_inputs() {
    ir::Graph& graph = model_.graph;
    for (ir::ValueId id : runtime_inputs()) {
      const ir::Value& input = graph.value(id);
      if (!input.type.is_static() && !input.type.has_shape) return false;
    }
    for (ir::ValueId id : runtime_inputs()) {
      ir::Value& input = graph.value(id);
      const std::vector<std::string>& texts = input_dim_texts_.at(id);
      for (size_t axis = 0; axis < input.type.dims.size(); ++axis) {
        if (input.type.dims[axis] >= 0) continue;
        std::string name =
            texts[axis] != "?" ? texts[axis] : input.name + "[" + std::to_string(axis) + "]";
        auto found = std::find(graph.dim_symbols.begin(), graph.dim_symbols.end(), name);
        size_t index = static_cast<size_t>(found - graph.dim_symbols.begin());
        if (found == graph.dim_symbols.end()) graph.dim_symbols.push_back(std::move(name));
        input.type.dims[axis] = ir::symbolic_dim(index);
      }
    }
    return true;
  }

  Status check_static_inputs() {
    if (options_.symbolic_dims && make_symbolic_inputs()) return check_input_sizes();
    std::vector<std::string> listed;
    std::vector<std::string> flags;
    for (ir::ValueId id : runtime_inputs()) {
      const ir::Value& input = model_.graph.value(id);
      if (input.type.is_static()) continue;
      const std::vector<std::string>& texts = input_dim_texts_.at(id);
      listed.push_back(input.name + " [" + join(texts, ",") + "]");
      std::string example;
      if (!input.type.has_shape) {
        example = "<dims>";
      } else {
        std::vector<std::string> parts;
        for (size_t i = 0; i < input.type.dims.size(); ++i) {
          int64_t dim = input.type.dims[i];
          parts.push_back(dim >= 0 ? std::to_string(dim) : i == 0 ? "1" : "128");
        }
        example = join(parts, ",");
      }
      flags.push_back("--input-shape " + input.name + "=" + example);
    }
    if (listed.empty()) return check_input_sizes();
    return error("graph inputs have symbolic or unknown dims: " + join(listed, ", ") +
                 "; give them with " + join(flags, " "));
  }

  // Byte sizes of graph inputs must fit in int64 (16 bytes: the widest element), so
  // shape rules and cost models can multiply dims without overflow.
  Status check_input_sizes() const {
    for (ir::ValueId id : runtime_inputs()) {
      const ir::Value& input = model_.graph.value(id);
      int64_t bytes = 16;
      bool overflow = false;
      for (int64_t dim : input.type.dims) {
        if (dim >= 0) overflow = overflow || __builtin_mul_overflow(bytes, dim, &bytes);
      }
      if (overflow) {
        return error("graph input \"" + input.name + "\" has dims " + ir::to_string(input.type) +
                     " too large to address; give smaller dims with --input-shape " + input.name +
                     "=...");
      }
    }
    return Status::ok();
  }

  const onnx::ModelProto& proto_;
  std::string path_;
  TensorReadContext context_;
  const ImportOptions& options_;
  ir::Model model_;
  // The dims of each non-initializer graph input as the model wrote them.
  std::map<ir::ValueId, std::vector<std::string>> input_dim_texts_;
};

// Where external data files of the model at `path` live.
std::string model_directory(const std::string& path) {
  std::string directory = std::filesystem::path(path).parent_path().string();
  return directory.empty() ? "." : directory;
}

Status parse_error(const std::string& path) {
  return Status::invalid_input(path +
                               ": not a valid ONNX model (the protobuf could not be parsed: the "
                               "file is truncated or not a .onnx file); check the path or "
                               "re-export the model");
}

// Why protobuf could not parse `bytes`: subgraphs nested past its recursion limit
// (subgraph_nesting.h), or else parse_error's guess.
Status unparsable(const std::string& path, std::string_view bytes) {
  // Inside its innermost graph a model nests up to 5 more messages: value_info ->
  // type -> tensor_type -> shape -> dim. Each subgraph costs 3 (graph -> node ->
  // attribute), the main graph 1.
  constexpr int64_t kLevelsInsideAGraph = 5;
  const int64_t limit = google::protobuf::io::CodedInputStream::GetDefaultRecursionLimit();
  std::optional<SubgraphNesting> nesting = measure_subgraph_nesting(bytes);
  if (!nesting || nesting->message_depth + kLevelsInsideAGraph <= limit) return parse_error(path);
  return Status::invalid_input(
      path + ": the model nests subgraphs " + std::to_string(nesting->subgraphs) +
      " deep (If, Loop or Scan bodies inside each other), more than the " +
      std::to_string((limit - 1 - kLevelsInsideAGraph) / 3) +
      " that stitchopt's protobuf parser reads (it stops at " + std::to_string(limit) +
      " nested messages); flatten the nested control flow or re-export the model");
}

// `bytes` gives the serialized model again when the parse fails, to say why.
Result<ir::Model> parse_and_import(google::protobuf::io::ZeroCopyInputStream& stream,
                                   const std::string& path, const std::string& base_directory,
                                   const ImportOptions& options,
                                   const std::function<std::string_view()>& bytes) {
  onnx::ModelProto proto;
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return unparsable(path, bytes());
  }
  if (coded.CurrentPosition() == 0) {
    return Status::invalid_input(path +
                                 ": the file is empty, not an ONNX model; check the path "
                                 "or re-export the model");
  }
  if (!proto.has_graph()) {
    if (!proto.has_ir_version()) return parse_error(path);
    return Status::invalid_input(path + ": the model has no graph; re-export the model");
  }
  return Importer(proto, path, base_directory, options).run();
}

}  // namespace

Result<ir::Model> import_model(const std::string& path, const ImportOptions& options) {
  // O_NONBLOCK: opening a FIFO returns at once (and fstat then refuses it, as it
  // refuses a directory or a device such as /dev/zero, whose read never ends).
  int descriptor = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (descriptor < 0) {
    return Status::invalid_input(path + ": cannot open the model (" + std::strerror(errno) +
                                 "); check the path");
  }
  struct stat info {};
  if (::fstat(descriptor, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(descriptor);
    return Status::invalid_input(path +
                                 ": is not a regular file (a directory, a FIFO or a device); "
                                 "give the model file's path");
  }
  google::protobuf::io::FileInputStream stream(descriptor);
  stream.SetCloseOnDelete(true);
  std::string reread;
  return parse_and_import(stream, path, model_directory(path), options, [&]() -> std::string_view {
    if (info.st_size > INT_MAX) return {};  // past protobuf's limit: not worth reading again
    std::ifstream file(path, std::ios::binary);
    reread.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    return reread;
  });
}

Result<ir::Model> import_model_bytes(const std::string& bytes, const std::string& path,
                                     const ImportOptions& options) {
  return import_model_from_bytes(bytes, path, model_directory(path), options);
}

Result<ir::Model> import_model_from_bytes(const std::string& bytes, const std::string& path,
                                          const std::string& base_directory,
                                          const ImportOptions& options) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) return parse_error(path);
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  return parse_and_import(stream, path, base_directory, options,
                          [&]() -> std::string_view { return bytes; });
}

}  // namespace stitch::onnx_import

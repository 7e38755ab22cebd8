// The rewritten model: fused groups as "stitchopt" nodes with model-local functions.
#include "emit/fused_model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "emit/group_boundary.h"
#include "emit/onnx_proto_convert.h"
#include "ir/analysis.h"

namespace stitch::emit {
namespace {

// The group's function with canonical value names, serialized deterministically.
Result<std::string> function_bytes(const ir::Model& model, const GroupBoundary& boundary,
                                   const std::string& kernel_name,
                                   const std::vector<ir::Attribute>& call_attributes) {
  const ir::Graph& graph = model.graph;
  std::unordered_map<ir::ValueId, std::string> names;
  onnx::FunctionProto function;
  function.set_name(kernel_name);
  function.set_domain(kFusedDomain);
  for (size_t i = 0; i < boundary.inputs.size(); ++i) {
    names[boundary.inputs[i]] = "x" + std::to_string(i);
    function.add_input(names[boundary.inputs[i]]);
  }
  for (size_t i = 0; i < boundary.outputs.size(); ++i) {
    names[boundary.outputs[i]] = "y" + std::to_string(i);
    function.add_output(names[boundary.outputs[i]]);
  }
  int64_t internal = 0;
  auto value_name = [&](ir::ValueId id) -> std::string {
    if (id == ir::kNoId) return "";
    auto [it, inserted] = names.try_emplace(id, "");
    if (inserted) it->second = "t" + std::to_string(internal++);
    return it->second;
  };
  for (ir::NodeId id : boundary.ordered_nodes) {
    const ir::Node& node = graph.node(id);
    if (!node.implicit_inputs.empty()) {
      return Status::internal("node " + node.display_name() +
                              " reads values through a subgraph and cannot be fused");
    }
    onnx::NodeProto* written = function.add_node();
    STITCH_RETURN_IF_ERROR(node_to_proto(node, value_name, written));
    written->clear_name();  // names differ between identical groups
    written->clear_doc_string();
  }
  // The fused node's own attributes (kernel, launch data) are declared so checkers
  // accept them on the call; the body does not read them.
  for (const ir::Attribute& attribute : call_attributes) function.add_attribute(attribute.name);
  for (const ir::OpsetImport& opset : model.opset_imports) {
    if (opset.domain == kFusedDomain) continue;
    onnx::OperatorSetIdProto* imported = function.add_opset_import();
    imported->set_domain(opset.domain);
    imported->set_version(opset.version);
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    function.SerializeToCodedStream(&coded);
  }
  return bytes;
}

std::string boundary_type_key(const ir::Graph& graph, const GroupBoundary& boundary) {
  std::string key;
  for (ir::ValueId id : boundary.inputs) key += ir::to_string(graph.value(id).type) + ";";
  key += "->";
  for (ir::ValueId id : boundary.outputs) key += ir::to_string(graph.value(id).type) + ";";
  return key;
}

}  // namespace

Result<FusedModel> build_fused_model(const ir::Model& model, const std::vector<FusedGroup>& groups) {
  FusedModel fused;
  fused.model = model;
  ir::Graph& graph = fused.model.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, ir::topological_order(graph));
  std::vector<int32_t> position(static_cast<size_t>(graph.node_capacity()), 0);
  for (size_t i = 0; i < order.size(); ++i) position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);

  // Function bytes are computed with each group's own kernel name first, so that
  // identical groups can be found; the shared name is then substituted.
  // Kernel names must not collide with functions the model already has (a model
  // that stitchopt already rewrote carries stitchopt functions of its own).
  std::set<std::string> taken;
  for (const std::string& bytes : model.functions) {
    onnx::FunctionProto existing;
    if (existing.ParseFromString(bytes) && existing.domain() == kFusedDomain) {
      taken.insert(existing.name());
    }
  }
  std::map<std::string, std::string> kernel_by_signature;  // signature -> kernel name
  std::vector<GroupBoundary> boundaries;
  for (const FusedGroup& group : groups) {
    GroupBoundary boundary = group_boundary(graph, group.nodes, position);
    STITCH_ASSIGN_OR_RETURN(std::string body,
                            function_bytes(model, boundary, "k", group.attributes));
    std::string signature = body + "|" + boundary_type_key(graph, boundary);
    std::string kernel_name = group.kernel_name;
    while (taken.contains(kernel_name)) kernel_name += "_";
    auto [it, inserted] = kernel_by_signature.try_emplace(signature, kernel_name);
    if (inserted) {
      taken.insert(kernel_name);
      STITCH_ASSIGN_OR_RETURN(std::string named,
                              function_bytes(model, boundary, kernel_name, group.attributes));
      fused.model.functions.push_back(std::move(named));
      ++fused.distinct_kernels;
    }
    fused.kernel_names.push_back(it->second);
    boundaries.push_back(std::move(boundary));
  }

  for (size_t index = 0; index < groups.size(); ++index) {
    const GroupBoundary& boundary = boundaries[index];
    std::vector<std::string> origin;
    for (ir::NodeId id : boundary.ordered_nodes) {
      for (const std::string& name : graph.node(id).origin) {
        if (std::find(origin.begin(), origin.end(), name) == origin.end()) origin.push_back(name);
      }
    }
    for (ir::NodeId id : boundary.ordered_nodes) graph.remove_node(id);
    ir::NodeId fused_node = graph.add_node(fused.kernel_names[index], boundary.inputs,
                                           boundary.outputs, kFusedDomain,
                                           groups[index].kernel_name + "_" + std::to_string(index));
    ir::Node& node = graph.node(fused_node);
    node.opset = 1;
    node.attributes = groups[index].attributes;
    node.origin = std::move(origin);
  }
  // Values that only lived inside a group have neither producer nor users now.
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    const ir::Value& value = graph.value(id);
    if (!value.dead && value.producer == ir::kNoId && value.users.empty() && !value.is_graph_input &&
        !value.is_graph_output && !value.is_initializer()) {
      graph.remove_value(id);
    }
  }
  graph.compact();
  if (model.opset_of(kFusedDomain) == 0) {
    fused.model.opset_imports.push_back(ir::OpsetImport{kFusedDomain, 1});
  }
  return fused;
}

}  // namespace stitch::emit

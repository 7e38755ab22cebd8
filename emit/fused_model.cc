// The rewritten model: fused groups as "stitchopt" nodes with model-local functions.
#include "emit/fused_model.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "emit/canonical_group.h"
#include "emit/group_boundary.h"
#include "emit/kernel_name.h"
#include "emit/onnx_proto_convert.h"

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
  for (size_t index = 0; index < boundary.ordered_nodes.size(); ++index) {
    // share_kernels refused groups whose nodes read through a subgraph.
    const ir::Node& node = graph.node(boundary.ordered_nodes[index]);
    onnx::NodeProto* written = function.add_node();
    STITCH_RETURN_IF_ERROR(node_to_proto(node, value_name, written));
    // Names differ between identical groups: the body's nodes are named by position.
    // Not empty: ONNX Runtime names the nodes its own fusions make after the nodes they
    // replace, and two empty names gave two "/GatherSliceToSplitFusion/" nodes, which
    // it then refused as duplicates (a Swin transformer's window slicing).
    written->set_name(kernel_name + "/n" + std::to_string(index));
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

}  // namespace

Result<KernelSharing> share_kernels(const ir::Model& model, const std::vector<FusedGroup>& groups,
                                    bool describe) {
  const ir::Graph& graph = model.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<int32_t> position, topological_positions(graph));

  // Identical groups are found by their canonical text (emit/canonical_group.h).
  // Kernel names must not collide with functions the model already has (a model
  // that stitchopt already rewrote carries stitchopt functions of its own).
  std::set<std::string> taken;
  for (const std::string& bytes : model.functions) {
    onnx::FunctionProto existing;
    if (existing.ParseFromString(bytes) && existing.domain() == kFusedDomain) {
      taken.insert(existing.name());
    }
  }
  KernelSharing sharing;
  std::map<std::string, size_t> owner_by_signature;
  for (size_t index = 0; index < groups.size(); ++index) {
    const FusedGroup& group = groups[index];
    GroupBoundary boundary = group_boundary(graph, group.nodes, position);
    for (ir::NodeId id : boundary.ordered_nodes) {
      if (!graph.node(id).implicit_inputs.empty()) {
        return Status::internal("node " + graph.node(id).display_name() +
                                " reads values through a subgraph and cannot be fused");
      }
    }
    auto [it, inserted] =
        owner_by_signature.try_emplace(canonical_group_text(model, boundary), index);
    sharing.owner.push_back(it->second);
    sharing.boundaries.push_back(std::move(boundary));
  }
  // Names once every kernel's call sites are known (a described name covers them all).
  std::map<size_t, std::vector<std::vector<ir::NodeId>>> sites;
  for (size_t index = 0; index < groups.size(); ++index) {
    sites[sharing.owner[index]].push_back(groups[index].nodes);
  }
  for (size_t index = 0; index < groups.size(); ++index) {
    if (sharing.owner[index] != index) {
      sharing.kernel_names.push_back(sharing.kernel_names[sharing.owner[index]]);
      continue;
    }
    std::string kernel_name = groups[index].kernel_name;
    if (describe) kernel_name += "_" + kernel_description(graph, sites[index]);
    while (taken.contains(kernel_name)) kernel_name += "_";
    taken.insert(kernel_name);
    sharing.kernel_names.push_back(std::move(kernel_name));
    ++sharing.distinct_kernels;
  }
  return sharing;
}

Result<FusedModel> build_fused_model(const ir::Model& model,
                                     const std::vector<FusedGroup>& groups) {
  STITCH_ASSIGN_OR_RETURN(KernelSharing sharing, share_kernels(model, groups));
  return build_fused_model(model, groups, sharing);
}

Result<FusedModel> build_fused_model(const ir::Model& model, const std::vector<FusedGroup>& groups,
                                     const KernelSharing& sharing) {
  STITCH_CHECK(sharing.owner.size() == groups.size()) << "kernel sharing of other groups";
  for (size_t index = 0; index < groups.size(); ++index) {
    const std::vector<ir::Attribute>& mine = groups[index].attributes;
    const std::vector<ir::Attribute>& owners = groups[sharing.owner[index]].attributes;
    STITCH_CHECK(
        std::equal(mine.begin(), mine.end(), owners.begin(), owners.end(),
                   [](const ir::Attribute& a, const ir::Attribute& b) { return a.name == b.name; }))
        << "group " << index << " shares a kernel whose function declares other attributes";
  }
  FusedModel fused;
  fused.model = model;
  fused.kernel_names = sharing.kernel_names;
  fused.distinct_kernels = sharing.distinct_kernels;
  for (size_t index = 0; index < groups.size(); ++index) {
    if (sharing.owner[index] != index) continue;
    STITCH_ASSIGN_OR_RETURN(std::string named,
                            function_bytes(model, sharing.boundaries[index],
                                           sharing.kernel_names[index], groups[index].attributes));
    fused.model.functions.push_back(std::move(named));
  }

  ir::Graph& graph = fused.model.graph;
  for (size_t index = 0; index < groups.size(); ++index) {
    const GroupBoundary& boundary = sharing.boundaries[index];
    std::vector<std::string> origin;
    for (ir::NodeId id : boundary.ordered_nodes) {
      for (const std::string& name : graph.node(id).origin) {
        if (std::find(origin.begin(), origin.end(), name) == origin.end()) origin.push_back(name);
      }
    }
    for (ir::NodeId id : boundary.ordered_nodes) graph.remove_node(id);
    ir::NodeId fused_node =
        graph.add_node(fused.kernel_names[index], boundary.inputs, boundary.outputs, kFusedDomain,
                       groups[index].kernel_name + "_" + std::to_string(index));
    ir::Node& node = graph.node(fused_node);
    node.opset = 1;
    node.attributes = groups[index].attributes;
    node.origin = std::move(origin);
  }
  // Values that only lived inside a group have neither producer nor users now.
  for (ir::ValueId id = 0; id < graph.value_capacity(); ++id) {
    const ir::Value& value = graph.value(id);
    if (!value.dead && value.producer == ir::kNoId && value.users.empty() &&
        !value.is_graph_input && !value.is_graph_output && !value.is_initializer()) {
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

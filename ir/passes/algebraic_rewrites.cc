// Algebraic rewrites (see the header for the rules and when they must not fire).
#include "ir/passes/algebraic_rewrites.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ir/core/analysis.h"

namespace stitch::ir {
namespace {

// Every element equals `wanted` (-0 counts as 0); false for an empty tensor.
bool all_elements_equal(const Tensor& tensor, int64_t wanted) {
  int64_t count = tensor.num_elements();
  if (count <= 0) return false;
  bool is_float = dtype_is_float(tensor.dtype);
  if (!is_float && !dtype_is_integer(tensor.dtype)) return false;
  for (int64_t i = 0; i < count; ++i) {
    if (is_float ? tensor.float_at(i) != static_cast<double>(wanted) : tensor.int_at(i) != wanted) {
      return false;
    }
  }
  return true;
}

// Broadcasting `constant` against a tensor of type `type` gives `type` back:
// every trailing dim of the constant is 1 or the (known) matching dim.
bool broadcast_keeps_shape(const TensorType& type, const std::vector<int64_t>& constant_dims) {
  if (!type.has_shape || constant_dims.size() > type.dims.size()) return false;
  size_t offset = type.dims.size() - constant_dims.size();
  for (size_t i = 0; i < constant_dims.size(); ++i) {
    int64_t dim = type.dims[offset + i];
    if (constant_dims[i] != 1 && constant_dims[i] != dim) return false;
  }
  return true;
}

// Removes `node` when nothing reads its outputs, with its outputs and the
// initializers only it read.
void remove_if_unused(Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (node.dead) return;
  for (ValueId output : node.outputs) {
    if (output == kNoId) continue;
    const Value& value = graph.value(output);
    if (!value.users.empty() || value.is_graph_output) return;
  }
  std::vector<ValueId> inputs = node.inputs;
  std::vector<ValueId> outputs = node.outputs;
  graph.remove_node(id);
  for (ValueId output : outputs) {
    if (output != kNoId) graph.remove_value(output);
  }
  for (ValueId input : inputs) {
    if (input == kNoId) continue;
    const Value& value = graph.value(input);
    if (!value.dead && value.is_initializer() && value.users.empty() && !value.is_graph_input &&
        !value.is_graph_output) {
      graph.remove_value(input);
    }
  }
}

// Makes every reader of `from` (output of node `id`) read `to` instead and removes
// the node. Precondition: both have the same type. When `from` is a graph output,
// its name must stay: the producer of `to` is rewired to produce `from`; where `to`
// has no producer (a graph input or an initializer) or is itself a graph output,
// the node becomes Identity(to).
void forward_value(Graph& graph, NodeId id, ValueId from, ValueId to, int64_t opset) {
  std::vector<ValueId> inputs = graph.node(id).inputs;
  if (!graph.value(from).is_graph_output) {
    graph.remove_node(id);
    graph.replace_all_uses(from, to);
    graph.remove_value(from);
  } else if (const Value& target = graph.value(to);
             target.producer != kNoId && !target.is_graph_output && !target.is_graph_input) {
    NodeId producer = target.producer;
    int32_t slot = target.producer_output;
    graph.remove_node(id);
    graph.replace_all_uses(to, from);
    graph.set_output(producer, slot, from);
    graph.remove_value(to);
  } else {
    Node removed = graph.node(id);
    graph.remove_node(id);
    NodeId identity = graph.add_node("Identity", {to}, {from}, "", removed.name);
    graph.node(identity).opset = opset;
    inherit_origin(graph, identity, {id});
  }
  for (ValueId input : inputs) graph.remove_value_if_unused(input);
}

// x*1, 1*x, x+0, 0+x, x-0, x/1 where the constant's broadcast keeps x's type.
bool rewrite_identity_element(Graph& graph, NodeId id, int64_t opset) {
  const Node& node = graph.node(id);
  if (node.inputs.size() != 2 || node.outputs.size() != 1) return false;
  const std::string& op = node.op_type;
  int64_t neutral = (op == "Mul" || op == "Div") ? 1 : 0;
  bool commutative = op == "Mul" || op == "Add";
  for (int slot : {1, 0}) {
    if (slot == 0 && !commutative) break;
    const Tensor* constant = constant_data(graph, node.inputs[static_cast<size_t>(slot)]);
    ValueId x = node.inputs[static_cast<size_t>(1 - slot)];
    ValueId y = node.outputs[0];
    if (constant == nullptr || x == kNoId || y == kNoId) continue;
    const TensorType& x_type = graph.value(x).type;
    if (constant->dtype != x_type.dtype || !(graph.value(y).type == x_type)) continue;
    if (!broadcast_keeps_shape(x_type, constant->dims)) continue;
    if (!all_elements_equal(*constant, neutral)) continue;
    forward_value(graph, id, y, x, opset);
    return true;
  }
  return false;
}

// The node producing `value` when it is a live default-domain `op_type` node and
// `value` is not a graph output (an intermediate that is one blocks rewrites).
const Node* intermediate_producer(const Graph& graph, ValueId value,
                                  const std::vector<std::string_view>& op_types) {
  if (value == kNoId) return nullptr;
  const Value& v = graph.value(value);
  if (v.is_graph_output || v.producer == kNoId) return nullptr;
  const Node& producer = graph.node(v.producer);
  if (producer.dead || !producer.domain.empty()) return nullptr;
  for (std::string_view op : op_types) {
    if (producer.op_type == op) return &producer;
  }
  return nullptr;
}

// Neg(Neg(x)) -> x.
bool rewrite_double_negation(Graph& graph, NodeId id, int64_t opset) {
  const Node& node = graph.node(id);
  if (node.inputs.size() != 1 || node.outputs.size() != 1) return false;
  const Node* inner = intermediate_producer(graph, node.inputs[0], {"Neg"});
  if (inner == nullptr || inner->inputs.size() != 1) return false;
  ValueId x = inner->inputs[0];
  ValueId y = node.outputs[0];
  if (!(graph.value(x).type == graph.value(y).type)) return false;
  NodeId inner_id = inner->id;
  forward_value(graph, id, y, x, opset);
  remove_if_unused(graph, inner_id);
  return true;
}

// A view op (Reshape, Flatten, Squeeze, Unsqueeze) of a view op -> one Reshape of
// the chain's input to the final static shape.
bool rewrite_view_chain(Graph& graph, NodeId id, int64_t opset) {
  const Node& node = graph.node(id);
  if (node.inputs.empty() || node.outputs.size() != 1 || node.outputs[0] == kNoId) return false;
  const Node* inner =
      intermediate_producer(graph, node.inputs[0], {"Reshape", "Flatten", "Squeeze", "Unsqueeze"});
  if (inner == nullptr || inner->inputs.empty() || inner->inputs[0] == kNoId) return false;
  const TensorType& type = graph.value(node.outputs[0]).type;
  if (!type.is_static()) return false;
  for (int64_t dim : type.dims) {
    // A 0 in Reshape's shape copies the input dim (allowzero=0).
    if (dim == 0) return false;
  }
  ValueId x = inner->inputs[0];
  NodeId inner_id = inner->id;
  std::vector<ValueId> old_inputs = node.inputs;
  for (size_t slot = 1; slot < old_inputs.size(); ++slot) {
    graph.set_input(id, static_cast<int32_t>(slot), kNoId);
  }
  ValueId shape = graph.add_initializer(
      graph.unique_value_name(graph.value(node.outputs[0]).name + "/shape"),
      Tensor::from_int64({static_cast<int64_t>(type.dims.size())}, type.dims));
  Node& rewritten = graph.node(id);
  rewritten.op_type = "Reshape";
  rewritten.attributes.clear();
  rewritten.opset = opset;
  rewritten.inputs.resize(2, kNoId);
  graph.set_input(id, 0, x);
  graph.set_input(id, 1, shape);
  inherit_origin(graph, id, {inner_id});
  for (size_t slot = 1; slot < old_inputs.size(); ++slot) {
    graph.remove_value_if_unused(old_inputs[slot]);
  }
  remove_if_unused(graph, inner_id);
  return true;
}

// Transpose(Transpose(x, p1), p2) -> Transpose(x, p) with p[i] = p1[p2[i]]; x itself
// when p is the identity.
bool rewrite_transpose_chain(Graph& graph, NodeId id, int64_t opset) {
  const Node& node = graph.node(id);
  if (node.inputs.size() != 1 || node.outputs.size() != 1 || node.outputs[0] == kNoId) return false;
  const Node* inner = intermediate_producer(graph, node.inputs[0], {"Transpose"});
  if (inner == nullptr || inner->inputs.size() != 1 || inner->inputs[0] == kNoId) return false;
  std::optional<std::vector<int64_t>> outer_perm = transpose_permutation(graph, node);
  std::optional<std::vector<int64_t>> inner_perm = transpose_permutation(graph, *inner);
  if (!outer_perm || !inner_perm) return false;
  std::optional<std::vector<int64_t>> composed = compose_permutations(*inner_perm, *outer_perm);
  if (!composed) return false;
  ValueId x = inner->inputs[0];
  ValueId y = node.outputs[0];
  NodeId inner_id = inner->id;
  if (is_identity_permutation(*composed)) {
    if (!(graph.value(x).type == graph.value(y).type)) return false;
    forward_value(graph, id, y, x, opset);
  } else {
    graph.set_input(id, 0, x);
    graph.node(id).set_attribute(Attribute::make_ints("perm", *composed));
    inherit_origin(graph, id, {inner_id});
  }
  remove_if_unused(graph, inner_id);
  return true;
}

// numpy broadcast of two static shapes; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_dims(const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    int64_t db = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    result[i] = da == 1 ? db : da;
  }
  return result;
}

// Flat index into a tensor of `dims` for each element of the broadcast `shape`.
std::vector<int64_t> broadcast_indices(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<int64_t> strides(shape.size(), 0);
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    size_t axis = i + shape.size() - dims.size();
    strides[axis] = dims[i] == 1 ? 0 : stride;
    stride *= dims[i];
  }
  std::vector<int64_t> indices(static_cast<size_t>(count));
  std::vector<int64_t> position(shape.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t index = 0;
    for (size_t axis = 0; axis < shape.size(); ++axis) index += position[axis] * strides[axis];
    indices[static_cast<size_t>(flat)] = index;
    for (size_t axis = shape.size(); axis-- > 0;) {
      if (++position[axis] < shape[axis]) break;
      position[axis] = 0;
    }
  }
  return indices;
}

// Stores element `index` of an integer tensor: the low bytes of the two's
// complement value, so products and sums wrap to the width.
void store_integer(Tensor& tensor, int64_t index, uint64_t value) {
  auto size = static_cast<size_t>(dtype_size(tensor.dtype));
  char* out = tensor.bytes.data() + index * static_cast<int64_t>(size);
  for (size_t byte = 0; byte < size; ++byte) {
    out[byte] = static_cast<char>((value >> (8 * byte)) & 0xff);
  }
}

// Smallest positive normal value of a float dtype.
double smallest_normal(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return std::ldexp(1.0, -14);
    case DType::kBFloat16:
    case DType::kFloat32:
      return static_cast<double>(std::numeric_limits<float>::min());
    default:
      return std::numeric_limits<double>::min();
  }
}

// ±2^k in the dtype's normal range: multiplying by it only shifts the exponent.
bool is_normal_power_of_two(double value, DType dtype) {
  if (!std::isfinite(value) || value == 0.0 || std::fabs(value) < smallest_normal(dtype)) {
    return false;
  }
  int exponent = 0;
  return std::fabs(std::frexp(value, &exponent)) == 0.5;
}

bool all_powers_of_two(const Tensor& tensor) {
  for (int64_t i = 0; i < tensor.num_elements(); ++i) {
    if (!is_normal_power_of_two(tensor.float_at(i), tensor.dtype)) return false;
  }
  return true;
}

// The folded constant of Op(Op(x, a), b) = Op(x, a op b), or nullopt when the
// fold would not be exact (see the header: integers always; float Mul when all of
// a or all of b are normal powers of two and every product is exact; float Add never).
std::optional<Tensor> fold_constants(const std::string& op, const Tensor& a, const Tensor& b,
                                     const std::vector<int64_t>& dims) {
  std::vector<int64_t> a_index = broadcast_indices(a.dims, dims);
  std::vector<int64_t> b_index = broadcast_indices(b.dims, dims);
  const auto count = static_cast<int64_t>(a_index.size());
  if (dtype_is_integer(a.dtype)) {
    Tensor folded;
    folded.dtype = a.dtype;
    folded.dims = dims;
    folded.bytes.resize(static_cast<size_t>(count * dtype_size(a.dtype)));
    for (int64_t i = 0; i < count; ++i) {
      auto left = static_cast<uint64_t>(a.int_at(a_index[static_cast<size_t>(i)]));
      auto right = static_cast<uint64_t>(b.int_at(b_index[static_cast<size_t>(i)]));
      store_integer(folded, i, op == "Mul" ? left * right : left + right);
    }
    return folded;
  }
  if (!dtype_is_float(a.dtype) || op != "Mul") return std::nullopt;
  if (!all_powers_of_two(a) && !all_powers_of_two(b)) return std::nullopt;
  std::vector<double> products(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    double left = a.float_at(a_index[static_cast<size_t>(i)]);
    double right = b.float_at(b_index[static_cast<size_t>(i)]);
    double product = left * right;
    bool zero_operand = left == 0.0 || right == 0.0;
    if ((!zero_operand && std::fabs(product) < smallest_normal(a.dtype)) ||
        !std::isfinite(product)) {
      return std::nullopt;
    }
    products[static_cast<size_t>(i)] = product;
  }
  Tensor folded = Tensor::from_doubles(a.dtype, dims, products);
  for (int64_t i = 0; i < count; ++i) {
    if (folded.float_at(i) != products[static_cast<size_t>(i)]) return std::nullopt;
  }
  return folded;
}

// Op(Op(x, a), b) -> Op(x, a op b) for Op in {Mul, Add}, a and b constants.
bool rewrite_constant_chain(Graph& graph, NodeId id) {
  const Node& node = graph.node(id);
  if (node.inputs.size() != 2 || node.outputs.size() != 1 || node.outputs[0] == kNoId) return false;
  const std::string op = node.op_type;
  for (int outer_slot : {1, 0}) {
    const Tensor* b = constant_data(graph, node.inputs[static_cast<size_t>(outer_slot)]);
    ValueId t = node.inputs[static_cast<size_t>(1 - outer_slot)];
    if (b == nullptr || t == kNoId) continue;
    const Node* inner = intermediate_producer(graph, t, {op});
    if (inner == nullptr || inner->inputs.size() != 2 || graph.value(t).users.size() != 1) continue;
    for (int inner_slot : {1, 0}) {
      const Tensor* a = constant_data(graph, inner->inputs[static_cast<size_t>(inner_slot)]);
      ValueId x = inner->inputs[static_cast<size_t>(1 - inner_slot)];
      if (a == nullptr || x == kNoId || constant_data(graph, x) != nullptr) continue;
      DType dtype = graph.value(node.outputs[0]).type.dtype;
      if (a->dtype != dtype || b->dtype != dtype || graph.value(x).type.dtype != dtype ||
          graph.value(t).type.dtype != dtype) {
        continue;
      }
      std::optional<std::vector<int64_t>> dims = broadcast_dims(a->dims, b->dims);
      // The folded constant is no bigger than a or b.
      if (!dims || (*dims != a->dims && *dims != b->dims)) continue;
      std::optional<Tensor> folded = fold_constants(op, *a, *b, *dims);
      if (!folded) continue;
      ValueId old_b = node.inputs[static_cast<size_t>(outer_slot)];
      NodeId inner_id = inner->id;
      std::string base = node.name.empty() ? graph.value(node.outputs[0]).name : node.name;
      ValueId constant =
          graph.add_initializer(graph.unique_value_name(base + "/folded"), std::move(*folded));
      graph.set_input(id, 1 - outer_slot, x);
      graph.set_input(id, outer_slot, constant);
      inherit_origin(graph, id, {inner_id});
      graph.remove_value_if_unused(old_b);
      remove_if_unused(graph, inner_id);
      return true;
    }
  }
  return false;
}

bool rewrite(Graph& graph, NodeId id, int64_t opset) {
  const Node& node = graph.node(id);
  if (!node.domain.empty()) return false;
  const std::string& op = node.op_type;
  if (op == "Mul" || op == "Add" || op == "Sub" || op == "Div") {
    if (rewrite_identity_element(graph, id, opset)) return true;
    if (op == "Mul" || op == "Add") return rewrite_constant_chain(graph, id);
    return false;
  }
  if (op == "Neg") return rewrite_double_negation(graph, id, opset);
  if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze") {
    return rewrite_view_chain(graph, id, opset);
  }
  if (op == "Transpose") return rewrite_transpose_chain(graph, id, opset);
  return false;
}

}  // namespace

Result<bool> rewrite_algebraic(Graph& graph, PassContext& context) {
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, context.analyses.topological_order(graph));
  bool changed = false;
  for (NodeId id : order) {
    if (graph.node(id).dead) continue;
    changed = rewrite(graph, id, context.default_opset) || changed;
  }
  return changed;
}

}  // namespace stitch::ir

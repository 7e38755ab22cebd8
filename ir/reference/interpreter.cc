// The reference interpreter: the kernel table, node evaluation, graph evaluation,
// and the helpers the reference kernels share (ir/reference/reference_ops.h).
#include "ir/reference/interpreter.h"

#include <algorithm>
#include <optional>
#include <sstream>

#include "ir/core/analysis.h"
#include "ir/core/op_registry.h"
#include "ir/reference/reference_ops.h"

namespace stitch::ir {

namespace reference {

Status KernelContext::error(const std::string& what) const {
  std::string shown = node.name.empty() ? "<unnamed>" : "\"" + node.name + "\"";
  return Status::invalid_input("node " + shown + " (" + node.op_type + "): " + what);
}

Status KernelContext::unsupported_dtype(size_t input_index) const {
  const Tensor* tensor = input(input_index);
  std::string dtype = tensor == nullptr ? "undefined" : std::string(dtype_onnx_name(tensor->dtype));
  return error("input " + std::to_string(input_index) + " has dtype " + dtype + ", which " +
               node.op_type + " does not take in the reference evaluation; cast it first");
}

Status KernelContext::missing_input(size_t input_index) const {
  return error("input " + std::to_string(input_index) + " is required but missing; give the " +
               node.op_type + " node that input");
}

Status KernelContext::check_output_dims(const std::vector<int64_t>& dims) const {
  constexpr int64_t kLimit = int64_t{1} << 31;
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d > 0 && count > kLimit / d)) {
      return error("would produce an output of shape " + dims_string(dims) +
                   ", which is negative or over 2^31 elements; fix the shape-giving inputs");
    }
    count *= d;
  }
  return Status::ok();
}

Status KernelContext::check_scalar_input(size_t input_index) const {
  const Tensor* tensor = input(input_index);
  if (tensor == nullptr) return missing_input(input_index);
  if (tensor->num_elements() < 1) {
    return error("input " + std::to_string(input_index) +
                 " is empty but must hold a scalar; give it one value");
  }
  return Status::ok();
}

KernelResult single(Tensor tensor) {
  std::vector<Tensor> outputs;
  outputs.push_back(std::move(tensor));
  return outputs;
}

Result<int64_t> axis_of(const KernelContext& ctx, int64_t axis, int64_t rank) {
  int64_t normalized = 0;
  if (!normalize_axis(axis, rank, &normalized)) {
    return ctx.error("axis " + std::to_string(axis) + " is out of range for rank " +
                     std::to_string(rank) + "; use an axis in [" + std::to_string(-rank) + ", " +
                     std::to_string(rank - 1) + "]");
  }
  return normalized;
}

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  return count;
}

Tensor make_tensor(DType dtype, std::vector<int64_t> dims) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes.assign(static_cast<size_t>(element_count(tensor.dims) * dtype_size(dtype)), '\0');
  return tensor;
}

std::vector<int64_t> row_major_strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i > 1; --i) strides[i - 2] = strides[i - 1] * dims[i - 1];
  return strides;
}

bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                      std::vector<int64_t>* out) {
  size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1) {
      (*out)[i] = da;
    } else if (da == 1) {
      (*out)[i] = db;
    } else {
      return false;
    }
  }
  return true;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims,
                                       const std::vector<int64_t>& out_dims) {
  std::vector<int64_t> strides(out_dims.size(), 0);
  std::vector<int64_t> own = row_major_strides(dims);
  size_t offset = out_dims.size() - dims.size();
  for (size_t i = 0; i < dims.size(); ++i) {
    strides[offset + i] = dims[i] == 1 && out_dims[offset + i] != 1 ? 0 : own[i];
  }
  return strides;
}

bool normalize_axis(int64_t axis, int64_t rank, int64_t* normalized) {
  if (axis < -rank || axis >= rank) return false;
  *normalized = axis < 0 ? axis + rank : axis;
  return true;
}

int64_t dims_product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  for (size_t i = begin; i < end && i < dims.size(); ++i) product *= dims[i];
  return product;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ",";
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

Tensor gather_by_axis_maps(const Tensor& source, const std::vector<int64_t>& out_dims,
                           const std::vector<std::vector<int64_t>>& maps, const std::string& fill) {
  Tensor out = make_tensor(source.dtype, out_dims);
  const int64_t count = out.num_elements();
  if (count == 0) return out;
  const auto size = static_cast<size_t>(dtype_size(source.dtype));
  const size_t rank = out_dims.size();
  const char* src = source.bytes.data();
  char* dst = out.bytes.data();
  if (rank == 0) {
    std::memcpy(dst, src, size);
    return out;
  }
  std::vector<int64_t> strides = row_major_strides(source.dims);
  // partial[d]: source offset of the index prefix [0, d]; -1 when it hits a fill.
  std::vector<int64_t> counter(rank, 0);
  std::vector<int64_t> partial(rank, 0);
  auto recompute_from = [&](size_t first) {
    for (size_t d = first; d + 1 < rank; ++d) {
      int64_t before = d == 0 ? 0 : partial[d - 1];
      int64_t index = maps[d][static_cast<size_t>(counter[d])];
      partial[d] = before < 0 || index < 0 ? -1 : before + index * strides[d];
    }
  };
  recompute_from(0);
  const std::vector<int64_t>& inner_map = maps[rank - 1];
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  int64_t linear = 0;
  while (linear < count) {
    int64_t base = rank == 1 ? 0 : partial[rank - 2];
    for (int64_t j = 0; j < inner; ++j, ++linear) {
      int64_t index = inner_map[static_cast<size_t>(j)];
      const char* from = base < 0 || index < 0
                             ? fill.data()
                             : src + (base + index * inner_stride) * static_cast<int64_t>(size);
      std::memcpy(dst + linear * static_cast<int64_t>(size), from, size);
    }
    if (rank == 1) break;
    size_t d = rank - 1;
    while (d > 0) {
      --d;
      if (++counter[d] < out_dims[d]) break;
      counter[d] = 0;
    }
    recompute_from(d);
  }
  return out;
}

std::vector<double> doubles_of(const Tensor& tensor) {
  std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
  visit_float(tensor.dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = load<S>(tensor.bytes.data(), static_cast<int64_t>(i));
    }
  });
  return values;
}

std::vector<double> split_product_operands(Precision precision, std::vector<double>& values) {
  std::vector<double> small;
  if (precision == Precision::kTf32) {
    for (double& v : values) v = round_to_tf32(static_cast<float>(v));
  } else if (precision == Precision::kFloat32x3) {
    small.resize(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      const Tf32Split split = split_tf32(static_cast<float>(values[i]));
      values[i] = split.big;
      small[i] = split.small;
    }
  }
  return small;
}

Tensor tensor_of_doubles(DType dtype, std::vector<int64_t> dims,
                         const std::vector<double>& values) {
  Tensor tensor = make_tensor(dtype, std::move(dims));
  visit_float(dtype, [&](auto tag) {
    using S = typename decltype(tag)::type;
    for (size_t i = 0; i < values.size(); ++i) {
      store<S>(tensor.bytes.data(), static_cast<int64_t>(i), values[i]);
    }
  });
  return tensor;
}

Status check_float(const KernelContext& ctx, size_t index) {
  const Tensor* tensor = ctx.input(index);
  if (tensor != nullptr && !dtype_is_float(tensor->dtype)) return ctx.unsupported_dtype(index);
  return Status::ok();
}

std::vector<float> floats_attribute(const Node& node, std::string_view name,
                                    std::vector<float> fallback) {
  const Attribute* attribute = node.find_attribute(name);
  if (attribute == nullptr || attribute->kind != AttributeKind::kFloats) return fallback;
  return attribute->floats;
}

}  // namespace reference

namespace {

const reference::KernelTable& kernel_table() {
  static const reference::KernelTable table = [] {
    reference::KernelTable kernels;
    reference::add_elementwise_kernels(kernels);
    reference::add_shape_kernels(kernels);
    reference::add_reduction_kernels(kernels);
    reference::add_nn_kernels(kernels);
    reference::add_resize_kernels(kernels);
    reference::add_recurrent_kernels(kernels);
    return kernels;
  }();
  return table;
}

reference::Kernel find_kernel(std::string_view domain, std::string_view op_type) {
  if (!is_default_domain(domain)) return nullptr;
  const reference::KernelTable& table = kernel_table();
  auto it = table.find(op_type);
  return it == table.end() ? nullptr : it->second;
}

}  // namespace

bool has_reference_evaluation(std::string_view domain, std::string_view op_type) {
  return find_kernel(domain, op_type) != nullptr;
}

Result<std::vector<Tensor>> evaluate_node(const Node& node, int64_t opset,
                                          const std::vector<const Tensor*>& inputs,
                                          const EvaluationOptions& options) {
  reference::KernelContext context{node, opset, inputs, options.products};
  reference::Kernel kernel = find_kernel(node.domain, node.op_type);
  if (kernel == nullptr) {
    return context.error(
        "the op has no reference evaluation (it is not in the op registry of the default "
        "domain); constant folding and reference checks cannot run it");
  }
  if (const OpSchema* schema = find_op_schema(node.domain, node.op_type)) {
    for (int i = 0; i < schema->min_inputs; ++i) {
      if (context.input(static_cast<size_t>(i)) == nullptr) {
        return context.missing_input(static_cast<size_t>(i));
      }
    }
  }
  for (const Tensor* tensor : inputs) {
    if (tensor != nullptr && (tensor->dtype == DType::kString || !tensor->strings.empty()) &&
        node.op_type != "Identity") {
      return context.error("string tensors have no reference evaluation");
    }
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, kernel(context));
  outputs.resize(node.outputs.size());
  for (size_t i = 0; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == kNoId) outputs[i] = Tensor{};
  }
  return outputs;
}

namespace {

// Points `current` at every graph input: the given tensor (checked against the
// declared type and for complete data) or the input's constant default.
Status bind_graph_inputs(const Graph& graph, const std::map<std::string, Tensor>& inputs,
                         std::vector<const Tensor*>& current) {
  for (const auto& [name, tensor] : inputs) {
    std::optional<ValueId> id = graph.find_value(name);
    if (!id || !graph.value(*id).is_graph_input) {
      return Status::invalid_input("\"" + name +
                                   "\" is not an input of the graph; give only graph inputs");
    }
  }
  for (ValueId id : graph.graph_inputs()) {
    const Value& value = graph.value(id);
    auto it = inputs.find(value.name);
    if (it == inputs.end()) {
      if (value.constant == nullptr) {
        return Status::invalid_input("graph input \"" + value.name +
                                     "\" is not given; give a tensor of type " +
                                     to_string(value.type));
      }
      current[static_cast<size_t>(id)] = value.constant.get();
      continue;
    }
    const Tensor& given = it->second;
    bool dtype_ok = value.type.dtype == DType::kUndefined || value.type.dtype == given.dtype;
    bool shape_ok = !value.type.has_shape || value.type.dims.size() == given.dims.size();
    for (size_t d = 0; shape_ok && value.type.has_shape && d < given.dims.size(); ++d) {
      shape_ok = value.type.dims[d] < 0 || value.type.dims[d] == given.dims[d];
    }
    if (!dtype_ok || !shape_ok) {
      return Status::invalid_input("graph input \"" + value.name + "\" is given as " +
                                   to_string(given.type()) + " but the graph declares " +
                                   to_string(value.type) + "; give a tensor of that type");
    }
    if (static_cast<int64_t>(given.bytes.size()) !=
        given.num_elements() * dtype_size(given.dtype)) {
      return Status::invalid_input("graph input \"" + value.name + "\" has " +
                                   std::to_string(given.bytes.size()) + " bytes of data for " +
                                   to_string(given.type()) + "; give complete data");
    }
    current[static_cast<size_t>(id)] = &given;
  }
  return Status::ok();
}

}  // namespace

Result<std::map<std::string, Tensor>> evaluate_graph(const Model& model,
                                                     const std::map<std::string, Tensor>& inputs,
                                                     const EvaluationOptions& options) {
  const Graph& graph = model.graph;
  STITCH_ASSIGN_OR_RETURN(std::vector<NodeId> order, topological_order(graph));
  const auto value_count = static_cast<size_t>(graph.value_capacity());
  std::vector<std::optional<Tensor>> owned(value_count);
  std::vector<const Tensor*> current(value_count, nullptr);
  std::vector<int64_t> remaining_uses(value_count, 0);

  STITCH_RETURN_IF_ERROR(bind_graph_inputs(graph, inputs, current));
  for (ValueId id : graph.initializers()) {
    if (current[static_cast<size_t>(id)] == nullptr) {
      current[static_cast<size_t>(id)] = graph.value(id).constant.get();
    }
  }
  for (NodeId id : order) {
    const Node& node = graph.node(id);
    for (ValueId input : node.inputs) {
      if (input != kNoId) ++remaining_uses[static_cast<size_t>(input)];
    }
  }

  for (NodeId id : order) {
    const Node& node = graph.node(id);
    std::vector<const Tensor*> node_inputs;
    node_inputs.reserve(node.inputs.size());
    for (ValueId input : node.inputs) {
      if (input == kNoId) {
        node_inputs.push_back(nullptr);
        continue;
      }
      const Tensor* tensor = current[static_cast<size_t>(input)];
      if (tensor == nullptr) {
        return Status::invalid_input("node " + node.display_name() + " reads \"" +
                                     graph.value(input).name +
                                     "\", which nothing produces; fix the model");
      }
      node_inputs.push_back(tensor);
    }
    int64_t opset = node.opset_or(model.opset_of(node.domain));
    STITCH_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                            evaluate_node(node, opset, node_inputs, options));
    if (options.observe) {
      for (size_t i = 0; i < node.outputs.size(); ++i) {
        if (node.outputs[i] != kNoId) options.observe(node.outputs[i], outputs[i]);
      }
    }
    for (ValueId input : node.inputs) {
      if (input == kNoId) continue;
      auto slot = static_cast<size_t>(input);
      if (--remaining_uses[slot] == 0 && !graph.value(input).is_graph_output && owned[slot]) {
        owned[slot].reset();
        current[slot] = nullptr;
      }
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId output = node.outputs[i];
      if (output == kNoId) continue;
      auto slot = static_cast<size_t>(output);
      if (remaining_uses[slot] == 0 && !graph.value(output).is_graph_output) continue;
      owned[slot] = std::move(outputs[i]);
      current[slot] = &*owned[slot];
    }
  }

  std::map<std::string, Tensor> results;
  for (ValueId id : graph.graph_outputs()) {
    const Tensor* tensor = current[static_cast<size_t>(id)];
    if (tensor == nullptr) {
      return Status::invalid_input("graph output \"" + graph.value(id).name +
                                   "\" is not produced by any node; fix the model");
    }
    results[graph.value(id).name] = *tensor;
  }
  return results;
}

}  // namespace stitch::ir

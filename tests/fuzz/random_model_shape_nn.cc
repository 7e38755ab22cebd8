// The random model generator's shape, data-movement and NN op builders, and the
// extreme ones (thousands of inputs, long chains); see op_generator.h.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "tests/fuzz/op_generator.h"

namespace stitch::fuzz::detail {

bool Generator::expand(const std::string& op) {
  GenValue x = input(DTypeClass::kAny);
  Dims shape = x.dims;
  for (int64_t& dim : shape) {
    if (dim == 1 && b_.coin()) {
      dim = b_.dim();
    } else if (b_.one_in(4)) {
      dim = 1;  // broadcasting keeps x's dim
    }
  }
  for (int64_t lead = b_.range(0, 2); lead > 0; --lead) shape.insert(shape.begin(), b_.dim());
  std::optional<Dims> dims = broadcast(x.dims, shape);
  if (!dims || !fits(*dims)) return false;
  output(b_.add_node(op, {x.name, b_.ints(shape).name}), x.dtype, *dims);
  return true;
}

bool Generator::transpose(const std::string& op) {
  GenValue x = input(DTypeClass::kAny);
  std::vector<int64_t> perm(x.dims.size());
  std::iota(perm.begin(), perm.end(), 0);
  onnx::NodeProto* node = nullptr;
  if (b_.one_in(4)) {
    std::reverse(perm.begin(), perm.end());
    node = b_.add_node(op, {x.name});
  } else {
    for (size_t i = perm.size(); i > 1; --i) {
      std::swap(perm[i - 1], perm[static_cast<size_t>(b_.range(0, static_cast<int64_t>(i) - 1))]);
    }
    node = b_.add_node(op, {x.name});
    ModelBuilder::set_ints(node, "perm", perm);
  }
  Dims dims;
  for (int64_t p : perm) dims.push_back(x.dims[static_cast<size_t>(p)]);
  output(node, x.dtype, dims);
  return true;
}

bool Generator::concat(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(x);
  const int64_t a = b_.range(0, rank - 1);
  std::vector<std::string> names = {x.name};
  Dims dims = x.dims;
  for (int64_t n = b_.range(0, 3); n > 0; --n) {
    Dims other = x.dims;
    if (b_.coin()) other[static_cast<size_t>(a)] = b_.dim();
    Dims total = dims;
    total[static_cast<size_t>(a)] += other[static_cast<size_t>(a)];
    if (!fits(total)) break;
    dims = total;
    names.push_back(b_.operand(x.dtype, other).name);
  }
  onnx::NodeProto* node = b_.add_node(op, names);
  ModelBuilder::set_int(node, "axis", axis(a, rank));
  output(node, x.dtype, dims);
  return true;
}

bool Generator::split(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(x);
  const int64_t a = b_.range(0, rank - 1);
  const int64_t length = x.dims[static_cast<size_t>(a)];
  const int64_t count = b_.range(1, 3);
  // 0: explicit sizes, 1: equal parts (sizes omitted), 2: num_outputs (opset 18).
  int64_t form = b_.range(0, b_.opset() >= 18 ? 2 : 1);
  std::vector<int64_t> sizes;
  if (form == 0) {
    if (length < min_dim() * count) return false;
    int64_t left = length;
    for (int64_t i = 0; i + 1 < count; ++i) {
      sizes.push_back(b_.range(min_dim(), left - min_dim() * (count - 1 - i)));
      left -= sizes.back();
    }
    sizes.push_back(left);
  } else if (form == 1) {
    if (length % count != 0) return false;
    sizes.assign(static_cast<size_t>(count), length / count);
  } else {
    const int64_t chunk = (length + count - 1) / count;
    if (chunk * (count - 1) >= length) return false;  // the last part would be empty
    sizes.assign(static_cast<size_t>(count), chunk);
    sizes.back() = length - chunk * (count - 1);
  }
  std::vector<std::string> inputs = {x.name};
  if (form == 0 && b_.opset() >= 13) inputs.push_back(b_.ints(sizes).name);
  onnx::NodeProto* node = b_.add_node(op, inputs);
  ModelBuilder::set_int(node, "axis", axis(a, rank));
  if (form == 0 && b_.opset() < 13) ModelBuilder::set_ints(node, "split", sizes);
  if (form == 2) ModelBuilder::set_int(node, "num_outputs", count);
  for (int64_t size : sizes) {
    Dims dims = x.dims;
    dims[static_cast<size_t>(a)] = size;
    output(node, x.dtype, dims);
  }
  return true;
}

bool Generator::slice(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(x);
  std::vector<int64_t> axes, starts, ends, steps;
  Dims dims = x.dims;
  // Axes in order 0..k-1 (so they may be left out) or a random subset.
  const bool in_order = b_.coin();
  for (int64_t i = 0; i < rank; ++i) {
    if (in_order ? i > 0 && b_.one_in(3) : !b_.coin()) {
      if (in_order) break;
      continue;
    }
    const int64_t d = x.dims[static_cast<size_t>(i)];
    auto bound = [&]() -> int64_t {
      switch (b_.range(0, 5)) {
        case 0:
          return INT64_MAX;
        case 1:
          return INT64_MIN;
        case 2:
          return -d - b_.range(0, 3);
        case 3:
          return d + b_.range(0, 2);
        default:
          return b_.range(-d, d);
      }
    };
    const int64_t start = bound();
    const int64_t end = bound();
    static const std::vector<int64_t> step_choices = {1, 1, 1, 2, 3, -1, -2};
    const int64_t step = b_.opset() >= 10 ? b_.pick(step_choices) : 1;
    // ONNX's clamping (Slice-13): negative starts and ends count from the back.
    int64_t length = 0;
    if (d > 0) {
      int64_t s = start < 0 ? start + d : start;
      int64_t e = end < 0 ? end + d : end;
      if (step > 0) {
        s = std::clamp<int64_t>(s, 0, d);
        e = std::clamp<int64_t>(e, 0, d);
        length = e > s ? (e - s + step - 1) / step : 0;
      } else {
        s = std::clamp<int64_t>(s, 0, d - 1);
        e = std::clamp<int64_t>(e, -1, d - 1);
        length = s > e ? (s - e - step - 1) / -step : 0;
      }
    }
    dims[static_cast<size_t>(i)] = length;
    axes.push_back(axis(i, rank, 10));
    starts.push_back(start);
    ends.push_back(end);
    steps.push_back(step);
  }
  if (axes.empty() || !fits(dims)) return false;
  if (b_.opset() < 10) {
    onnx::NodeProto* node = b_.add_node(op, {x.name});
    ModelBuilder::set_ints(node, "starts", starts);
    ModelBuilder::set_ints(node, "ends", ends);
    if (!in_order || b_.coin()) ModelBuilder::set_ints(node, "axes", axes);
    output(node, x.dtype, dims);
    return true;
  }
  std::vector<std::string> inputs = {x.name, b_.ints(starts).name, b_.ints(ends).name};
  bool all_ones = std::all_of(steps.begin(), steps.end(), [](int64_t s) { return s == 1; });
  if (!in_order || b_.coin() || !all_ones)
    inputs.push_back(in_order && b_.coin() ? "" : b_.ints(axes).name);
  if (!all_ones || b_.coin()) inputs.push_back(b_.ints(steps).name);
  output(b_.add_node(op, inputs), x.dtype, dims);
  return true;
}

bool Generator::gather(const std::string& op) {
  GenValue data = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(data);
  const int64_t a = b_.range(0, rank - 1);
  const int64_t d = data.dims[static_cast<size_t>(a)];
  const DType index_type = b_.coin() ? DType::kInt64 : DType::kInt32;
  Dims index_dims;
  Dims dims;
  if (op == "GatherElements") {
    index_dims = data.dims;
    index_dims[static_cast<size_t>(a)] = d == 0 ? 0 : b_.range(min_dim(), 3);
    dims = index_dims;
  } else {
    index_dims = b_.shape(0, 2);
    if (d == 0 && element_count(index_dims) != 0) index_dims = {0};
    dims.assign(data.dims.begin(), data.dims.begin() + a);
    dims.insert(dims.end(), index_dims.begin(), index_dims.end());
    dims.insert(dims.end(), data.dims.begin() + a + 1, data.dims.end());
  }
  if (!fits(dims) || !fits(index_dims)) return false;
  GenValue indices;
  if (b_.one_in(5)) {
    indices = b_.leaf(index_type, index_dims);  // runtime indices: may be out of range
  } else {
    std::vector<int64_t> values(static_cast<size_t>(element_count(index_dims)));
    for (int64_t& value : values) value = b_.range(-d, d - 1);
    indices = b_.int_constant(values, index_dims, index_type);
  }
  onnx::NodeProto* node = b_.add_node(op, {data.name, indices.name});
  if (a != 0 || b_.coin()) ModelBuilder::set_int(node, "axis", axis(a, rank));
  output(node, data.dtype, dims);
  return true;
}

bool Generator::pad(const std::string& op) {
  GenValue x = input(b_.opset() >= 11 ? DTypeClass::kAny : DTypeClass::kFloat, 1);
  const int64_t rank = rank_of(x);
  static const std::vector<std::string> modes = {"constant", "constant", "reflect", "edge", "wrap"};
  std::string mode = b_.pick(modes);
  if (mode == "wrap" && b_.opset() < 19) mode = "constant";
  if (mode != "constant" && x.dtype == DType::kBool) mode = "constant";
  // Opset 18 may name the padded axes; the others are not padded.
  std::vector<int64_t> axes;
  const bool with_axes = b_.opset() >= 18 && b_.coin();
  Dims dims = x.dims;
  std::vector<int64_t> begins, ends;
  for (int64_t i = 0; i < rank; ++i) {
    if (with_axes && b_.coin()) continue;
    const int64_t d = x.dims[static_cast<size_t>(i)];
    auto amount = [&](int64_t room) -> int64_t {
      if (mode == "constant") return b_.range(-room, 3);
      if (mode == "reflect") return d <= 1 ? 0 : b_.range(0, d - 1);
      if (mode == "edge") return d == 0 ? 0 : b_.range(0, 3);
      return b_.range(0, d);  // wrap
    };
    const int64_t begin = amount(d);
    const int64_t end = amount(d + std::min<int64_t>(begin, 0));
    begins.push_back(begin);
    ends.push_back(end);
    axes.push_back(axis(i, rank));
    dims[static_cast<size_t>(i)] = d + begin + end;
  }
  if (!fits(dims) || (with_axes && axes.empty())) return false;
  std::vector<int64_t> pads = begins;
  pads.insert(pads.end(), ends.begin(), ends.end());
  onnx::NodeProto* node = nullptr;
  if (b_.opset() < 11) {
    node = b_.add_node(op, {x.name});
    ModelBuilder::set_ints(node, "pads", pads);
    if (b_.coin()) ModelBuilder::set_float(node, "value", static_cast<float>(b_.float_value()));
  } else {
    std::vector<std::string> inputs = {x.name, b_.ints(pads).name};
    if (mode == "constant" && b_.coin()) inputs.push_back(b_.operand(x.dtype, {}).name);
    if (with_axes) {
      if (inputs.size() == 2) inputs.push_back("");
      inputs.push_back(b_.ints(axes).name);
    }
    node = b_.add_node(op, inputs);
  }
  if (mode != "constant" || b_.coin()) ModelBuilder::set_string(node, "mode", mode);
  output(node, x.dtype, dims);
  return true;
}

bool Generator::tile(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 1);
  std::vector<int64_t> repeats;
  Dims dims;
  for (int64_t d : x.dims) {
    repeats.push_back(b_.range(min_dim(), 3));
    dims.push_back(d * repeats.back());
  }
  if (!fits(dims)) return false;
  output(b_.add_node(op, {x.name, b_.ints(repeats).name}), x.dtype, dims);
  return true;
}

bool Generator::trilu(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 2);
  std::vector<std::string> inputs = {x.name};
  if (b_.coin()) {
    static const std::vector<int64_t> ks = {0, 1, -1, 2, -3, 7, INT64_MAX, INT64_MIN};
    inputs.push_back(b_.int_scalar(b_.pick(ks)).name);
  }
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (b_.coin()) ModelBuilder::set_int(node, "upper", b_.range(0, 1));
  output(node, x.dtype, x.dims);
  return true;
}

bool Generator::reshape(const std::string& op) {
  GenValue x = input(DTypeClass::kAny);
  const int64_t count = element_count(x.dims);
  // The target dims: count's prime factors dealt to a few dims, ones sprinkled in;
  // for zero elements, some zero dim.
  Dims target(static_cast<size_t>(b_.range(count == 1 ? 0 : 1, 4)), 1);
  if (count == 0) {
    for (int64_t& dim : target) dim = b_.dim();
    target[static_cast<size_t>(b_.range(0, static_cast<int64_t>(target.size()) - 1))] = 0;
  } else {
    int64_t left = count;
    for (int64_t p = 2; left > 1; ++p) {
      while (left % p == 0) {
        target[static_cast<size_t>(b_.range(0, static_cast<int64_t>(target.size()) - 1))] *= p;
        left /= p;
      }
    }
  }
  const bool allow_zero = b_.opset() >= 14 && b_.one_in(4);
  std::vector<int64_t> shape = target;
  for (size_t i = 0; i < shape.size(); ++i) {
    bool copies = i < x.dims.size() && x.dims[i] == target[i];
    if (target[i] == 0 && !allow_zero && !copies) return false;  // 0 would copy x's dim
    if (copies && !allow_zero && b_.one_in(3)) shape[i] = 0;
  }
  if (count > 0 && !shape.empty() && b_.coin()) {
    shape[static_cast<size_t>(b_.range(0, static_cast<int64_t>(shape.size()) - 1))] = -1;
  }
  onnx::NodeProto* node = b_.add_node(op, {x.name, b_.ints(shape).name});
  if (allow_zero) ModelBuilder::set_int(node, "allowzero", 1);
  output(node, x.dtype, target);
  return true;
}

bool Generator::flatten(const std::string& op) {
  GenValue x = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(x);
  const int64_t a = b_.range(0, rank);
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  if (a != 1 || b_.coin()) ModelBuilder::set_int(node, "axis", axis(a, rank));
  Dims outer(x.dims.begin(), x.dims.begin() + a);
  Dims inner(x.dims.begin() + a, x.dims.end());
  output(node, x.dtype, {element_count(outer), element_count(inner)});
  return true;
}

bool Generator::squeeze(const std::string& op) {
  const bool squeezing = op == "Squeeze";
  GenValue x = input(DTypeClass::kAny, 0, squeezing ? 4 : 3);
  const int64_t rank = rank_of(x);
  std::vector<int64_t> axes;
  Dims dims;
  if (squeezing) {
    bool all = b_.one_in(3);
    for (int64_t i = 0; i < rank; ++i) {
      bool one = x.dims[static_cast<size_t>(i)] == 1;
      if (one && (all || b_.coin())) {
        if (!all) axes.push_back(axis(i, rank));
        continue;
      }
      dims.push_back(x.dims[static_cast<size_t>(i)]);
    }
    if (!all && axes.empty()) return false;
  } else {
    const int64_t out_rank = rank + b_.range(1, 2);
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t n = out_rank - rank; n > 0;) {
      int64_t i = b_.range(0, out_rank - 1);
      if (inserted[static_cast<size_t>(i)]) {
        i = std::find(inserted.begin(), inserted.end(), false) - inserted.begin();
      }
      inserted[static_cast<size_t>(i)] = true;
      axes.push_back(axis(i, out_rank));
      --n;
    }
    size_t next = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      dims.push_back(inserted[static_cast<size_t>(i)] ? 1 : x.dims[next++]);
    }
  }
  std::vector<std::string> inputs = {x.name};
  if (b_.opset() >= 13 && !axes.empty()) inputs.push_back(b_.ints(axes).name);
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (b_.opset() < 13 && !axes.empty()) ModelBuilder::set_ints(node, "axes", axes);
  output(node, x.dtype, dims);
  return true;
}

bool Generator::shape_of(const std::string& op) {
  GenValue x = input(DTypeClass::kAny);
  const int64_t rank = rank_of(x);
  if (op == "Size") {
    output(b_.add_node(op, {x.name}), DType::kInt64, {});
    return true;
  }
  // Opset 15's start and end: negative ones count from the back, both clamp to [0, rank].
  const bool sliced = b_.opset() >= 15 && b_.coin();
  const int64_t start = sliced ? b_.range(-rank - 1, rank + 1) : 0;
  const int64_t end = sliced ? b_.range(-rank - 1, rank + 1) : rank;
  auto clamped = [rank](int64_t bound) {
    return std::clamp<int64_t>(bound < 0 ? bound + rank : bound, 0, rank);
  };
  const Dims dims = {std::max<int64_t>(clamped(end) - clamped(start), 0)};
  if (!fits(dims)) return false;
  onnx::NodeProto* node = b_.add_node(op, {x.name});
  if (sliced) {
    ModelBuilder::set_int(node, "start", start);
    ModelBuilder::set_int(node, "end", end);
  }
  output(node, DType::kInt64, dims);
  return true;
}

bool Generator::constant_of_shape(const std::string& op) {
  // The shape from a Shape node (a shape chain to fold) or a constant.
  Dims dims = b_.shape(0, 4);
  GenValue shape;
  std::optional<GenValue> source =
      b_.find([](const GenValue& value) { return !value.dims.empty(); });
  if (source && b_.coin()) {
    dims = source->dims;
    onnx::NodeProto* node = b_.add_node("Shape", {source->name});
    shape = output(node, DType::kInt64, {static_cast<int64_t>(dims.size())});
  } else {
    shape = b_.ints(dims);
  }
  onnx::NodeProto* node = b_.add_node(op, {shape.name});
  DType dtype = DType::kFloat32;
  if (b_.coin()) {
    dtype = b_.dtype(DTypeClass::kAny);
    b_.set_scalar_tensor(node, "value", dtype);
  }
  output(node, dtype, dims);
  return true;
}

bool Generator::range(const std::string& op) {
  const bool integer = b_.coin();
  const int64_t length = b_.range(min_dim(), 12);
  static const std::vector<int64_t> deltas = {1, 2, 3, -1, -2, 4};
  const int64_t delta = b_.pick(deltas);
  const int64_t start = b_.range(-8, 8);
  // ceil((limit - start) / delta) = length: the last step may overshoot by up to
  // |delta| - 1, and an empty range may point backwards. Floats are these values in
  // quarters, exact in binary floating point.
  const int64_t direction = delta > 0 ? 1 : -1;
  const int64_t limit =
      length > 0 ? start + delta * (length - 1) + direction * b_.range(1, delta * direction)
                 : start - direction * b_.range(0, 3);
  std::vector<std::string> inputs;
  if (integer) {
    DType dtype = b_.coin() ? DType::kInt64 : DType::kInt32;
    for (int64_t value : {start, limit, delta}) inputs.push_back(b_.int_scalar(value, dtype).name);
    output(b_.add_node(op, inputs), dtype, {length});
  } else {
    DType dtype = b_.coin() ? DType::kFloat32 : DType::kFloat64;
    for (int64_t value : {start, limit, delta}) {
      inputs.push_back(b_.float_constant(dtype, {0.25 * static_cast<double>(value)}, {}).name);
    }
    output(b_.add_node(op, inputs), dtype, {length});
  }
  return true;
}

bool Generator::cumsum(const std::string& op) {
  GenValue x = input(DTypeClass::kNumeric, 1);
  if (!(ir::dtype_is_float(x.dtype) || x.dtype == DType::kInt32 || x.dtype == DType::kInt64 ||
        x.dtype == DType::kUInt32 || x.dtype == DType::kUInt64)) {
    return false;
  }
  const int64_t rank = rank_of(x);
  GenValue a =
      b_.int_scalar(axis(b_.range(0, rank - 1), rank), b_.coin() ? DType::kInt64 : DType::kInt32);
  onnx::NodeProto* node = b_.add_node(op, {x.name, a.name});
  if (b_.coin()) ModelBuilder::set_int(node, "exclusive", 1);
  if (b_.coin()) ModelBuilder::set_int(node, "reverse", 1);
  output(node, x.dtype, x.dims);
  return true;
}

bool Generator::scatter_nd(const std::string& op) {
  GenValue data = input(DTypeClass::kAny, 1);
  const int64_t rank = rank_of(data);
  const int64_t k = b_.range(1, rank);
  // Distinct index tuples (ONNX leaves duplicates undefined).
  std::vector<std::vector<int64_t>> tuples;
  for (int64_t n = b_.range(min_dim(), 3); n > 0; --n) {
    std::vector<int64_t> tuple;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t d = data.dims[static_cast<size_t>(i)];
      if (d == 0) return false;
      tuple.push_back(b_.range(-d, d - 1));
    }
    std::vector<int64_t> normalized = tuple;
    for (int64_t i = 0; i < k; ++i) {
      if (normalized[static_cast<size_t>(i)] < 0)
        normalized[static_cast<size_t>(i)] += data.dims[static_cast<size_t>(i)];
    }
    bool duplicate = false;
    for (const std::vector<int64_t>& other : tuples) {
      std::vector<int64_t> seen = other;
      for (int64_t i = 0; i < k; ++i) {
        if (seen[static_cast<size_t>(i)] < 0)
          seen[static_cast<size_t>(i)] += data.dims[static_cast<size_t>(i)];
      }
      duplicate = duplicate || seen == normalized;
    }
    if (!duplicate) tuples.push_back(tuple);
  }
  std::vector<int64_t> flat;
  for (const std::vector<int64_t>& tuple : tuples)
    flat.insert(flat.end(), tuple.begin(), tuple.end());
  const int64_t n = static_cast<int64_t>(tuples.size());
  GenValue indices = b_.int_constant(flat, {n, k});
  Dims update_dims = {n};
  update_dims.insert(update_dims.end(), data.dims.begin() + k, data.dims.end());
  GenValue updates = b_.operand(data.dtype, update_dims);
  output(b_.add_node(op, {data.name, indices.name, updates.name}), data.dtype, data.dims);
  return true;
}

bool Generator::matmul(const std::string& op) {
  GenValue a = input(b_.coin() ? DTypeClass::kFloat : DTypeClass::kNumeric, 1);
  if (!(ir::dtype_is_float(a.dtype) || a.dtype == DType::kInt32 || a.dtype == DType::kInt64 ||
        a.dtype == DType::kUInt32 || a.dtype == DType::kUInt64)) {
    return false;
  }
  const int64_t k = a.dims.back();
  const int64_t b_rank = b_.range(1, 4);
  Dims b_dims;
  if (b_rank == 1) {
    b_dims = {k};
  } else {
    Dims a_batch(a.dims.begin(), a.dims.end() - std::min<int64_t>(rank_of(a), 2));
    b_dims.assign(
        a_batch.end() - std::min<int64_t>(static_cast<int64_t>(a_batch.size()), b_rank - 2),
        a_batch.end());
    for (int64_t& dim : b_dims) {
      if (b_.one_in(3)) dim = 1;
    }
    while (static_cast<int64_t>(b_dims.size()) < b_rank - 2)
      b_dims.insert(b_dims.begin(), b_.dim());
    b_dims.push_back(k);
    b_dims.push_back(b_.dim());
  }
  // numpy.matmul: 1-D operands gain a dim that the result drops again.
  Dims a_batch(a.dims.begin(), a.dims.end() - std::min<int64_t>(rank_of(a), 2));
  Dims b_batch(b_dims.begin(), b_dims.end() - std::min<int64_t>(b_rank, 2));
  std::optional<Dims> dims = broadcast(a_batch, b_batch);
  if (!dims) return false;
  if (rank_of(a) >= 2) dims->push_back(a.dims[a.dims.size() - 2]);
  if (b_rank >= 2) dims->push_back(b_dims.back());
  if (!fits(*dims) || !fits(b_dims)) return false;
  GenValue b = b_.operand(a.dtype, b_dims);
  output(b_.add_node(op, {a.name, b.name}), a.dtype, *dims);
  return true;
}

bool Generator::gemm(const std::string& op) {
  GenValue a = input(DTypeClass::kFloat, 2, 2);
  const bool trans_a = b_.coin();
  const bool trans_b = b_.coin();
  const int64_t m = a.dims[trans_a ? 1 : 0];
  const int64_t k = a.dims[trans_a ? 0 : 1];
  const int64_t n = b_.dim();
  GenValue b = b_.operand(a.dtype, trans_b ? Dims{n, k} : Dims{k, n});
  std::vector<std::string> inputs = {a.name, b.name};
  if (b_.opset() < 11 || b_.coin()) {
    const std::vector<Dims> c_shapes = {{}, {n}, {1, n}, {m, 1}, {m, n}, {1}, {1, 1}};
    inputs.push_back(b_.operand(a.dtype, b_.pick(c_shapes)).name);
  }
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (trans_a) ModelBuilder::set_int(node, "transA", 1);
  if (trans_b) ModelBuilder::set_int(node, "transB", 1);
  if (b_.coin()) ModelBuilder::set_float(node, "alpha", static_cast<float>(b_.float_value()));
  if (b_.coin()) ModelBuilder::set_float(node, "beta", static_cast<float>(b_.float_value()));
  output(node, a.dtype, {m, n});
  return true;
}

bool Generator::conv_or_pool(const std::string& op) {
  const bool conv = op == "Conv";
  GenValue x = input(DTypeClass::kFloat, 3, 4);
  if (x.dtype == DType::kBFloat16) return false;
  const int64_t spatial = rank_of(x) - 2;
  const int64_t channels = x.dims[1];
  if (conv && channels == 0) return false;
  std::vector<int64_t> kernel, strides, dilations, begins, ends;
  Dims dims = {x.dims[0], channels};
  const bool dilated = (conv || (op == "MaxPool" && b_.opset() >= 10)) && b_.coin();
  for (int64_t i = 0; i < spatial; ++i) {
    const int64_t d = x.dims[static_cast<size_t>(2 + i)];
    kernel.push_back(b_.range(1, 3));
    strides.push_back(b_.range(1, 2));
    dilations.push_back(dilated ? b_.range(1, 2) : 1);
    // ONNX Runtime wants pads smaller than the kernel.
    begins.push_back(b_.range(0, kernel.back() - 1));
    ends.push_back(b_.range(0, kernel.back() - 1));
    const int64_t extent =
        d + begins.back() + ends.back() - (dilations.back() * (kernel.back() - 1) + 1);
    if (extent < 0) return false;
    dims.push_back(extent / strides.back() + 1);
  }
  std::vector<std::string> inputs = {x.name};
  if (conv) {
    std::vector<int64_t> divisors;
    for (int64_t g = 1; g <= channels; ++g) {
      if (channels % g == 0) divisors.push_back(g);
    }
    const int64_t group = b_.pick(divisors);
    const int64_t out_channels = group * b_.range(1, 3);
    Dims weight = {out_channels, channels / group};
    weight.insert(weight.end(), kernel.begin(), kernel.end());
    dims[1] = out_channels;
    if (!fits(weight) || !fits(dims)) return false;
    inputs.push_back(b_.operand(x.dtype, weight).name);
    if (b_.coin()) inputs.push_back(b_.operand(x.dtype, {out_channels}).name);
    onnx::NodeProto* node = b_.add_node(op, inputs);
    if (group != 1) ModelBuilder::set_int(node, "group", group);
    if (b_.coin()) ModelBuilder::set_ints(node, "kernel_shape", kernel);
    if (dilated) ModelBuilder::set_ints(node, "dilations", dilations);
    std::vector<int64_t> pads = begins;
    pads.insert(pads.end(), ends.begin(), ends.end());
    ModelBuilder::set_ints(node, "pads", pads);
    ModelBuilder::set_ints(node, "strides", strides);
    output(node, x.dtype, dims);
    return true;
  }
  onnx::NodeProto* node = b_.add_node(op, inputs);
  ModelBuilder::set_ints(node, "kernel_shape", kernel);
  std::vector<int64_t> pads = begins;
  pads.insert(pads.end(), ends.begin(), ends.end());
  ModelBuilder::set_ints(node, "pads", pads);
  ModelBuilder::set_ints(node, "strides", strides);
  if (dilated) ModelBuilder::set_ints(node, "dilations", dilations);
  if (op == "AveragePool" && b_.coin()) ModelBuilder::set_int(node, "count_include_pad", 1);
  output(node, x.dtype, dims);
  return true;
}

bool Generator::global_pool(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat, 3, 4);
  if (x.dtype == DType::kBFloat16) return false;
  Dims dims(x.dims.size(), 1);
  dims[0] = x.dims[0];
  dims[1] = x.dims[1];
  output(b_.add_node(op, {x.name}), x.dtype, dims);
  return true;
}

bool Generator::topk(const std::string& op) {
  GenValue x = input(DTypeClass::kNumeric, 1);
  const int64_t rank = rank_of(x);
  const int64_t a = b_.range(0, rank - 1);
  const int64_t d = x.dims[static_cast<size_t>(a)];
  if (b_.opset() < 10 && d == 0) return false;  // the k attribute is at least 1
  const int64_t k = b_.range(std::max<int64_t>(b_.opset() < 10 ? 1 : 0, min_dim()), d);
  std::vector<std::string> inputs = {x.name};
  if (b_.opset() >= 10) inputs.push_back(b_.ints({k}).name);
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (b_.opset() < 10) ModelBuilder::set_int(node, "k", k);
  if (a != rank - 1 || b_.coin()) ModelBuilder::set_int(node, "axis", axis(a, rank));
  if (b_.opset() >= 11 && b_.coin()) ModelBuilder::set_int(node, "largest", 0);
  Dims dims = x.dims;
  dims[static_cast<size_t>(a)] = k;
  output(node, x.dtype, dims);
  output(node, DType::kInt64, dims);
  return true;
}

bool Generator::einsum(const std::string& op) {
  static const std::vector<std::string> equations = {"ij,jk->ik", "bij,bjk->bik", "ij->ji",
                                                     "ij->i",     "i,i->",        "ii->i",
                                                     "ij,ij->ij", "ij,jk",        "ij->"};
  const std::string& equation = b_.pick(equations);
  std::map<char, int64_t> size;
  for (char c : equation) {
    if (c >= 'a' && c <= 'z' && size.count(c) == 0) size[c] = b_.dim();
  }
  const DType dtype = b_.coin() ? DType::kFloat32 : b_.dtype(DTypeClass::kFloat);
  std::vector<std::string> inputs;
  Dims dims;
  std::string term;
  const size_t arrow = equation.find("->");
  const std::string operands = equation.substr(0, arrow);
  for (size_t i = 0; i <= operands.size(); ++i) {
    if (i == operands.size() || operands[i] == ',') {
      Dims operand_dims;
      for (char c : term) operand_dims.push_back(size[c]);
      inputs.push_back(b_.operand(dtype, operand_dims).name);
      term.clear();
    } else {
      term += operands[i];
    }
  }
  if (arrow != std::string::npos) {
    for (char c : equation.substr(arrow + 2)) dims.push_back(size[c]);
  } else {
    for (auto [c, n] : size) {  // implicit output: letters that occur once, sorted
      if (std::count(equation.begin(), equation.end(), c) == 1) dims.push_back(n);
    }
  }
  onnx::NodeProto* node = b_.add_node(op, inputs);
  ModelBuilder::set_string(node, "equation", equation);
  output(node, dtype, dims);
  return true;
}

bool Generator::resize(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat, 1, 4);
  if (x.dtype == DType::kBFloat16) return false;
  Dims dims;
  std::vector<std::string> inputs = {x.name, ""};
  if (b_.coin()) {
    static const std::vector<double> scales = {1, 2, 0.5, 1.5, 3};
    std::vector<double> chosen;
    for (int64_t d : x.dims) {
      chosen.push_back(b_.pick(scales));
      dims.push_back(static_cast<int64_t>(std::floor(static_cast<double>(d) * chosen.back())));
    }
    inputs.push_back(b_.float_constant(DType::kFloat32, chosen, {rank_of(x)}).name);
  } else {
    for (size_t i = 0; i < x.dims.size(); ++i) dims.push_back(b_.dim());
    inputs.push_back("");
    inputs.push_back(b_.ints(dims).name);
  }
  if (!fits(dims)) return false;
  onnx::NodeProto* node = b_.add_node(op, inputs);
  if (b_.coin()) ModelBuilder::set_string(node, "mode", "nearest");
  output(node, x.dtype, dims);
  return true;
}

bool Generator::lstm(const std::string& op) {
  GenValue x = input(DTypeClass::kFloat, 3, 3);
  if (x.dtype == DType::kBFloat16) return false;
  const int64_t hidden = b_.range(1, 4);
  const int64_t sequence = x.dims[0];
  const int64_t batch = x.dims[1];
  std::vector<std::string> inputs = {x.name, b_.constant(x.dtype, {1, 4 * hidden, x.dims[2]}).name,
                                     b_.constant(x.dtype, {1, 4 * hidden, hidden}).name};
  if (b_.coin()) inputs.push_back(b_.constant(x.dtype, {1, 8 * hidden}).name);
  onnx::NodeProto* node = b_.add_node(op, inputs);
  ModelBuilder::set_int(node, "hidden_size", hidden);
  output(node, x.dtype, {sequence, 1, batch, hidden});
  if (b_.coin()) output(node, x.dtype, {1, batch, hidden});
  return true;
}

bool Generator::custom(const std::string& op) {
  // An op of a domain nobody knows: Opaque, passed through with its declared type.
  GenValue x = input(DTypeClass::kAny);
  b_.use_domain("com.example.fuzz");
  onnx::NodeProto* node = b_.add_node(op, {x.name}, "com.example.fuzz");
  b_.declare(output(node, x.dtype, x.dims));
  return true;
}

bool Generator::wide(const std::string&) {
  GenValue x = input(DTypeClass::kFloat, 0, 2);
  const int64_t count = b_.range(1000, 3000);
  const bool concat = b_.coin() && !x.dims.empty() && x.dims[0] * count <= kMaxElements &&
                      b_.options().excluded_ops.count("Concat") == 0;
  std::vector<std::string> inputs(static_cast<size_t>(count), x.name);
  onnx::NodeProto* node = b_.add_node(concat ? "Concat" : "Sum", inputs);
  Dims dims = x.dims;
  if (concat) {
    ModelBuilder::set_int(node, "axis", 0);
    dims[0] *= count;
  }
  output(node, x.dtype, dims);
  return true;
}

bool Generator::chain(const std::string&) {
  GenValue x = input(DTypeClass::kFloat, 0, 2);
  for (int64_t n = b_.range(200, 1000); n > 0; --n) {
    x = output(b_.add_node(n % 2 == 0 ? "Neg" : "Identity", {x.name}), x.dtype, x.dims);
  }
  return true;
}

}  // namespace stitch::fuzz::detail

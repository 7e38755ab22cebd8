// Reference kernel of LSTM (all directions, activations with alpha/beta, peepholes,
// sequence lengths); gates accumulate in double.
#include <algorithm>
#include <cmath>

#include "ir/reference/reference_ops.h"

namespace stitch::ir::reference {
namespace {
// One LSTM activation function with its alpha and beta.
struct Activation {
  std::string name;
  double alpha = 0;
  double beta = 0;
  double operator()(double x) const {
    if (name == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
    if (name == "Tanh") return std::tanh(x);
    if (name == "Relu") return x < 0.0 ? 0.0 : x;  // NaN stays, as the Relu op's
    if (name == "HardSigmoid") return std::clamp(alpha * x + beta, 0.0, 1.0);
    if (name == "LeakyRelu") return x >= 0 ? x : alpha * x;
    if (name == "ThresholdedRelu") return x > alpha ? x : 0.0;
    if (name == "ScaledTanh") return alpha * std::tanh(beta * x);
    if (name == "Affine") return alpha * x + beta;
    if (name == "Elu") return x >= 0 ? x : alpha * (std::exp(x) - 1.0);
    if (name == "Softsign") return x / (1.0 + std::fabs(x));
    return std::log1p(std::exp(x));  // Softplus
  }
};

Result<std::vector<Activation>> lstm_activations(const KernelContext& ctx, size_t directions) {
  std::vector<std::string> names;
  if (const Attribute* attribute = ctx.node.find_attribute("activations"))
    names = attribute->strings;
  if (names.empty()) {
    for (size_t d = 0; d < directions; ++d) names.insert(names.end(), {"Sigmoid", "Tanh", "Tanh"});
  }
  if (names.size() != 3 * directions) {
    return ctx.error("has " + std::to_string(names.size()) + " activations for " +
                     std::to_string(directions) + " directions; give 3 per direction");
  }
  std::vector<float> alphas = floats_attribute(ctx.node, "activation_alpha", {});
  std::vector<float> betas = floats_attribute(ctx.node, "activation_beta", {});
  size_t next_alpha = 0;
  size_t next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    Activation f{name};
    struct Defaults {
      const char* name;
      double alpha;
      double beta;
      bool uses_alpha;
      bool uses_beta;
    };
    static const Defaults defaults[] = {
        {"Sigmoid", 0, 0, false, false},      {"Tanh", 0, 0, false, false},
        {"Relu", 0, 0, false, false},         {"HardSigmoid", 0.2, 0.5, true, true},
        {"LeakyRelu", 0.01, 0, true, false},  {"ThresholdedRelu", 1.0, 0, true, false},
        {"ScaledTanh", 1.0, 1.0, true, true}, {"Affine", 1.0, 0, true, true},
        {"Elu", 1.0, 0, true, false},         {"Softsign", 0, 0, false, false},
        {"Softplus", 0, 0, false, false},
    };
    const Defaults* found = nullptr;
    for (const Defaults& entry : defaults) {
      if (name == entry.name) found = &entry;
    }
    if (found == nullptr) {
      return ctx.error("has activation \"" + name +
                       "\", which has no reference evaluation; use "
                       "Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, ThresholdedRelu, "
                       "ScaledTanh, Affine, Elu, Softsign or Softplus");
    }
    f.alpha = found->alpha;
    f.beta = found->beta;
    if (found->uses_alpha && next_alpha < alphas.size()) f.alpha = alphas[next_alpha++];
    if (found->uses_beta && next_beta < betas.size()) f.beta = betas[next_beta++];
    result.push_back(f);
  }
  return result;
}

KernelResult lstm_kernel(const KernelContext& ctx) {
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor& r = *ctx.input(2);
  for (size_t i : {0, 1, 2, 3, 5, 6, 7}) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  const std::string direction = ctx.node.string_attribute("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return ctx.error("has direction \"" + direction + "\"; use forward, reverse or bidirectional");
  }
  const int64_t directions = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = ctx.node.int_attribute("layout", 0) != 0;
  if (x.dims.size() != 3 || w.dims.size() != 3 || r.dims.size() != 3) {
    return ctx.error("X, W and R must have rank 3; fix their shapes");
  }
  const int64_t steps = batch_first ? x.dims[1] : x.dims[0];
  const int64_t batch = batch_first ? x.dims[0] : x.dims[1];
  const int64_t input_size = x.dims[2];
  const int64_t hidden = ctx.node.int_attribute("hidden_size", r.dims[2]);
  if (w.dims[0] != directions || w.dims[1] != 4 * hidden || w.dims[2] != input_size ||
      r.dims[0] != directions || r.dims[1] != 4 * hidden || r.dims[2] != hidden) {
    return ctx.error("W " + dims_string(w.dims) + " or R " + dims_string(r.dims) +
                     " do not match hidden_size " + std::to_string(hidden) + ", " +
                     std::to_string(directions) + " directions and input size " +
                     std::to_string(input_size) + "; fix the shapes");
  }
  STITCH_ASSIGN_OR_RETURN(std::vector<Activation> activations,
                          lstm_activations(ctx, static_cast<size_t>(directions)));
  const Attribute* clip_attribute = ctx.node.find_attribute("clip");
  const double clip = clip_attribute != nullptr ? clip_attribute->f : 0.0;
  const bool input_forget = ctx.node.int_attribute("input_forget", 0) != 0;
  std::vector<double> xs = doubles_of(x);
  std::vector<double> ws = doubles_of(w);
  std::vector<double> rs = doubles_of(r);
  const int64_t gates = 4 * hidden;
  auto optional_values = [&](size_t index, int64_t count,
                             const char* what) -> Result<std::vector<double>> {
    const Tensor* tensor = ctx.input(index);
    if (tensor == nullptr) return std::vector<double>(static_cast<size_t>(count), 0.0);
    if (tensor->num_elements() != count) {
      return ctx.error(std::string(what) + " has " + std::to_string(tensor->num_elements()) +
                       " elements, expected " + std::to_string(count) + "; fix its shape");
    }
    return doubles_of(*tensor);
  };
  STITCH_ASSIGN_OR_RETURN(std::vector<double> bs, optional_values(3, directions * 2 * gates, "B"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> h0,
                          optional_values(5, directions * batch * hidden, "initial_h"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> c0,
                          optional_values(6, directions * batch * hidden, "initial_c"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> ps, optional_values(7, directions * 3 * hidden, "P"));
  std::vector<int64_t> lengths(static_cast<size_t>(batch), steps);
  if (const Tensor* sequence_lens = ctx.input(4)) {
    if (sequence_lens->num_elements() != batch || !dtype_is_integer(sequence_lens->dtype)) {
      return ctx.error("sequence_lens must be int32 of shape [batch]; fix it");
    }
    lengths = sequence_lens->to_int64_vector();
    for (int64_t length : lengths) {
      if (length < 0 || length > steps) {
        return ctx.error("sequence_lens has " + std::to_string(length) + " outside [0, " +
                         std::to_string(steps) + "]; fix it");
      }
    }
  }
  // State tensors [directions, batch, hidden] (batch-major with layout=1).
  auto state_index = [&](int64_t d, int64_t b) {
    return batch_first ? (b * directions + d) * hidden : (d * batch + b) * hidden;
  };
  std::vector<double> y(static_cast<size_t>(steps * directions * batch * hidden), 0.0);
  std::vector<double> y_h(static_cast<size_t>(directions * batch * hidden), 0.0);
  std::vector<double> y_c(y_h.size(), 0.0);
  std::vector<double> gate(static_cast<size_t>(gates));
  std::vector<double> h(static_cast<size_t>(hidden));
  std::vector<double> c(static_cast<size_t>(hidden));
  auto clipped = [clip](double v) { return clip > 0 ? std::clamp(v, -clip, clip) : v; };
  for (int64_t d = 0; d < directions; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation& f = activations[static_cast<size_t>(3 * d)];
    const Activation& g = activations[static_cast<size_t>(3 * d + 1)];
    const Activation& hf = activations[static_cast<size_t>(3 * d + 2)];
    const double* wd = ws.data() + d * gates * input_size;
    const double* rd = rs.data() + d * gates * hidden;
    const double* wb = bs.data() + d * 2 * gates;
    const double* rb = wb + gates;
    const double* pi = ps.data() + d * 3 * hidden;
    const double* po = pi + hidden;
    const double* pf = po + hidden;
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t state = state_index(d, b);
      // initial_h and initial_c follow the layout, as Y_h and Y_c do.
      std::copy(h0.begin() + state, h0.begin() + state + hidden, h.begin());
      std::copy(c0.begin() + state, c0.begin() + state + hidden, c.begin());
      const int64_t length = lengths[static_cast<size_t>(b)];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = reverse ? length - 1 - s : s;
        const double* xt =
            xs.data() + (batch_first ? (b * steps + t) : (t * batch + b)) * input_size;
        for (int64_t k = 0; k < gates; ++k) {
          double sum = wb[k] + rb[k];
          const double* wrow = wd + k * input_size;
          for (int64_t i = 0; i < input_size; ++i) sum += wrow[i] * xt[i];
          const double* rrow = rd + k * hidden;
          for (int64_t i = 0; i < hidden; ++i) sum += rrow[i] * h[static_cast<size_t>(i)];
          gate[static_cast<size_t>(k)] = sum;
        }
        for (int64_t j = 0; j < hidden; ++j) {
          auto sj = static_cast<size_t>(j);
          const double c_prev = c[sj];
          const double in_gate = f(clipped(gate[sj] + pi[j] * c_prev));
          const double forget =
              input_forget ? 1.0 - in_gate
                           : f(clipped(gate[static_cast<size_t>(2 * hidden + j)] + pf[j] * c_prev));
          const double candidate = g(clipped(gate[static_cast<size_t>(3 * hidden + j)]));
          const double c_new = forget * c_prev + in_gate * candidate;
          const double out_gate = f(clipped(gate[static_cast<size_t>(hidden + j)] + po[j] * c_new));
          c[sj] = c_new;
          h[sj] = out_gate * hf(c_new);
        }
        const int64_t y_base = batch_first ? ((b * steps + t) * directions + d) * hidden
                                           : ((t * directions + d) * batch + b) * hidden;
        std::copy(h.begin(), h.end(), y.begin() + y_base);
      }
      std::copy(h.begin(), h.end(), y_h.begin() + state);
      std::copy(c.begin(), c.end(), y_c.begin() + state);
    }
  }
  auto to_tensor = [&](std::vector<int64_t> dims, const std::vector<double>& values) {
    return tensor_of_doubles(x.dtype, std::move(dims), values);
  };
  std::vector<Tensor> outputs;
  outputs.push_back(to_tensor(batch_first ? std::vector<int64_t>{batch, steps, directions, hidden}
                                          : std::vector<int64_t>{steps, directions, batch, hidden},
                              y));
  std::vector<int64_t> state_dims = batch_first ? std::vector<int64_t>{batch, directions, hidden}
                                                : std::vector<int64_t>{directions, batch, hidden};
  outputs.push_back(to_tensor(state_dims, y_h));
  outputs.push_back(to_tensor(state_dims, y_c));
  return outputs;
}

}  // namespace

void add_recurrent_kernels(KernelTable& table) { table["LSTM"] = lstm_kernel; }

}  // namespace stitch::ir::reference

// Reference kernels of LSTM (all directions, activations with alpha/beta, peepholes,
// sequence lengths), GRU (linear_before_reset both ways) and RNN; gates accumulate in
// double.
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

// The node's activations, `defaults` per direction when it gives none (LSTM: f, g, h;
// GRU: f, g; RNN: f).
Result<std::vector<Activation>> recurrent_activations(const KernelContext& ctx, size_t directions,
                                                      const std::vector<std::string>& defaults) {
  std::vector<std::string> names;
  if (const Attribute* attribute = ctx.node.find_attribute("activations"))
    names = attribute->strings;
  if (names.empty()) {
    for (size_t d = 0; d < directions; ++d)
      names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * directions) {
    return ctx.error("has " + std::to_string(names.size()) + " activations for " +
                     std::to_string(directions) + " directions; give " +
                     std::to_string(defaults.size()) + " per direction");
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

// What LSTM, GRU and RNN share: X, W, R (with `gate_count` gates per direction),
// direction, layout, the optional inputs and sequence_lens.
struct Recurrent {
  std::string direction;
  int64_t directions = 1;
  bool batch_first = false;
  int64_t steps = 0;
  int64_t batch = 0;
  int64_t input_size = 0;
  int64_t hidden = 0;
  int64_t gates = 0;             // gate_count * hidden
  std::vector<int64_t> lengths;  // per batch entry
  std::vector<double> xs, ws, rs;
  double clip = 0;
  // The state tensors' offset of (direction, batch entry): [directions, batch, hidden],
  // batch-major with layout=1.
  int64_t state_index(int64_t d, int64_t b) const {
    return batch_first ? (b * directions + d) * hidden : (d * batch + b) * hidden;
  }
  // Y's offset of (step, direction, batch entry).
  int64_t y_index(int64_t t, int64_t d, int64_t b) const {
    return batch_first ? ((b * steps + t) * directions + d) * hidden
                       : ((t * directions + d) * batch + b) * hidden;
  }
  const double* x_at(int64_t t, int64_t b) const {
    return xs.data() + (batch_first ? (b * steps + t) : (t * batch + b)) * input_size;
  }
  double clipped(double v) const { return clip > 0 ? std::clamp(v, -clip, clip) : v; }
};

Result<Recurrent> parse_recurrent(const KernelContext& ctx, int64_t gate_count,
                                  std::initializer_list<size_t> float_inputs) {
  Recurrent rnn;
  const Tensor& x = *ctx.input(0);
  const Tensor& w = *ctx.input(1);
  const Tensor& r = *ctx.input(2);
  for (size_t i : float_inputs) STITCH_RETURN_IF_ERROR(check_float(ctx, i));
  rnn.direction = ctx.node.string_attribute("direction", "forward");
  if (rnn.direction != "forward" && rnn.direction != "reverse" &&
      rnn.direction != "bidirectional") {
    return ctx.error("has direction \"" + rnn.direction +
                     "\"; use forward, reverse or bidirectional");
  }
  rnn.directions = rnn.direction == "bidirectional" ? 2 : 1;
  rnn.batch_first = ctx.node.int_attribute("layout", 0) != 0;
  if (x.dims.size() != 3 || w.dims.size() != 3 || r.dims.size() != 3) {
    return ctx.error("X, W and R must have rank 3; fix their shapes");
  }
  rnn.steps = rnn.batch_first ? x.dims[1] : x.dims[0];
  rnn.batch = rnn.batch_first ? x.dims[0] : x.dims[1];
  rnn.input_size = x.dims[2];
  rnn.hidden = ctx.node.int_attribute("hidden_size", r.dims[2]);
  rnn.gates = gate_count * rnn.hidden;
  if (w.dims[0] != rnn.directions || w.dims[1] != rnn.gates || w.dims[2] != rnn.input_size ||
      r.dims[0] != rnn.directions || r.dims[1] != rnn.gates || r.dims[2] != rnn.hidden) {
    return ctx.error("W " + dims_string(w.dims) + " or R " + dims_string(r.dims) +
                     " do not match hidden_size " + std::to_string(rnn.hidden) + ", " +
                     std::to_string(rnn.directions) + " directions and input size " +
                     std::to_string(rnn.input_size) + "; fix the shapes");
  }
  const Attribute* clip_attribute = ctx.node.find_attribute("clip");
  rnn.clip = clip_attribute != nullptr ? clip_attribute->f : 0.0;
  rnn.xs = doubles_of(x);
  rnn.ws = doubles_of(w);
  rnn.rs = doubles_of(r);
  rnn.lengths.assign(static_cast<size_t>(rnn.batch), rnn.steps);
  if (const Tensor* sequence_lens = ctx.input(4)) {
    if (sequence_lens->num_elements() != rnn.batch || !dtype_is_integer(sequence_lens->dtype)) {
      return ctx.error("sequence_lens must be int32 of shape [batch]; fix it");
    }
    rnn.lengths = sequence_lens->to_int64_vector();
    for (int64_t length : rnn.lengths) {
      if (length < 0 || length > rnn.steps) {
        return ctx.error("sequence_lens has " + std::to_string(length) + " outside [0, " +
                         std::to_string(rnn.steps) + "]; fix it");
      }
    }
  }
  return rnn;
}

std::vector<int64_t> y_dims(const Recurrent& rnn) {
  return rnn.batch_first ? std::vector<int64_t>{rnn.batch, rnn.steps, rnn.directions, rnn.hidden}
                         : std::vector<int64_t>{rnn.steps, rnn.directions, rnn.batch, rnn.hidden};
}
std::vector<int64_t> state_dims(const Recurrent& rnn) {
  return rnn.batch_first ? std::vector<int64_t>{rnn.batch, rnn.directions, rnn.hidden}
                         : std::vector<int64_t>{rnn.directions, rnn.batch, rnn.hidden};
}

// Input `index` as doubles, `count` zeros when absent.
Result<std::vector<double>> optional_values(const KernelContext& ctx, size_t index, int64_t count,
                                            const char* what) {
  const Tensor* tensor = ctx.input(index);
  if (tensor == nullptr) return std::vector<double>(static_cast<size_t>(count), 0.0);
  if (tensor->num_elements() != count) {
    return ctx.error(std::string(what) + " has " + std::to_string(tensor->num_elements()) +
                     " elements, expected " + std::to_string(count) + "; fix its shape");
  }
  return doubles_of(*tensor);
}

KernelResult lstm_kernel(const KernelContext& ctx) {
  STITCH_ASSIGN_OR_RETURN(Recurrent rnn, parse_recurrent(ctx, 4, {0, 1, 2, 3, 5, 6, 7}));
  STITCH_ASSIGN_OR_RETURN(
      std::vector<Activation> activations,
      recurrent_activations(ctx, static_cast<size_t>(rnn.directions), {"Sigmoid", "Tanh", "Tanh"}));
  const bool input_forget = ctx.node.int_attribute("input_forget", 0) != 0;
  const int64_t hidden = rnn.hidden;
  const int64_t gates = rnn.gates;
  const int64_t states = rnn.directions * rnn.batch * hidden;
  STITCH_ASSIGN_OR_RETURN(std::vector<double> bs,
                          optional_values(ctx, 3, rnn.directions * 2 * gates, "B"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> h0, optional_values(ctx, 5, states, "initial_h"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> c0, optional_values(ctx, 6, states, "initial_c"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> ps,
                          optional_values(ctx, 7, rnn.directions * 3 * hidden, "P"));
  std::vector<double> y(static_cast<size_t>(rnn.steps * states), 0.0);
  std::vector<double> y_h(static_cast<size_t>(states), 0.0);
  std::vector<double> y_c(y_h.size(), 0.0);
  std::vector<double> gate(static_cast<size_t>(gates));
  std::vector<double> h(static_cast<size_t>(hidden));
  std::vector<double> c(static_cast<size_t>(hidden));
  for (int64_t d = 0; d < rnn.directions; ++d) {
    const bool reverse = rnn.direction == "reverse" || d == 1;
    const Activation& f = activations[static_cast<size_t>(3 * d)];
    const Activation& g = activations[static_cast<size_t>(3 * d + 1)];
    const Activation& hf = activations[static_cast<size_t>(3 * d + 2)];
    const double* wd = rnn.ws.data() + d * gates * rnn.input_size;
    const double* rd = rnn.rs.data() + d * gates * hidden;
    const double* wb = bs.data() + d * 2 * gates;
    const double* rb = wb + gates;
    const double* pi = ps.data() + d * 3 * hidden;
    const double* po = pi + hidden;
    const double* pf = po + hidden;
    for (int64_t b = 0; b < rnn.batch; ++b) {
      const int64_t state = rnn.state_index(d, b);
      // initial_h and initial_c follow the layout, as Y_h and Y_c do.
      std::copy(h0.begin() + state, h0.begin() + state + hidden, h.begin());
      std::copy(c0.begin() + state, c0.begin() + state + hidden, c.begin());
      const int64_t length = rnn.lengths[static_cast<size_t>(b)];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = reverse ? length - 1 - s : s;
        const double* xt = rnn.x_at(t, b);
        for (int64_t k = 0; k < gates; ++k) {
          double sum = wb[k] + rb[k];
          const double* wrow = wd + k * rnn.input_size;
          for (int64_t i = 0; i < rnn.input_size; ++i) sum += wrow[i] * xt[i];
          const double* rrow = rd + k * hidden;
          for (int64_t i = 0; i < hidden; ++i) sum += rrow[i] * h[static_cast<size_t>(i)];
          gate[static_cast<size_t>(k)] = sum;
        }
        for (int64_t j = 0; j < hidden; ++j) {
          auto sj = static_cast<size_t>(j);
          const double c_prev = c[sj];
          const double in_gate = f(rnn.clipped(gate[sj] + pi[j] * c_prev));
          const double forget =
              input_forget
                  ? 1.0 - in_gate
                  : f(rnn.clipped(gate[static_cast<size_t>(2 * hidden + j)] + pf[j] * c_prev));
          const double candidate = g(rnn.clipped(gate[static_cast<size_t>(3 * hidden + j)]));
          const double c_new = forget * c_prev + in_gate * candidate;
          const double out_gate =
              f(rnn.clipped(gate[static_cast<size_t>(hidden + j)] + po[j] * c_new));
          c[sj] = c_new;
          h[sj] = out_gate * hf(c_new);
        }
        std::copy(h.begin(), h.end(), y.begin() + rnn.y_index(t, d, b));
      }
      std::copy(h.begin(), h.end(), y_h.begin() + state);
      std::copy(c.begin(), c.end(), y_c.begin() + state);
    }
  }
  const DType dtype = ctx.input(0)->dtype;
  std::vector<Tensor> outputs;
  outputs.push_back(tensor_of_doubles(dtype, y_dims(rnn), y));
  outputs.push_back(tensor_of_doubles(dtype, state_dims(rnn), y_h));
  outputs.push_back(tensor_of_doubles(dtype, state_dims(rnn), y_c));
  return outputs;
}

// GRU (gates z, r, h) when `gate_count` == 3, RNN (one gate) when 1: Y and Y_h.
//   z = f(x Wz + h Rz + Wbz + Rbz), r = f(x Wr + h Rr + Wbr + Rbr)
//   n = g(x Wh + (r * h) Rh + Rbh + Wbh)          linear_before_reset = 0
//   n = g(x Wh + r * (h Rh + Rbh) + Wbh)          linear_before_reset != 0
//   h' = (1 - z) * n + z * h
//   RNN: h' = f(x Wi + h Ri + Wbi + Rbi)
KernelResult gru_or_rnn_kernel(const KernelContext& ctx, int64_t gate_count) {
  STITCH_ASSIGN_OR_RETURN(Recurrent rnn, parse_recurrent(ctx, gate_count, {0, 1, 2, 3, 5}));
  const std::vector<std::string> defaults = gate_count == 3
                                                ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                : std::vector<std::string>{"Tanh"};
  STITCH_ASSIGN_OR_RETURN(
      std::vector<Activation> activations,
      recurrent_activations(ctx, static_cast<size_t>(rnn.directions), defaults));
  const bool linear_before_reset = ctx.node.int_attribute("linear_before_reset", 0) != 0;
  const int64_t hidden = rnn.hidden;
  const int64_t gates = rnn.gates;
  const int64_t states = rnn.directions * rnn.batch * hidden;
  STITCH_ASSIGN_OR_RETURN(std::vector<double> bs,
                          optional_values(ctx, 3, rnn.directions * 2 * gates, "B"));
  STITCH_ASSIGN_OR_RETURN(std::vector<double> h0, optional_values(ctx, 5, states, "initial_h"));
  std::vector<double> y(static_cast<size_t>(rnn.steps * states), 0.0);
  std::vector<double> y_h(static_cast<size_t>(states), 0.0);
  std::vector<double> input_part(static_cast<size_t>(gates));
  std::vector<double> state_part(static_cast<size_t>(gates));
  std::vector<double> h(static_cast<size_t>(hidden));
  std::vector<double> z(static_cast<size_t>(hidden));
  std::vector<double> reset_h(static_cast<size_t>(hidden));
  // Row `row` of a [gates, n] matrix times a vector.
  auto product = [](const double* matrix, int64_t n, const double* vector, int64_t row) {
    double sum = 0;
    const double* values = matrix + row * n;
    for (int64_t i = 0; i < n; ++i) sum += values[i] * vector[i];
    return sum;
  };
  for (int64_t d = 0; d < rnn.directions; ++d) {
    const bool reverse = rnn.direction == "reverse" || d == 1;
    const Activation& f = activations[static_cast<size_t>(gate_count == 3 ? 2 * d : d)];
    const Activation& g = gate_count == 3 ? activations[static_cast<size_t>(2 * d + 1)] : f;
    const double* wd = rnn.ws.data() + d * gates * rnn.input_size;
    const double* rd = rnn.rs.data() + d * gates * hidden;
    const double* wb = bs.data() + d * 2 * gates;
    const double* rb = wb + gates;
    for (int64_t b = 0; b < rnn.batch; ++b) {
      const int64_t state = rnn.state_index(d, b);
      std::copy(h0.begin() + state, h0.begin() + state + hidden, h.begin());
      const int64_t length = rnn.lengths[static_cast<size_t>(b)];
      for (int64_t s = 0; s < length; ++s) {
        const int64_t t = reverse ? length - 1 - s : s;
        const double* xt = rnn.x_at(t, b);
        for (int64_t k = 0; k < gates; ++k) {
          input_part[static_cast<size_t>(k)] = wb[k] + product(wd, rnn.input_size, xt, k);
          state_part[static_cast<size_t>(k)] = rb[k] + product(rd, hidden, h.data(), k);
        }
        if (gate_count == 1) {
          for (int64_t j = 0; j < hidden; ++j) {
            auto sj = static_cast<size_t>(j);
            h[sj] = f(rnn.clipped(input_part[sj] + state_part[sj]));
          }
        } else {
          for (int64_t j = 0; j < hidden; ++j) {
            auto sj = static_cast<size_t>(j);
            z[sj] = f(rnn.clipped(input_part[sj] + state_part[sj]));
            const double reset = f(rnn.clipped(input_part[static_cast<size_t>(hidden + j)] +
                                               state_part[static_cast<size_t>(hidden + j)]));
            reset_h[sj] = reset * h[sj];
            // linear_before_reset: the reset scales (h Rh + Rbh), kept in state_part.
            if (linear_before_reset) state_part[static_cast<size_t>(2 * hidden + j)] *= reset;
          }
          for (int64_t j = 0; j < hidden; ++j) {
            auto sj = static_cast<size_t>(j);
            const auto row = static_cast<size_t>(2 * hidden + j);
            const double candidate =
                linear_before_reset
                    ? g(rnn.clipped(input_part[row] + state_part[row]))
                    : g(rnn.clipped(input_part[row] + rb[2 * hidden + j] +
                                    product(rd, hidden, reset_h.data(), 2 * hidden + j)));
            h[sj] = (1.0 - z[sj]) * candidate + z[sj] * h[sj];
          }
        }
        std::copy(h.begin(), h.end(), y.begin() + rnn.y_index(t, d, b));
      }
      std::copy(h.begin(), h.end(), y_h.begin() + state);
    }
  }
  const DType dtype = ctx.input(0)->dtype;
  std::vector<Tensor> outputs;
  outputs.push_back(tensor_of_doubles(dtype, y_dims(rnn), y));
  outputs.push_back(tensor_of_doubles(dtype, state_dims(rnn), y_h));
  return outputs;
}

}  // namespace

void add_recurrent_kernels(KernelTable& table) {
  table["LSTM"] = lstm_kernel;
  table["GRU"] = [](const KernelContext& ctx) { return gru_or_rnn_kernel(ctx, 3); };
  table["RNN"] = [](const KernelContext& ctx) { return gru_or_rnn_kernel(ctx, 1); };
}

}  // namespace stitch::ir::reference

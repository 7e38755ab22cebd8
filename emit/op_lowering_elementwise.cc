// Op lowerings of the elementwise ops (see op_lowering.h): unary float math,
// activations, casts, clamps, selects, variadic and binary arithmetic, each an index
// function of its operands read at the output's flat index (broadcast where the
// operand is smaller). Most bodies start with the head `const T x = <operand 0>;`.
// NaN handling follows the reference interpreter (docs/semantics.md).
#include <string>
#include <utility>

#include "emit/cuda_text.h"
#include "emit/op_lowering.h"

namespace stitch::emit {
namespace {

using Context = OpLoweringContext;

std::string ret(const std::string& expr) { return "    return " + expr + ";\n"; }

// The head of an elementwise body: operand 0 at the output's index as `x` ("" when
// the node has no operand 0).
Result<std::string> x_head(const Context& c) {
  if (c.node.inputs.empty() || c.input(0) == ir::kNoId) return std::string();
  STITCH_ASSIGN_OR_RETURN(std::string x_load, c.read(0, "i"));
  return "    const " + compute_type(c.dtype(c.input(0))) + " x = " + x_load + ";\n";
}

bool float_input(const Context& c) { return ir::dtype_is_float(c.dtype(c.input(0))); }

// A lowering `head + return <expression of x>` where the expression depends on the node.
template <typename Expression>
InlineLowering of_x(Expression expression) {
  return [expression](const Context& c) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
    return head + ret(expression(c));
  };
}

// Float math: float, float16 and bfloat16 only.
InlineLowering float_math(std::string expression) {
  return [expression](const Context& c) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
    if (c.compute() != "float") {
      return c.error("supports float, float16 and bfloat16 only in CUDA");
    }
    return head + ret(expression);
  };
}

std::string attribute(const Context& c, const char* name, float fallback) {
  return float_literal(c.node.float_attribute(name, fallback));
}

std::string sign(const Context& c) {
  const std::string ct = c.compute();
  return "x > 0 ? static_cast<" + ct + ">(1) : (x < 0 ? static_cast<" + ct + ">(-1) : x)";
}

std::string is_inf(const Context& c) {
  bool positive = c.node.int_attribute("detect_positive", 1) != 0;
  bool negative = c.node.int_attribute("detect_negative", 1) != 0;
  const char* which = positive && negative ? "true"
                      : positive           ? "x > 0"
                      : negative           ? "x < 0"
                                           : "false";
  return std::string("isinf(x) && ") + which;
}

std::string celu(const Context& c) {
  std::string alpha = attribute(c, "alpha", 1.0f);
  return "isnan(x) ? x : fmaxf(0.0f, x) + fminf(0.0f, " + alpha + " * expm1f(x / " + alpha + "))";
}

std::string selu(const Context& c) {
  std::string alpha = attribute(c, "alpha", 1.67326319217681884765625f);
  std::string gamma = attribute(c, "gamma", 1.05070102214813232421875f);
  return gamma + " * (x > 0.0f ? x : " + alpha + " * expm1f(x))";
}

std::string gelu(const Context& c) {
  if (c.node.string_attribute("approximate", "none") == "tanh") {
    return "0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)))";
  }
  return "0.5f * x * (1.0f + erff(x * 0.70710678118654752f))";
}

Result<std::string> hard_sigmoid(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
  return head + "    const " + c.compute() + " y = " + attribute(c, "alpha", 0.2f) + " * x + " +
         attribute(c, "beta", 0.5f) + ";\n" + ret("y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y)");
}

Result<std::string> clip(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
  std::string body = head + "    " + c.compute() + " y = x;\n";
  if (c.node.opset < 11) {
    const std::pair<const char*, const char*> bounds[] = {{"min", "<"}, {"max", ">"}};
    for (const auto& [bound, comparison] : bounds) {
      if (!c.node.find_attribute(bound)) continue;
      const std::string value = attribute(c, bound, 0);
      body += "    if (y " + std::string(comparison) + " " + value + ") y = " + value + ";\n";
    }
  } else {
    for (size_t k = 1; k < 3; ++k) {
      if (c.input(k) == ir::kNoId) continue;
      STITCH_ASSIGN_OR_RETURN(std::string bound, c.accessor(c.input(k)));
      body += "    if (y " + std::string(k == 1 ? "<" : ">") + " " + bound + "(0)) y = " + bound +
              "(0);\n";
    }
  }
  return body + ret("y");
}

Result<std::string> where(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(std::string condition, c.read(0, "i"));
  STITCH_ASSIGN_OR_RETURN(std::string a, c.read(1, "i"));
  STITCH_ASSIGN_OR_RETURN(std::string b, c.read(2, "i"));
  return ret(condition + " ? " + a + " : " + b);
}

Result<std::string> prelu(const Context& c) {
  STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
  STITCH_ASSIGN_OR_RETURN(std::string slope, c.read(1, "i"));
  return head + ret("x < 0 ? " + slope + " * x : x");
}

// Sum, Mean, Max, Min over every operand, in operand order.
InlineLowering variadic(ReduceCombine kind, bool mean) {
  return [kind, mean](const Context& c) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
    const std::string ct = c.compute();
    std::string body = head + "    " + ct + " y = x;\n";
    for (size_t k = 1; k < c.node.inputs.size(); ++k) {
      STITCH_ASSIGN_OR_RETURN(std::string v, c.read(k, "i"));
      body += "    {\n      const " + ct + " v = " + v + ";\n";
      if (kind == ReduceCombine::kSum) {
        body += "      y = y + v;\n";
      } else {
        body += "      y = (" + combine_text(kind, "y", "v", float_input(c)) + ");\n";
      }
      body += "    }\n";
    }
    if (mean) {
      body += "    y = y / static_cast<" + ct + ">(" +
              num(static_cast<int64_t>(c.node.inputs.size())) + ");\n";
    }
    return body + ret("y");
  };
}

// A binary op: the head, `const T y = <operand 1>;`, then `statements(c)`.
template <typename Statements>
InlineLowering binary(Statements statements) {
  return [statements](const Context& c) -> Result<std::string> {
    STITCH_ASSIGN_OR_RETURN(std::string head, x_head(c));
    STITCH_ASSIGN_OR_RETURN(std::string b_load, c.read(1, "i"));
    const std::string y =
        "    const " + compute_type(c.dtype(c.input(1))) + " y = " + b_load + ";\n";
    return head + y + statements(c);
  };
}

InlineLowering binary_expression(std::string expression) {
  return binary([expression](const Context&) { return ret(expression); });
}

// Integer Div and Mod as ir/core/integer_arithmetic.h defines them: x / 0 and x % 0 are
// 0, MIN / -1 wraps to MIN (negated in unsigned arithmetic), MIN % -1 is 0.
std::string divide(const Context& c) {
  if (float_input(c)) return ret("x / y");
  const std::string ct = c.compute();
  const std::string zero = "static_cast<" + ct + ">(0)";
  if (!ir::dtype_is_signed(c.dtype(c.input(0)))) {
    return ret("y == 0 ? " + zero + " : static_cast<" + ct + ">(x / y)");
  }
  return ret("y == 0 ? " + zero + " : (y == -1 ? static_cast<" + ct +
             ">(0ULL - static_cast<unsigned long long>(x)) : static_cast<" + ct + ">(x / y))");
}

std::string modulo(const Context& c) {
  if (float_input(c)) return ret("fmod(x, y)");
  const std::string ct = c.compute();
  if (!ir::dtype_is_signed(c.dtype(c.input(0)))) {
    return ret("y == 0 ? static_cast<" + ct + ">(0) : static_cast<" + ct + ">(x % y)");
  }
  std::string body = "    if (y == 0 || y == -1) return 0;\n    " + ct + " r = x % y;\n";
  if (c.node.int_attribute("fmod", 0) == 0) {
    body += "    if (r != 0 && ((r < 0) != (y < 0))) r += y;\n";
  }
  return body + ret("r");
}

std::string power(const Context& c) {
  const std::string ct = c.compute();
  if (float_input(c) && ct == "float") return ret("powf(x, static_cast<float>(y))");
  if (float_input(c)) return ret("pow(x, static_cast<double>(y))");
  return ret("static_cast<" + ct +
             ">(static_cast<long long>(pow(static_cast<double>(x), static_cast<double>(y))))");
}

}  // namespace

void register_elementwise_lowerings(OpLoweringRegistrations& table) {
  const std::pair<const char*, const char*> float_math_ops[] = {
      {"Exp", "expf(x)"},
      {"Log", "logf(x)"},
      {"Sqrt", "sqrtf(x)"},
      {"Tanh", "tanhf(x)"},
      {"Erf", "erff(x)"},
      {"Sin", "sinf(x)"},
      {"Cos", "cosf(x)"},
      {"Floor", "floorf(x)"},
      {"Ceil", "ceilf(x)"},
      {"Reciprocal", "1.0f / x"},
      {"Tan", "tanf(x)"},
      {"Asin", "asinf(x)"},
      {"Acos", "acosf(x)"},
      {"Atan", "atanf(x)"},
      {"Sinh", "sinhf(x)"},
      {"Cosh", "coshf(x)"},
      {"Asinh", "asinhf(x)"},
      {"Acosh", "acoshf(x)"},
      {"Atanh", "atanhf(x)"},
      {"Sigmoid", "1.0f / (1.0f + expf(-x))"},
      {"Softplus", "x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x))"},
      {"Softsign", "x / (1.0f + fabsf(x))"},
      {"Mish", "x * tanhf(x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x)))"},
      {"Round", "(fabsf(x - truncf(x)) == 0.5f) ? 2.0f * roundf(0.5f * x) : roundf(x)"},
  };
  for (const auto& [op_type, expression] : float_math_ops) {
    table.emplace_back(op_type, inline_entry(float_math(expression)));
  }
  // Relu, Sign, Celu and HardSigmoid keep a NaN as the reference interpreter does
  // (docs/semantics.md): a NaN fails every comparison and falls through; Celu tests
  // for it because fmaxf and fminf would drop it.
  table.emplace_back("Abs", inline_entry(of_x([](const Context& c) {
                       return std::string(float_input(c) ? "fabs(x)" : "(x < 0 ? -x : x)");
                     })));
  table.emplace_back("Neg", inline_entry(of_x([](const Context&) { return std::string("-x"); })));
  table.emplace_back("Relu", inline_entry(of_x([](const Context& c) {
                       return "x < 0 ? static_cast<" + c.compute() + ">(0) : x";
                     })));
  table.emplace_back("Sign", inline_entry(of_x(sign)));
  table.emplace_back("Not", inline_entry(of_x([](const Context&) { return std::string("!x"); })));
  table.emplace_back("IsNaN",
                     inline_entry(of_x([](const Context&) { return std::string("isnan(x)"); })));
  table.emplace_back("IsInf", inline_entry(of_x(is_inf)));
  table.emplace_back("LeakyRelu", inline_entry(of_x([](const Context& c) {
                       return "x >= 0.0f ? x : " + attribute(c, "alpha", 0.01f) + " * x";
                     })));
  table.emplace_back("ThresholdedRelu", inline_entry(of_x([](const Context& c) {
                       return "x > " + attribute(c, "alpha", 1.0f) + " ? x : 0.0f";
                     })));
  table.emplace_back("Elu", inline_entry(of_x([](const Context& c) {
                       return "x >= 0.0f ? x : " + attribute(c, "alpha", 1.0f) + " * expm1f(x)";
                     })));
  table.emplace_back("Celu", inline_entry(of_x(celu)));
  table.emplace_back("Selu", inline_entry(of_x(selu)));
  table.emplace_back("HardSigmoid", inline_entry(hard_sigmoid));
  table.emplace_back("HardSwish", inline_entry(of_x([](const Context&) {
                       return std::string("x * fmaxf(0.0f, fminf(1.0f, x / 6.0f + 0.5f))");
                     })));
  table.emplace_back("Gelu", inline_entry(of_x(gelu)));
  for (const char* op_type : {"Cast", "CastLike"}) {
    table.emplace_back(op_type, inline_entry(of_x([](const Context& c) {
                         return convert(c.dtype(c.input(0)), c.dtype(c.output()), "x");
                       })));
  }
  OpLowering clip_entry = inline_entry(clip);
  clip_entry.later_operands_scalar = true;
  table.emplace_back("Clip", std::move(clip_entry));
  table.emplace_back("Where", inline_entry(where));
  table.emplace_back("PRelu", inline_entry(prelu));
  table.emplace_back("Sum", inline_entry(variadic(ReduceCombine::kSum, false)));
  table.emplace_back("Mean", inline_entry(variadic(ReduceCombine::kSum, true)));
  table.emplace_back("Max", inline_entry(variadic(ReduceCombine::kMax, false)));
  table.emplace_back("Min", inline_entry(variadic(ReduceCombine::kMin, false)));
  const std::pair<const char*, const char*> binary_ops[] = {
      {"Add", "x + y"},          {"Sub", "x - y"},
      {"Mul", "x * y"},          {"Equal", "x == y"},
      {"Less", "x < y"},         {"Greater", "x > y"},
      {"LessOrEqual", "x <= y"}, {"GreaterOrEqual", "x >= y"},
      {"And", "x && y"},         {"Or", "x || y"},
      {"Xor", "x != y"},
  };
  for (const auto& [op_type, expression] : binary_ops) {
    table.emplace_back(op_type, inline_entry(binary_expression(expression)));
  }
  table.emplace_back("Div", inline_entry(binary(divide)));
  table.emplace_back("Mod", inline_entry(binary(modulo)));
  table.emplace_back("Pow", inline_entry(binary(power)));
}

}  // namespace stitch::emit

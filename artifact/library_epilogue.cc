// A library call's recorded epilogue: its names and the fused node's attributes.
#include "artifact/library_epilogue.h"

#include <charconv>
#include <system_error>

namespace stitch::artifact {
namespace {

constexpr Library kLibraries[] = {Library::kCublasLt, Library::kCudnn};

// The names of the kinds; clip and hardsigmoid add "(a,b)".
struct KindName {
  EpilogueOpKind kind;
  std::string_view name;
  bool parameters;
};
constexpr KindName kKindNames[] = {
    {EpilogueOpKind::kBias, "bias", false},
    {EpilogueOpKind::kResidualAdd, "residual add", false},
    {EpilogueOpKind::kScale, "scale", false},
    {EpilogueOpKind::kRelu, "relu", false},
    {EpilogueOpKind::kClip, "clip", true},
    {EpilogueOpKind::kSigmoid, "sigmoid", false},
    {EpilogueOpKind::kTanh, "tanh", false},
    {EpilogueOpKind::kSwish, "swish", false},
    {EpilogueOpKind::kHardSigmoid, "hardsigmoid", true},
    {EpilogueOpKind::kHardSwish, "hardswish", false},
    {EpilogueOpKind::kGelu, "gelu", false},
    {EpilogueOpKind::kGeluTanh, "gelu_tanh", false},
};

const KindName& kind_name(EpilogueOpKind kind) {
  for (const KindName& entry : kKindNames) {
    if (entry.kind == kind) return entry;
  }
  STITCH_CHECK(false) << "epilogue op kind " << static_cast<int>(kind) << " has no name";
  return kKindNames[0];
}

// The shortest text that reads back as `value` ("0", "6", "0.16666667", "-inf").
std::string float_text(float value) {
  char text[32];
  std::to_chars_result written = std::to_chars(text, text + sizeof(text), value);
  return std::string(text, written.ptr);
}

// `text` as a float when all of it is one.
std::optional<float> parse_float(std::string_view text) {
  float value = 0.0f;
  std::from_chars_result read = std::from_chars(text.data(), text.data() + text.size(), value);
  if (read.ec != std::errc() || read.ptr != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

bool EpilogueOp::reads_operand() const {
  return kind == EpilogueOpKind::kBias || kind == EpilogueOpKind::kResidualAdd ||
         kind == EpilogueOpKind::kScale;
}

std::string_view library_name(Library library) {
  switch (library) {
    case Library::kCublasLt:
      return "cuBLASLt";
    case Library::kCudnn:
      return "cuDNN";
  }
  return "";
}

std::string epilogue_op_name(EpilogueOp op) {
  const KindName& entry = kind_name(op.kind);
  std::string name(entry.name);
  if (entry.parameters) name += "(" + float_text(op.a) + "," + float_text(op.b) + ")";
  return name;
}

std::optional<EpilogueOp> parse_epilogue_op(std::string_view name) {
  for (const KindName& entry : kKindNames) {
    if (!entry.parameters) {
      if (name == entry.name) return EpilogueOp{entry.kind};
      continue;
    }
    if (name.size() < entry.name.size() + 2 || name.substr(0, entry.name.size()) != entry.name ||
        name[entry.name.size()] != '(' || name.back() != ')') {
      continue;
    }
    std::string_view inside = name.substr(entry.name.size() + 1);
    inside.remove_suffix(1);
    size_t comma = inside.find(',');
    if (comma == std::string_view::npos) return std::nullopt;
    std::optional<float> a = parse_float(inside.substr(0, comma));
    std::optional<float> b = parse_float(inside.substr(comma + 1));
    if (!a || !b) return std::nullopt;
    return EpilogueOp{entry.kind, *a, *b};
  }
  return std::nullopt;
}

std::vector<std::string> LibraryEpilogue::op_names() const {
  std::vector<std::string> names;
  for (EpilogueOp op : ops) names.push_back(epilogue_op_name(op));
  return names;
}

bool LibraryEpilogue::legacy_form() const {
  int bias = 0;
  int residual = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i] == EpilogueOp::kBias) {
      ++bias;
    } else if (ops[i] == EpilogueOp::kResidualAdd) {
      ++residual;
    } else if (ops[i] != EpilogueOp::kRelu || i + 1 != ops.size()) {
      return false;
    }
  }
  return bias <= 1 && residual <= 1;
}

std::vector<ir::Attribute> epilogue_attributes(const LibraryEpilogue& epilogue) {
  return {ir::Attribute::make_string("library", std::string(library_name(epilogue.library))),
          ir::Attribute::make_strings("epilogue", epilogue.op_names())};
}

Result<LibraryEpilogue> read_epilogue_attributes(const ir::Node& node) {
  const std::string where = "node " + node.display_name() + ": ";
  const ir::Attribute* library = node.find_attribute("library");
  const ir::Attribute* ops = node.find_attribute("epilogue");
  if (library == nullptr || library->kind != ir::AttributeKind::kString || ops == nullptr ||
      ops->kind != ir::AttributeKind::kStrings) {
    return Status::invalid_input(where + "a library call needs the string attribute \"library\" " +
                                 "and the strings attribute \"epilogue\"; recompile the model");
  }
  LibraryEpilogue epilogue;
  bool known = false;
  for (Library candidate : kLibraries) {
    if (library->s == library_name(candidate)) {
      epilogue.library = candidate;
      known = true;
    }
  }
  if (!known) {
    return Status::invalid_input(where + "library \"" + library->s +
                                 "\" is neither cuBLASLt nor cuDNN; recompile the model");
  }
  for (const std::string& name : ops->strings) {
    std::optional<EpilogueOp> op = parse_epilogue_op(name);
    if (!op) {
      return Status::invalid_input(
          where + "epilogue op \"" + name +
          "\" is not bias, residual add, scale, relu, clip(lo,hi), sigmoid, tanh, swish, " +
          "hardsigmoid(alpha,beta), hardswish, gelu or gelu_tanh; recompile the model");
    }
    epilogue.ops.push_back(*op);
  }
  return epilogue;
}

}  // namespace stitch::artifact

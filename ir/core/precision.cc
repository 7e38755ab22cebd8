#include "ir/core/precision.h"

namespace stitch::ir {

std::string_view precision_name(Precision precision) {
  switch (precision) {
    case Precision::kFloat32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFloat32x3:
      return "fp32x3";
    case Precision::kBFloat16:
      return "bf16";
    case Precision::kFloat16:
      return "fp16";
  }
  return "fp32";
}

std::optional<Precision> precision_from_name(std::string_view name) {
  for (Precision p : {Precision::kFloat32, Precision::kTf32, Precision::kFloat32x3,
                      Precision::kBFloat16, Precision::kFloat16}) {
    if (precision_name(p) == name) return p;
  }
  return std::nullopt;
}

}  // namespace stitch::ir

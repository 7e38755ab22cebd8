// Integer arithmetic that never traps or overflows into undefined behaviour: the one
// definition of integer Div and Mod that the reference interpreter, constant folding
// (through the interpreter) and shape-value propagation share; the CUDA emitter spells
// the same rules in C (emit/cuda_emitter.cc), so a GPU, the emulation and the reference
// agree (docs/semantics.md).
//
//   x / 0 == 0 and x % 0 == 0        numpy's integer rule (ONNX leaves it undefined;
//                                     ONNX Runtime traps)
//   MIN / -1 == MIN, MIN % -1 == 0    wraps, as numpy
//   otherwise C's division truncating toward zero, and a remainder with the dividend's
//   sign (Mod fmod=1) or the divisor's (Mod fmod=0, Python's %).
//
// Sums, differences and products wrap (through the unsigned type) instead of
// overflowing.
#pragma once

#include <type_traits>

namespace stitch::ir {

template <typename T>
T wrapping_add(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
}

template <typename T>
T wrapping_subtract(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(x) - static_cast<U>(y)));
}

template <typename T>
T wrapping_multiply(T x, T y) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
}

template <typename T>
T integer_divide(T x, T y) {
  static_assert(std::is_integral_v<T>);
  if (y == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return wrapping_subtract(T{0}, x);
  }
  return static_cast<T>(x / y);
}

// The remainder with the dividend's sign (C's %, ONNX Mod fmod=1).
template <typename T>
T integer_remainder(T x, T y) {
  static_assert(std::is_integral_v<T>);
  if (y == 0) return T{0};
  if constexpr (std::is_signed_v<T>) {
    if (y == -1) return T{0};
  }
  return static_cast<T>(x % y);
}

// The remainder with the divisor's sign (Python's %, ONNX Mod fmod=0).
template <typename T>
T integer_floored_remainder(T x, T y) {
  T r = integer_remainder(x, y);
  if constexpr (std::is_signed_v<T>) {
    if (r != 0 && ((r < 0) != (y < 0))) r = static_cast<T>(r + y);
  }
  return r;
}

}  // namespace stitch::ir

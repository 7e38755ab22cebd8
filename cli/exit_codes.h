// The command line's exit codes (DESIGN.md, cli/) and the one place a Status becomes
// one: 0 success, 1 internal error, 2 bad input or usage, 3 a --min-* gate failed or
// (run) outputs differ from the reference, 4 no usable GPU.
#pragma once

#include <cstdio>
#include <string>

#include "ir/core/status.h"
#include "support/escape.h"

namespace stitch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitGateFailed = 3;
inline constexpr int kExitNoGpu = 4;

// The most of a message report_error prints: messages quote lists and names of the
// model bounded where they are made (support::quote_bounded, list_text), and this
// bounds whatever else (a name of megabytes) reaches one.
inline constexpr size_t kMaxErrorBytes = 16384;

// Prints "stitchopt: error: MESSAGE" (one line whatever names it quotes: control
// characters escaped; at most kMaxErrorBytes of it, then how long it was) and returns
// the status's exit code.
inline int report_error(const Status& status) {
  std::string text = support::printable(status.message());
  if (text.size() > kMaxErrorBytes) {
    text =
        text.substr(0, kMaxErrorBytes) + "... (" + std::to_string(text.size()) + " bytes in all)";
  }
  std::fprintf(stderr, "stitchopt: error: %s\n", text.c_str());
  switch (status.code()) {
    case StatusCode::kInternal:
      return kExitInternal;
    case StatusCode::kGateFailed:
      return kExitGateFailed;
    case StatusCode::kUnavailable:
      return kExitNoGpu;
    default:
      return kExitBadInput;
  }
}

}  // namespace stitch::cli

// FusionDecision: the answer of a legality check, "yes" or "no, because ...".
//
// A check that may refuse a fusion returns one of these instead of a string where
// empty means yes, so a caller cannot mistake a refusal for consent, and every
// refusal carries the reason the report prints (STYLE.md 4 and 12; the idea is
// XLA's FusionDecision). Example:
//
//   FusionDecision decision = FusionDecision::forbid("Conv: cuDNN library call");
//   if (!decision.can_fuse()) report(decision.reason());
#pragma once

#include <string>
#include <utility>

#include "ir/core/status.h"

namespace stitch::fusion {

class FusionDecision {
 public:
  static FusionDecision allow() { return FusionDecision(""); }
  // Precondition: `reason` is not empty.
  static FusionDecision forbid(std::string reason) {
    STITCH_CHECK(!reason.empty()) << "a refused fusion needs a reason";
    return FusionDecision(std::move(reason));
  }

  bool can_fuse() const { return reason_.empty(); }
  // Why the fusion is refused. Precondition: !can_fuse().
  const std::string& reason() const {
    STITCH_CHECK(!can_fuse()) << "an allowed fusion has no reason";
    return reason_;
  }

  bool operator==(const FusionDecision& other) const = default;

 private:
  explicit FusionDecision(std::string reason) : reason_(std::move(reason)) {}
  std::string reason_;  // empty: allowed
};

}  // namespace stitch::fusion

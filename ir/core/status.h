// Status and Result<T>: the error channel for facts about the input (STYLE.md 3).
//
// A bad model, an unsupported op or a solver failure is a returned Status whose
// message names the file, the ONNX node (name and op type) and how to fix it.
// Broken invariants of our own code use STITCH_CHECK, which aborts with file and
// line; it is never used for a fact about the input.
#pragma once

#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <variant>

namespace stitch {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // the model or the command line is wrong: exit code 2
  kInternal,      // our bug: exit code 1
  kGateFailed,    // a --min-* gate failed (outputs are complete): exit code 3
  kUnavailable,   // the command needs a GPU (or CUDA library) this machine lacks: exit code 4
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status ok() { return Status(); }
  static Status invalid_input(std::string message) {
    return Status(StatusCode::kInvalidInput, std::move(message));
  }
  static Status internal(std::string message) {
    return Status(StatusCode::kInternal, std::move(message));
  }
  static Status gate_failed(std::string message) {
    return Status(StatusCode::kGateFailed, std::move(message));
  }
  static Status unavailable(std::string message) {
    return Status(StatusCode::kUnavailable, std::move(message));
  }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prepends context ("model.onnx: ") to the message, keeping the code.
  Status with_prefix(const std::string& prefix) const {
    if (is_ok()) return *this;
    return Status(code_, prefix + message_);
  }

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

namespace detail {
// Collects the streamed message of a failed STITCH_CHECK and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* condition) {
    stream_ << file << ":" << line << ": internal error: check failed: " << condition << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::cerr << stream_.str() << std::endl;
    std::abort();
  }
  template <typename T>
  CheckFailure& operator<<(const T& value) {
    stream_ << value;
    return *this;
  }

 private:
  std::ostringstream stream_;
};
}  // namespace detail

}  // namespace stitch

// STITCH_CHECK(cond) << "message": aborts with file and line when cond is false.
#define STITCH_CHECK(condition) \
  if (condition) {              \
  } else                        \
    ::stitch::detail::CheckFailure(__FILE__, __LINE__, #condition)

namespace stitch {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    STITCH_CHECK(!status_.is_ok()) << "a Result made from an ok Status holds no value";
  }

  bool is_ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  // Reading the value of an error is our bug: it aborts with the error's message.
  T& value() & { return checked(); }
  const T& value() const& { return checked(); }
  T&& value() && { return std::move(checked()); }
  T* operator->() { return &checked(); }
  const T* operator->() const { return &checked(); }
  T& operator*() & { return checked(); }
  const T& operator*() const& { return checked(); }

 private:
  T& checked() {
    STITCH_CHECK(value_.has_value()) << "the value of a failed Result: " << status_.message();
    return *value_;
  }
  const T& checked() const {
    STITCH_CHECK(value_.has_value()) << "the value of a failed Result: " << status_.message();
    return *value_;
  }

  std::optional<T> value_;
  Status status_;
};

}  // namespace stitch

// Returns the status from the enclosing function when it is an error.
#define STITCH_RETURN_IF_ERROR(expr)                    \
  do {                                                  \
    ::stitch::Status stitch_status_ = (expr);           \
    if (!stitch_status_.is_ok()) return stitch_status_; \
  } while (0)

#define STITCH_CONCAT_INNER(a, b) a##b
#define STITCH_CONCAT(a, b) STITCH_CONCAT_INNER(a, b)
// STITCH_ASSIGN_OR_RETURN(auto x, make_x()): unwraps a Result or returns its status.
#define STITCH_ASSIGN_OR_RETURN(lhs, expr) \
  STITCH_ASSIGN_OR_RETURN_IMPL(STITCH_CONCAT(stitch_result_, __LINE__), lhs, expr)
#define STITCH_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.is_ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

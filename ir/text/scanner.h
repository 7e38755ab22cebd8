// The textual IR's scanner: characters, comments, identifiers, quoted and hex
// strings, value names and numbers, with errors that give the line and column. The
// parser (parser.cc) is built on it; the text grammar is in text.h.
#pragma once

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "ir/core/status.h"
#include "ir/text/lexicon.h"

namespace stitch::ir::text_lexicon {

class Scanner {
 protected:
  Scanner(std::string_view text, std::string_view source_name)
      : text_(text), source_name_(source_name) {}

  Status error_at(size_t position, const std::string& message) const {
    size_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    return Status::invalid_input(source_name_ + ":" + std::to_string(line) + ":" +
                                 std::to_string(position - line_start + 1) + ": " + message);
  }
  Status error(const std::string& message) {
    skip_space();
    return error_at(pos_, message);
  }

  // Skips whitespace and `//` comments.
  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  char peek() {
    skip_space();
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  char peek_raw() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

  bool consume(char c) {
    if (peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }

  Status expect(char c, std::string_view context) {
    if (consume(c)) return Status::ok();
    return error(std::string("expected '") + c + "' " + std::string(context));
  }

  // The identifier at the cursor without consuming it ("" when there is none).
  std::string_view peek_identifier() {
    skip_space();
    size_t end = pos_;
    if (end < text_.size() && is_identifier_start(text_[end])) {
      while (end < text_.size() && is_identifier_char(text_[end])) ++end;
    }
    return text_.substr(pos_, end - pos_);
  }

  bool consume_word(std::string_view word) {
    if (peek_identifier() != word) return false;
    pos_ += word.size();
    return true;
  }

  Result<std::string> identifier(std::string_view what) {
    std::string_view word = peek_identifier();
    if (word.empty()) return error("expected " + std::string(what));
    pos_ += word.size();
    return std::string(word);
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // "..." with escapes \" \\ \n \t \xHH.
  Result<std::string> string_literal(std::string_view what) {
    if (peek() != '"') return error("expected " + std::string(what) + " (a quoted string)");
    size_t start = pos_++;
    std::string result;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n') {
        return error_at(start, "unterminated string");
      }
      char c = text_[pos_++];
      if (c == '"') return result;
      if (c != '\\') {
        result += c;
        continue;
      }
      char escape = peek_raw();
      ++pos_;
      if (escape == '"' || escape == '\\') {
        result += escape;
      } else if (escape == 'n') {
        result += '\n';
      } else if (escape == 't') {
        result += '\t';
      } else if (escape == 'x' && pos_ + 1 < text_.size() && hex_value(text_[pos_]) >= 0 &&
                 hex_value(text_[pos_ + 1]) >= 0) {
        result += static_cast<char>(hex_value(text_[pos_]) * 16 + hex_value(text_[pos_ + 1]));
        pos_ += 2;
      } else {
        return error_at(pos_ - 2, "invalid escape in string; use \\\", \\\\, \\n, \\t or \\xHH");
      }
    }
  }

  // hex"0a1b": raw bytes.
  Result<std::string> hex_literal(std::string_view what) {
    size_t start = (skip_space(), pos_);
    if (!consume_word("hex") || peek_raw() != '"') {
      return error_at(start, "expected " + std::string(what) + " (hex\"...\")");
    }
    ++pos_;
    std::string bytes;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      int high = hex_value(text_[pos_]);
      int low = pos_ + 1 < text_.size() ? hex_value(text_[pos_ + 1]) : -1;
      if (high < 0 || low < 0) {
        return error_at(pos_, "expected pairs of hex digits in hex\"...\"");
      }
      bytes += static_cast<char>(high * 16 + low);
      pos_ += 2;
    }
    if (pos_ >= text_.size()) return error_at(start, "unterminated hex string");
    ++pos_;
    return bytes;
  }

  // `%name` or `%"any name"`.
  Result<std::string> value_name() {
    size_t start = (skip_space(), pos_);
    if (!consume('%')) return error("expected a value name (%name)");
    if (peek_raw() == '"') {
      STITCH_ASSIGN_OR_RETURN(std::string name, string_literal("a value name"));
      if (name.empty()) return error_at(start, "value names must not be empty");
      return name;
    }
    size_t begin = pos_;
    while (pos_ < text_.size() && is_bare_name_char(text_[pos_])) ++pos_;
    if (pos_ == begin) return error_at(start, "expected a value name after '%'");
    return std::string(text_.substr(begin, pos_ - begin));
  }

  // The text of a number: sign, digits, letters, '.', and a sign after an
  // exponent; "nan(0x...)" keeps its parenthesized bits.
  Result<std::string_view> number_text(std::string_view what) {
    size_t start = (skip_space(), pos_);
    if (pos_ < text_.size() && (text_[pos_] == '-' || text_[pos_] == '+')) ++pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      bool exponent_sign = (c == '-' || c == '+') && pos_ > start &&
                           (text_[pos_ - 1] == 'e' || text_[pos_ - 1] == 'E');
      if (!is_identifier_char(c) && c != '.' && !exponent_sign) break;
      ++pos_;
    }
    std::string_view text = text_.substr(start, pos_ - start);
    if (text == "nan" || text == "-nan") {
      if (peek_raw() == '(') {
        while (pos_ < text_.size() && text_[pos_] != ')' && text_[pos_] != '\n') ++pos_;
        if (peek_raw() != ')') return error_at(start, "expected ')' after nan(0x...");
        ++pos_;
        text = text_.substr(start, pos_ - start);
      }
    }
    if (text.empty() || text == "-" || text == "+")
      return error_at(start, "expected " + std::string(what));
    number_start_ = start;
    return text;
  }

  static bool looks_like_float(std::string_view text) {
    return text.find_first_of(".eEin") != std::string_view::npos;
  }

  Result<int64_t> to_int64(std::string_view text) const {
    int64_t value = 0;
    auto result = std::from_chars(text.data(), text.data() + text.size(), value);
    if (result.ec == std::errc::result_out_of_range) {
      return error_at(number_start_, "integer out of range: " + std::string(text));
    }
    if (result.ec != std::errc() || result.ptr != text.data() + text.size()) {
      return error_at(number_start_, "expected an integer, got '" + std::string(text) + "'");
    }
    return value;
  }

  Result<int64_t> integer(std::string_view what) {
    STITCH_ASSIGN_OR_RETURN(std::string_view text, number_text(what));
    return to_int64(text);
  }

  // Reads inf, -inf, nan, -nan, nan(0xBITS) or a decimal number. `nan_bits` is the
  // canonical NaN of the element type; explicit bits come back in `*raw_bits`.
  Result<double> to_floating(std::string_view text, bool is_double,
                             std::optional<uint64_t>* raw_bits) const {
    bool negative = !text.empty() && text[0] == '-';
    std::string_view magnitude =
        negative || (!text.empty() && text[0] == '+') ? text.substr(1) : text;
    if (magnitude == "inf") {
      return negative ? -std::numeric_limits<double>::infinity()
                      : std::numeric_limits<double>::infinity();
    }
    if (magnitude == "nan") {
      return negative ? -std::numeric_limits<double>::quiet_NaN()
                      : std::numeric_limits<double>::quiet_NaN();
    }
    if (magnitude.starts_with("nan(0x") && magnitude.ends_with(")") && !negative) {
      std::string_view digits = magnitude.substr(6, magnitude.size() - 7);
      uint64_t bits = 0;
      auto result = std::from_chars(digits.data(), digits.data() + digits.size(), bits, 16);
      if (digits.empty() || result.ec != std::errc() ||
          result.ptr != digits.data() + digits.size()) {
        return error_at(number_start_, "expected hex bits in '" + std::string(text) + "'");
      }
      *raw_bits = bits;
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (magnitude.empty() ||
        !((magnitude[0] >= '0' && magnitude[0] <= '9') || magnitude[0] == '.')) {
      return error_at(number_start_, "expected a number, got '" + std::string(text) + "'");
    }
    double value = 0;
    float single = 0;
    std::from_chars_result result;
    const char* end = text.data() + text.size();
    if (is_double) {
      result = std::from_chars(text.data(), end, value);
    } else {
      result = std::from_chars(text.data(), end, single);
      value = single;
    }
    if (result.ec == std::errc::result_out_of_range) {
      return error_at(number_start_, "number out of range: " + std::string(text));
    }
    if (result.ec != std::errc() || result.ptr != end) {
      return error_at(number_start_, "expected a number, got '" + std::string(text) + "'");
    }
    return value;
  }

  Result<float> to_float32(std::string_view text) const {
    std::optional<uint64_t> raw_bits;
    STITCH_ASSIGN_OR_RETURN(double value, to_floating(text, false, &raw_bits));
    if (raw_bits) {
      if (*raw_bits > 0xffffffffu ||
          !std::isnan(std::bit_cast<float>(static_cast<uint32_t>(*raw_bits)))) {
        return error_at(number_start_, "'" + std::string(text) + "' is not a 32-bit NaN");
      }
      return std::bit_cast<float>(static_cast<uint32_t>(*raw_bits));
    }
    if (std::isnan(value)) {
      return std::bit_cast<float>(kFloatNan | (std::signbit(value) ? 0x80000000u : 0u));
    }
    return static_cast<float>(value);
  }

  std::string_view text_;
  std::string source_name_;
  size_t pos_ = 0;
  size_t number_start_ = 0;  // where the last number_text began, for messages
};

}  // namespace stitch::ir::text_lexicon

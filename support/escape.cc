// Model strings made safe for messages, JSON and generated source (escape.h).
#include "support/escape.h"

#include <cstdint>

namespace stitch::support {
namespace {

const char kHex[] = "0123456789abcdef";

void append_hex(std::string& out, unsigned char byte) {
  out += "\\x";
  out += kHex[byte >> 4];
  out += kHex[byte & 15];
}

void append_octal(std::string& out, unsigned char byte) {
  out += '\\';
  out += static_cast<char>('0' + (byte >> 6));
  out += static_cast<char>('0' + ((byte >> 3) & 7));
  out += static_cast<char>('0' + (byte & 7));
}

// The code point of the valid sequence of `length` bytes at text[at].
uint32_t code_point(std::string_view text, size_t at, size_t length) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  if (length == 1) return byte(0);
  uint32_t value = byte(0) & (0xff >> (length + 1));
  for (size_t i = 1; i < length; ++i) value = (value << 6) | (byte(i) & 0x3f);
  return value;
}

}  // namespace

size_t utf8_sequence_length(std::string_view text, size_t at) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[at + i]); };
  unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
  if (length == 0 || lead > 0xf4 || at + length > text.size()) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80) return 0;
  }
  uint32_t value = code_point(text, at, length);
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (value < kSmallest[length] || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) {
    return 0;
  }
  return length;
}

namespace {

// quote()'s body: `quote_marks` also escapes `"` and `\`.
std::string escaped(std::string_view text, bool quote_marks) {
  std::string out;
  for (size_t at = 0; at < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[at]);
    size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      append_hex(out, c);
      ++at;
      continue;
    }
    uint32_t value = code_point(text, at, length);
    if (quote_marks && (c == '"' || c == '\\')) {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (value < 0x20 || value == 0x7f || (value >= 0x80 && value < 0xa0)) {
      for (size_t i = 0; i < length; ++i) append_hex(out, static_cast<unsigned char>(text[at + i]));
    } else {
      out.append(text.substr(at, length));
    }
    at += length;
  }
  return out;
}

}  // namespace

std::string quote(std::string_view text) { return "\"" + escaped(text, true) + "\""; }

std::string quote_bounded(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return quote(text);
  size_t cut = max_bytes;
  // Back to the start of a sequence (at most 3 bytes: invalid text has no start), so
  // a character is never split into \xNN bytes.
  for (int back = 0; back < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80;
       ++back) {
    --cut;
  }
  return quote(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

std::string list_text(size_t count, const std::function<std::string(size_t)>& item,
                      size_t max_items) {
  std::string text = "[";
  for (size_t i = 0; i < count && i < max_items; ++i) {
    if (i > 0) text += ",";
    text += item(i);
  }
  if (count > max_items) text += ",... (" + std::to_string(count) + " in all)";
  return text + "]";
}

std::string printable(std::string_view text) { return escaped(text, false); }

std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    size_t length = utf8_sequence_length(text, at);
    if (length == 0) {
      append_hex(out, static_cast<unsigned char>(text[at]));
      ++at;
    } else {
      out.append(text.substr(at, length));
      at += length;
    }
  }
  return out;
}

std::string source_text(std::string_view text, size_t max_bytes) {
  std::string_view shown = text.substr(0, max_bytes);
  std::string out;
  out.reserve(shown.size());
  for (size_t i = 0; i < shown.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(shown[i]);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '?') {
      out += "\\?";  // no trigraph (??/ is a backslash where trigraphs are on)
    } else if (c == '/' && i > 0 && shown[i - 1] == '*') {
      append_octal(out, c);  // no */ to end an enclosing block comment
    } else if (c < 0x20 || c >= 0x7f || c == '\\') {
      append_octal(out, c);  // never a newline, never a backslash that ends a line
    } else {
      out += static_cast<char>(c);
    }
  }
  if (text.size() > max_bytes) {
    out += "...(" + std::to_string(text.size() - max_bytes) + " more bytes)";
  }
  return out;
}

std::string identifier_slug(std::string_view text) {
  constexpr size_t kMaxLength = 48;
  std::string slug;
  for (char c : text) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) {
      slug += c;
    } else if (!slug.empty() && slug.back() != '_') {
      slug += '_';
    }
    if (slug.size() >= kMaxLength) break;
  }
  while (!slug.empty() && slug.back() == '_') slug.pop_back();
  return slug.empty() ? "t" : slug;
}

}  // namespace stitch::support

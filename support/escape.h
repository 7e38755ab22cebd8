// Model strings made safe for where stitchopt prints them (DESIGN.md, Untrusted
// input): names, doc strings and attribute strings come from files the user did not
// write, so they may hold newlines, terminal escape sequences or bytes that are not
// UTF-8.
//
//  - quote(): for messages on a terminal and in logs: "name" with the name's valid
//    UTF-8 kept, and `"`, `\`, control characters (C0, DEL, C1) and bytes that are
//    not UTF-8 escaped C-style (\n, \t, \", \\, \xNN). `"a\nb"` prints as "a\nb".
//  - printable(): for whole messages that quote names: quote()'s escapes of control
//    characters and bytes that are not UTF-8, without quotes and leaving `"` and `\`
//    alone, so a message stays one line and cannot drive the terminal.
//  - valid_utf8(): for JSON (report.json, kernels.json): the text with valid UTF-8
//    kept and each byte that is not UTF-8 written as the four characters \xNN; JSON
//    escapes control characters itself.
//  - source_text(): for generated C++/CUDA source (comments and string literals):
//    printable ASCII only; everything else, and `\`, `"`, `?` and a `/` after `*`,
//    as a 3-digit octal escape (\ooo) or \" / \?, so the result never holds a
//    newline, a backslash that ends a line, a trigraph or `*/`, and is a valid
//    string-literal body. Long texts are cut at `max_bytes` input bytes with a note.
//  - identifier_slug(): the readable part of a generated identifier: letters and
//    digits of the name, runs of anything else as one '_', no leading, trailing or
//    double underscore, at most 48 characters, "t" when nothing is left. Callers
//    add a fixed prefix and a uniquing suffix: no identifier is a copied name.
//
// Messages that quote an attribute's string or list are bounded too: a model can
// hold a megabyte Einsum equation or a Squeeze with 10 million axes, and an error
// that echoes it whole is a 20 MB line nobody can read.
//  - quote_bounded(): quote() of at most `max_bytes` bytes of the text (cut where a
//    UTF-8 sequence starts); a longer text reads `"abc"... (1048576 bytes in all)`.
//  - list_text(): "[a,b,c]" from item(0), item(1), ...; a list of more than
//    `max_items` reads "[a,b,...,p,... (10000000 in all)]".
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace stitch::support {

inline constexpr size_t kMaxQuotedBytes = 256;
inline constexpr size_t kMaxListedItems = 16;

std::string quote(std::string_view text);
std::string quote_bounded(std::string_view text, size_t max_bytes = kMaxQuotedBytes);
std::string list_text(size_t count, const std::function<std::string(size_t)>& item,
                      size_t max_items = kMaxListedItems);
std::string printable(std::string_view text);
std::string valid_utf8(std::string_view text);
std::string source_text(std::string_view text, size_t max_bytes = 200);
inline std::string source_literal(std::string_view text, size_t max_bytes = 200) {
  return "\"" + source_text(text, max_bytes) + "\"";
}
std::string identifier_slug(std::string_view text);

// The length of the valid UTF-8 sequence starting at text[at] (1 to 4), or 0 when
// the byte there does not start one (a stray continuation byte, an overlong form, a
// surrogate, a code point above U+10FFFF or a cut sequence).
size_t utf8_sequence_length(std::string_view text, size_t at);

}  // namespace stitch::support

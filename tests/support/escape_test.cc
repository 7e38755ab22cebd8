// Tests of the escaping of model strings (support/escape.h): each function on the bytes a
// hostile model can carry.
#include "support/escape.h"

#include <gtest/gtest.h>

#include <string>

namespace stitch::support {
namespace {

using namespace std::string_literals;

// Newline, block-comment end, backslash-newline, a trigraph for backslash, NUL, a
// terminal escape, a lone continuation byte, an overlong '/', a surrogate.
const std::string kHostile = "a\nb*/c\\\nd?\?/e\0f\x1b[31mg\x80h\xc0\xafi\xed\xa0\x80j"s;

TEST(EscapeTest, Utf8SequenceLengthAcceptsOnlyValidSequences) {
  EXPECT_EQ(utf8_sequence_length("a", 0), 1u);
  EXPECT_EQ(utf8_sequence_length("\xc3\xa9", 0), 2u);          // é
  EXPECT_EQ(utf8_sequence_length("\xe6\xb3\xa8", 0), 3u);      // 注
  EXPECT_EQ(utf8_sequence_length("\xf0\x9f\x98\x80", 0), 4u);  // U+1F600
  EXPECT_EQ(utf8_sequence_length("\x80", 0), 0u);              // continuation byte
  EXPECT_EQ(utf8_sequence_length("\xc0\xaf", 0), 0u);          // overlong '/'
  EXPECT_EQ(utf8_sequence_length("\xed\xa0\x80", 0), 0u);      // surrogate U+D800
  EXPECT_EQ(utf8_sequence_length("\xf4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_sequence_length("\xe6\xb3", 0), 0u);          // cut short
}

TEST(EscapeTest, QuotedKeepsUtf8AndEscapesTheRest) {
  EXPECT_EQ(quote("layer/attn.0"), "\"layer/attn.0\"");
  EXPECT_EQ(quote("\xe6\xb3\xa8\xe6\x84\x8f"), "\"\xe6\xb3\xa8\xe6\x84\x8f\"");
  EXPECT_EQ(quote(kHostile),
            "\"a\\nb*/c\\\\\\nd?\?/e\\x00f\\x1b[31mg\\x80h\\xc0\\xafi\\xed\\xa0\\x80j\"");
  EXPECT_EQ(quote("say \"hi\"\t\r"), "\"say \\\"hi\\\"\\t\\r\"");
  EXPECT_EQ(quote("\xc2\x9b"), "\"\\xc2\\x9b\"");  // C1 control (CSI) is escaped too
}

TEST(EscapeTest, QuotedIsInjective) {
  // A literal backslash-x-f-f and the byte 0xff must not print the same.
  EXPECT_NE(quote("\\xff"), quote("\xff"));
}

TEST(EscapeTest, PrintableEscapesOnlyWhatBreaksALineOrATerminal) {
  EXPECT_EQ(printable("node \"a\\b\" (Add): \xe6\xb3\xa8"), "node \"a\\b\" (Add): \xe6\xb3\xa8");
  EXPECT_EQ(printable("a\nb\x1b[2Jc\xff"), "a\\nb\\x1b[2Jc\\xff");
}

TEST(EscapeTest, ValidUtf8ReplacesOnlyInvalidBytes) {
  EXPECT_EQ(valid_utf8("plain \xe6\xb3\xa8\n"), "plain \xe6\xb3\xa8\n");
  EXPECT_EQ(valid_utf8("r\xff"), "r\\xff");
  EXPECT_EQ(valid_utf8("\xc0\xaf"), "\\xc0\\xaf");
}

TEST(EscapeTest, SourceTextIsPrintableAsciiWithoutCommentOrLineBreakers) {
  std::string text = source_text(kHostile);
  EXPECT_EQ(text,
            "a\\012b*\\057c\\134\\012d\\?\\?/e\\000f\\033[31mg\\200h\\300\\257i\\355\\240\\200j");
  for (char c : text) {
    EXPECT_TRUE(c >= 0x20 && c <= 0x7e)
        << "byte " << static_cast<int>(static_cast<unsigned char>(c));
  }
  EXPECT_EQ(text.find("*/"), std::string::npos);
  EXPECT_EQ(text.find("??"), std::string::npos);
  // A backslash is always followed by a digit, '"' or '?': never the last character.
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') continue;
    ASSERT_LT(i + 1, text.size());
    EXPECT_TRUE(isdigit(static_cast<unsigned char>(text[i + 1])) || text[i + 1] == '"' ||
                text[i + 1] == '?');
    if (isdigit(static_cast<unsigned char>(text[i + 1])))
      i += 3;
    else
      ++i;
  }
  EXPECT_EQ(source_text("ends with \\"), "ends with \\134");
  EXPECT_EQ(source_literal("say \"hi\""), "\"say \\\"hi\\\"\"");
  EXPECT_EQ(source_text("/encoder/layer.0/MatMul_output_0"), "/encoder/layer.0/MatMul_output_0");
}

TEST(EscapeTest, SourceTextCutsLongTexts) {
  EXPECT_EQ(source_text(std::string(300, 'x'), 10), "xxxxxxxxxx...(290 more bytes)");
  // The cut is on input bytes, so it never splits an escape.
  EXPECT_EQ(source_text("ab\ncd", 3), "ab\\012...(2 more bytes)");
}

TEST(EscapeTest, QuoteBoundedCutsLongTextsAndSaysTheirLength) {
  EXPECT_EQ(quote_bounded("abc"), "\"abc\"");
  EXPECT_EQ(quote_bounded(std::string(300, 'x'), 4), "\"xxxx\"... (300 bytes in all)");
  // The cut never splits a UTF-8 sequence (\xe6\xb3\xa8 is one character).
  EXPECT_EQ(quote_bounded("ab\xe6\xb3\xa8yz", 3), "\"ab\"... (7 bytes in all)");
  // Escapes count after the cut: the input bytes are bounded, not the escaped ones.
  EXPECT_EQ(quote_bounded("\n\n\n\n", 2), "\"\\n\\n\"... (4 bytes in all)");
  EXPECT_EQ(quote_bounded(std::string(1 << 20, 'e')),
            "\"" + std::string(kMaxQuotedBytes, 'e') + "\"... (1048576 bytes in all)");
}

TEST(EscapeTest, ListTextShowsTheFirstItemsAndTheCount) {
  auto number = [](size_t i) { return std::to_string(i); };
  EXPECT_EQ(list_text(0, number), "[]");
  EXPECT_EQ(list_text(3, number), "[0,1,2]");
  EXPECT_EQ(list_text(16, number), "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]");
  EXPECT_EQ(list_text(10000000, number),
            "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,... (10000000 in all)]");
  EXPECT_EQ(list_text(5, number, 2), "[0,1,... (5 in all)]");
}

TEST(EscapeTest, IdentifierSlugIsAlphanumericWithSingleUnderscores) {
  EXPECT_EQ(identifier_slug("/encoder/layer.0/attention/self/MatMul_output_0"),
            "encoder_layer_0_attention_self_MatMul_output_0");
  EXPECT_EQ(identifier_slug(std::string(60, 'a')), std::string(48, 'a'));
  EXPECT_EQ(identifier_slug("__x__y__"), "x_y");
  EXPECT_EQ(identifier_slug(kHostile), "a_b_c_d_e_f_31mg_h_i_j");
  EXPECT_EQ(identifier_slug("\xe6\xb3\xa8"), "t");
  EXPECT_EQ(identifier_slug(""), "t");
  EXPECT_EQ(identifier_slug("0"), "0");  // callers add a prefix: v_0
}

}  // namespace
}  // namespace stitch::support

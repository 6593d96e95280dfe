#include "core/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace tiresias {
namespace {

constexpr size_t npos = std::string_view::npos;

TEST(Utf8Test, WellFormedTextPasses) {
  EXPECT_EQ(FirstInvalidUtf8(""), npos);
  EXPECT_EQ(FirstInvalidUtf8("plain ascii\n"), npos);
  // é (2 bytes), € (3), 𝄞 (4), U+10FFFF (the last code point).
  EXPECT_EQ(FirstInvalidUtf8("\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e "
                             "\xf4\x8f\xbf\xbf"),
            npos);
}

TEST(Utf8Test, MalformedSequencesAreFoundWhereTheyStart) {
  EXPECT_EQ(FirstInvalidUtf8("ab\xff"), 2u);            // never in UTF-8
  EXPECT_EQ(FirstInvalidUtf8("a\x80"), 1u);             // stray continuation
  EXPECT_EQ(FirstInvalidUtf8("\xc0\x80"), 0u);          // overlong NUL
  EXPECT_EQ(FirstInvalidUtf8("\xe0\x80\xaf"), 0u);      // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("x\xed\xa0\x80"), 1u);     // surrogate U+D800
  EXPECT_EQ(FirstInvalidUtf8("\xf4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("ok\xe2\x82"), 2u);        // truncated
  EXPECT_EQ(FirstInvalidUtf8("\xc3\xa9\xc3("), 2u);     // bad continuation
}

TEST(Utf8Test, DecodesCodePoints) {
  const std::string text = "A\xc2\x85\xe2\x82\xac\xf0\x9d\x84\x9e";
  EXPECT_EQ(Utf8SequenceLength(text, 0), 1);
  EXPECT_EQ(DecodeUtf8(text, 0, 1), U'A');
  EXPECT_EQ(Utf8SequenceLength(text, 1), 2);
  EXPECT_EQ(DecodeUtf8(text, 1, 2), U'\u0085');  // C1 NEL
  EXPECT_EQ(Utf8SequenceLength(text, 3), 3);
  EXPECT_EQ(DecodeUtf8(text, 3, 3), U'\u20ac');
  EXPECT_EQ(Utf8SequenceLength(text, 6), 4);
  EXPECT_EQ(DecodeUtf8(text, 6, 4), U'\U0001d11e');
}

// What the audit log and the CLI show of caller text: clean text as is,
// the rest escaped, and escaping twice the same as once (the master
// escapes when it writes and again when it reads an older row back).
TEST(Utf8Test, PrintableTextEscapesAndIsIdempotent) {
  EXPECT_EQ(PrintableText("alice \xe2\x82\xac"), "alice \xe2\x82\xac");
  const std::string raw = "a\xff" "b\nc\x1b[31m\x7f\xc2\x85\xed\xa0\x80";
  const std::string shown = PrintableText(raw);
  EXPECT_EQ(shown,
            "a\\xffb\\nc\\x1b[31m\\x7f\\u0085\\xed\\xa0\\x80");
  EXPECT_EQ(FirstInvalidUtf8(shown), npos);
  EXPECT_EQ(PrintableText(shown), shown);
}

}  // namespace
}  // namespace tiresias

#include "cli/printable.h"

#include <string>

#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

TEST(PrintableTest, PrintableUtf8IsKeptAsIs) {
  EXPECT_EQ(Printable(""), "");
  EXPECT_EQ(Printable("resnet-50 train.py --lr=0.1"),
            "resnet-50 train.py --lr=0.1");
  EXPECT_EQ(Printable("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80"),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x9a\x80");
  EXPECT_EQ(Printable("back\\slash"), "back\\slash");
}

TEST(PrintableTest, ControlCharactersAreEscaped) {
  EXPECT_EQ(Printable("a\nFORGED 999 row"), "a\\nFORGED 999 row");
  EXPECT_EQ(Printable("\x1b[31mred"), "\\x1b[31mred");
  EXPECT_EQ(Printable("tab\there\r"), "tab\\there\\r");
  EXPECT_EQ(Printable(std::string("nul\0bell\a del\x7f", 14)),
            "nul\\x00bell\\x07 del\\x7f");
  // C1 controls (U+0080..U+009F), e.g. CSI, which some terminals obey.
  EXPECT_EQ(Printable(std::string("\xc2\x9b") + "31m"), "\\u009b31m");
  EXPECT_EQ(Printable("next\xc2\x85line"), "next\\u0085line");
}

TEST(PrintableTest, BytesThatAreNotUtf8AreShownInHex) {
  EXPECT_EQ(Printable("ab\xff\xfe"), "ab\\xff\\xfe");
  EXPECT_EQ(Printable("\xc3"), "\\xc3");           // truncated sequence
  EXPECT_EQ(Printable("\xc0\xaf"), "\\xc0\\xaf");  // overlong '/'
  EXPECT_EQ(Printable("\x9b"), "\\x9b");           // a lone C1 byte
}

}  // namespace
}  // namespace tiresias::cli

#include "report/html_format.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

TEST(EscapeHtmlTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(EscapeHtml("<b>x</b> & \"y\" 'z'"),
            "&lt;b&gt;x&lt;/b&gt; &amp; &quot;y&quot; &#39;z&#39;");
  EXPECT_EQ(EscapeHtml("plain-text_1.0"), "plain-text_1.0");
  EXPECT_EQ(EscapeHtml(""), "");
}

TEST(JsonForScriptBlockTest, HidesTagsButParsesBack) {
  const nlohmann::json value = {
      {"s", "</script><script>alert(1)</script> <!-- & -->"},
      {"n", 1.5},
      {"a", {1, 2, 3}}};
  const std::string text = JsonForScriptBlock(value);
  EXPECT_EQ(text.find('<'), std::string::npos);
  EXPECT_EQ(text.find('>'), std::string::npos);
  EXPECT_EQ(text.find('&'), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(text), value);
}

TEST(JsonForScriptBlockTest, SurvivesInvalidUtf8AndNonFiniteNumbers) {
  nlohmann::json value = {{"s", std::string("a\xff"
                                            "b")},
                          {"x", std::numeric_limits<double>::quiet_NaN()}};
  const nlohmann::json parsed =
      nlohmann::json::parse(JsonForScriptBlock(value));
  EXPECT_EQ(parsed["s"],
            "a\xef\xbf\xbd"
            "b");
  EXPECT_TRUE(parsed["x"].is_null());
}

TEST(FormatDurationTest, PicksAReadableUnit) {
  EXPECT_EQ(FormatDuration(0), "0 s");
  EXPECT_EQ(FormatDuration(4.24), "4.2 s");
  EXPECT_EQ(FormatDuration(12.3), "12 s");
  EXPECT_EQ(FormatDuration(59.4), "59 s");
  EXPECT_EQ(FormatDuration(60), "1.0 min");
  EXPECT_EQ(FormatDuration(270), "4.5 min");
  EXPECT_EQ(FormatDuration(41 * 60), "41 min");
  EXPECT_EQ(FormatDuration(3600), "1.0 h");
  EXPECT_EQ(FormatDuration(2.3 * 3600), "2.3 h");
  EXPECT_EQ(FormatDuration(30 * 3600), "30 h");
  EXPECT_EQ(FormatDuration(3.1 * 86400), "3.1 d");
  EXPECT_EQ(FormatDuration(40 * 86400), "40 d");
}

TEST(FormatDurationTest, RejectsNegativeAndNonFinite) {
  EXPECT_EQ(FormatDuration(-1), kNoValue);
  EXPECT_EQ(FormatDuration(std::numeric_limits<double>::infinity()), kNoValue);
  EXPECT_EQ(FormatDuration(std::nan("")), kNoValue);
}

TEST(FormatCountTest, GroupsThousands) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(82247), "82,247");
  EXPECT_EQ(FormatCount(1234567), "1,234,567");
  EXPECT_EQ(FormatCount(-4321), "-4,321");
  EXPECT_EQ(FormatCount(2.6), "3");
  EXPECT_EQ(FormatCount(std::nan("")), kNoValue);
}

TEST(FormatPercentTest, OneDecimal) {
  EXPECT_EQ(FormatPercent(0.734), "73.4%");
  EXPECT_EQ(FormatPercent(1), "100.0%");
  EXPECT_EQ(FormatPercent(0), "0.0%");
}

}  // namespace
}  // namespace tiresias

#include "cli/time_limit.h"

#include <gtest/gtest.h>

namespace tiresias::cli {
namespace {

double Limit(std::string_view text) {
  absl::StatusOr<double> s = ParseTimeLimit("--time", text);
  EXPECT_TRUE(s.ok()) << text << ": " << s.status();
  return s.ok() ? *s : -1;
}

TEST(ParseTimeLimitTest, EverySlurmFormWorkedOutByHand) {
  EXPECT_EQ(Limit("30"), 30 * 60);                  // MM
  EXPECT_EQ(Limit("0:03"), 3);                      // MM:SS
  EXPECT_EQ(Limit("90:30"), 90 * 60 + 30);          // minutes past an hour
  EXPECT_EQ(Limit("1:30:00"), 5400);                // HH:MM:SS
  EXPECT_EQ(Limit("36:00:01"), 36 * 3600 + 1);      // hours past a day
  EXPECT_EQ(Limit("2-12"), 2 * 86400 + 12 * 3600);  // D-HH
  EXPECT_EQ(Limit("1-0:30"), 86400 + 30 * 60);      // D-HH:MM
  EXPECT_EQ(Limit("3-04:05:06"), 3 * 86400 + 4 * 3600 + 5 * 60 + 6);
  EXPECT_EQ(Limit("0-0:0:1"), 1);
}

TEST(ParseTimeLimitTest, ZeroAndUnlimitedMeanNoLimit) {
  EXPECT_EQ(Limit("0"), 0);
  EXPECT_EQ(Limit("UNLIMITED"), 0);
  EXPECT_EQ(Limit("infinite"), 0);
}

TEST(ParseTimeLimitTest, BadFormsNameTheFlagAndTheForms) {
  for (const char* bad : {"", "abc", "1.5", "-5", "5-", "-", "1:2:3:4",
                          "1-2-3", "10:60", "1:60:00", "1:00:60", "1-24",
                          "1-1:60", " 5", "5 ", "+5", "1::2", "9999999999"}) {
    absl::StatusOr<double> s = ParseTimeLimit("--time", bad);
    EXPECT_FALSE(s.ok()) << "accepted \"" << bad << "\"";
    if (!s.ok()) {
      EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(s.status().message().find("--time"), std::string::npos);
      EXPECT_NE(s.status().message().find("D-HH:MM:SS"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace tiresias::cli

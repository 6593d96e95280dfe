#include "cli/time_arg.h"

#include <cstdlib>
#include <ctime>
#include <utility>

#include "gtest/gtest.h"

namespace tiresias::cli {
namespace {

class TimeArgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("TZ", "UTC", 1);
    tzset();
  }
};

TEST_F(TimeArgTest, UnixSecondsAndLocalDates) {
  EXPECT_EQ(*ParseTimeArg("--since", "1700000000"), 1700000000.0);
  EXPECT_EQ(*ParseTimeArg("--since", "1700000000.5"), 1700000000.5);
  EXPECT_EQ(*ParseTimeArg("--since", "2024-01-02"), 1704153600.0);
  EXPECT_EQ(*ParseTimeArg("--since", "2024-01-02T03:04:05"),
            1704153600.0 + 3 * 3600 + 4 * 60 + 5);
  EXPECT_EQ(*ParseTimeArg("--since", "2024-02-29"), 1709164800.0);  // leap
}

TEST_F(TimeArgTest, LocalMeansTheMachinesTimeZone) {
  setenv("TZ", "EST5", 1);  // UTC-5, no daylight saving
  tzset();
  EXPECT_EQ(*ParseTimeArg("--since", "2024-01-02"), 1704153600.0 + 5 * 3600);
}

TEST_F(TimeArgTest, ATimeAgo) {
  const double now = static_cast<double>(std::time(nullptr));
  for (auto [text, ago] : {std::pair<const char*, double>{"30d", 30 * 86400},
                           {"12h", 12 * 3600},
                           {"1.5h", 5400},
                           {"90m", 5400},
                           {"45s", 45}}) {
    auto t = ParseTimeArg("--since", text);
    ASSERT_TRUE(t.ok()) << text << ": " << t.status();
    EXPECT_NEAR(*t, now - ago, 2) << text;
  }
}

TEST_F(TimeArgTest, AnythingElseNamesTheFlagAndTheForms) {
  for (const char* bad : {"", "yesterday", "-5", "2024-13-01", "2024-02-30",
                          "2024-01-02T25:00:00", "2024-01-02 03:04:05x", "1e9",
                          "d", "-3d", "3w", "3dd", "1e3h"}) {
    auto t = ParseTimeArg("--since", bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(),
              std::string("--since ") + bad +
                  ": expected Unix seconds, a local date "
                  "YYYY-MM-DD[THH:MM:SS] or a time ago (30d, 12h, 90m, 45s)");
  }
}

}  // namespace
}  // namespace tiresias::cli

#include "cli/time_arg.h"

#include <cstdlib>
#include <ctime>

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

TEST_F(TimeArgTest, AnythingElseNamesTheFlagAndTheForms) {
  for (const char* bad :
       {"", "yesterday", "-5", "2024-13-01", "2024-02-30",
        "2024-01-02T25:00:00", "2024-01-02 03:04:05x", "1e9"}) {
    auto t = ParseTimeArg("--since", bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(),
              std::string("--since ") + bad +
                  ": expected Unix seconds or a local date "
                  "YYYY-MM-DD[THH:MM:SS]");
  }
}

}  // namespace
}  // namespace tiresias::cli

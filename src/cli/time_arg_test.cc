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

// The hour a fall-back to standard time repeats: a local time in it is the
// first of its two instants (as `at` and cron read it), and "HH:MM" once
// that has passed is the repeat, not tomorrow.
TEST_F(TimeArgTest, ARepeatedHourMeansItsFirstInstant) {
  setenv("TZ", "EST5EDT,M3.2.0,M11.1.0", 1);  // US Eastern's rules
  tzset();
  // 2026-11-01: 01:30 EDT (05:30 UTC), then 01:30 EST (06:30 UTC).
  EXPECT_EQ(*ParseTimeArg("--since", "2026-11-01T01:30:00"), 1793511000.0);
  EXPECT_EQ(*ParseBeginTime("--begin", "2026-11-01T01:30", 0), 1793511000.0);
  // At 01:15 EDT "01:30" is 15 minutes on; at 01:45 EDT, the repeat.
  EXPECT_EQ(*ParseBeginTime("--begin", "01:30", 1793510100.0), 1793511000.0);
  EXPECT_EQ(*ParseBeginTime("--begin", "01:30", 1793511900.0), 1793514600.0);
  // Outside it one instant: 03:00 EST is 08:00 UTC.
  EXPECT_EQ(*ParseTimeArg("--since", "2026-11-01T03:00:00"), 1793520000.0);
  // The midnight starting that day is EDT's (04:00 UTC).
  EXPECT_EQ(*ParseTimeArg("--since", "2026-11-01"), 1793505600.0);
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

// 2024-01-02T10:00:00 UTC (the fixture's zone).
constexpr double kTen = 1704153600.0 + 10 * 3600;

TEST_F(TimeArgTest, BeginTimesAsSlurmWritesThem) {
  EXPECT_EQ(*ParseBeginTime("--begin", "now", kTen), 0.0);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+90", kTen), kTen + 90);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+90s", kTen), kTen + 90);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+5m", kTen), kTen + 300);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+2hours", kTen), kTen + 7200);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+1d", kTen), kTen + 86400);
  EXPECT_EQ(*ParseBeginTime("--begin", "now+1w", kTen), kTen + 7 * 86400);
  // A time of day still ahead is today's; one passed is tomorrow's.
  EXPECT_EQ(*ParseBeginTime("--begin", "16:30", kTen),
            1704153600.0 + 16.5 * 3600);
  EXPECT_EQ(*ParseBeginTime("--begin", "09:15:30", kTen),
            1704153600.0 + 86400 + 9 * 3600 + 15 * 60 + 30);
  EXPECT_EQ(*ParseBeginTime("--begin", "teatime", kTen),
            1704153600.0 + 16 * 3600);
  EXPECT_EQ(*ParseBeginTime("--begin", "noon", kTen), 1704153600.0 + 12 * 3600);
  EXPECT_EQ(*ParseBeginTime("--begin", "midnight", kTen), 1704153600.0 + 86400);
  EXPECT_EQ(*ParseBeginTime("--begin", "tomorrow", kTen), 1704153600.0 + 86400);
  EXPECT_EQ(*ParseBeginTime("--begin", "today", kTen), 1704153600.0);
  EXPECT_EQ(*ParseBeginTime("--begin", "2024-01-05", kTen),
            1704153600.0 + 3 * 86400);
  EXPECT_EQ(*ParseBeginTime("--begin", "2024-01-05T08:30", kTen),
            1704153600.0 + 3 * 86400 + 8.5 * 3600);
  EXPECT_EQ(*ParseBeginTime("--begin", "2024-01-05T08:30:10", kTen),
            1704153600.0 + 3 * 86400 + 8.5 * 3600 + 10);
  EXPECT_EQ(*ParseBeginTime("--begin", "1704500000", kTen), 1704500000.0);
}

TEST_F(TimeArgTest, BadBeginTimesNameTheFlagAndTheForms) {
  for (const char* bad :
       {"", "later", "now+", "now+5x", "now-5", "25:00", "10:60", "1:5",
        "2024-02-30", "noon2", "-5", "20240105", "now+99999999999999999999w",
        "99999999999"}) {
    auto t = ParseBeginTime("--begin", bad, kTen);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message(),
              std::string("--begin ") + bad +
                  ": expected now, now+N[s|m|h|d|w], HH:MM[:SS], midnight, "
                  "noon, teatime, today, tomorrow, a local date "
                  "YYYY-MM-DD[THH:MM[:SS]] or Unix seconds");
  }
}

}  // namespace
}  // namespace tiresias::cli

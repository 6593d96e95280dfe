// The /api query parameters: what each takes, and a one-line 400 message
// naming the parameter for anything else.
#include "dashboard/api_params.h"

#include "gtest/gtest.h"

namespace tiresias {
namespace {

std::string Error(const absl::Status& s) { return std::string(s.message()); }

TEST(ApiParamsTest, JobsTakeStateUserNamePageSizeAndToken) {
  auto p = ParseJobsParams({{"state", "pending"},
                            {"user", "alice"},
                            {"name", "train"},
                            {"vc", "vision"},
                            {"page_size", "20"},
                            {"page_token", "ajE6MjA"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->state, "pending");
  EXPECT_EQ(p->user, "alice");
  EXPECT_EQ(p->name, "train");
  EXPECT_EQ(p->vc, "vision");
  EXPECT_EQ(p->page_size, 20);
  EXPECT_EQ(p->page_token, "ajE6MjA");
  auto defaults = ParseJobsParams({{"state", ""}});
  ASSERT_TRUE(defaults.ok()) << defaults.status();
  EXPECT_EQ(defaults->state, "");
  EXPECT_EQ(defaults->page_size, 50);
}

TEST(ApiParamsTest, BadJobsParametersAreNamed) {
  EXPECT_EQ(Error(ParseJobsParams({{"state", "PENDING"}}).status()),
            "state: expected one of pending, starting, running, preempted, "
            "finished, failed, cancelled, timeout, got \"PENDING\"");
  EXPECT_EQ(Error(ParseJobsParams({{"page_size", "0"}}).status()),
            "page_size: expected a whole number from 1 to 500, got \"0\"");
  EXPECT_EQ(Error(ParseJobsParams({{"page_size", "5x"}}).status()),
            "page_size: expected a whole number from 1 to 500, got \"5x\"");
  EXPECT_EQ(Error(ParseJobsParams({{"stat", "pending"}}).status()),
            "unknown parameter \"stat\" (expected state, user, name, vc, "
            "page_size, page_token)");
  EXPECT_EQ(Error(ParseJobsParams({{"user", "a"}, {"user", "b"}}).status()),
            "user: given more than once");
  EXPECT_EQ(
      Error(ParseJobsParams({{"name", std::string(2000, 'x')}}).status()),
      "name: expected at most 1024 bytes, got 2000");
  // Control characters are not echoed as they are.
  EXPECT_EQ(Error(ParseJobsParams({{"state", "<b>\n"}}).status()),
            "state: expected one of pending, starting, running, preempted, "
            "finished, failed, cancelled, timeout, got \"<b>?\"");
}

TEST(ApiParamsTest, HistoryTakesAWindowAndAPointCount) {
  auto p = ParseHistoryParams(
      {{"since", "1700000000"}, {"until", "1700003600.5"}, {"max_points", "10"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(*p->since, 1700000000);
  EXPECT_EQ(*p->until, 1700003600.5);
  EXPECT_EQ(p->max_points, 10);
  auto defaults = ParseHistoryParams({});
  ASSERT_TRUE(defaults.ok());
  EXPECT_FALSE(defaults->since.has_value());
  EXPECT_EQ(defaults->max_points, 500);
  EXPECT_EQ(Error(ParseHistoryParams({{"since", "yesterday"}}).status()),
            "since: expected a time in Unix seconds, got \"yesterday\"");
  EXPECT_EQ(Error(ParseHistoryParams({{"until", "inf"}}).status()),
            "until: expected a time in Unix seconds, got \"inf\"");
  EXPECT_EQ(Error(ParseHistoryParams({{"since", "20"}, {"until", "10"}})
                      .status()),
            "since: expected at most until (10), got 20");
  EXPECT_EQ(Error(ParseHistoryParams({{"max_points", "10001"}}).status()),
            "max_points: expected a whole number from 1 to 10000, got "
            "\"10001\"");
}

TEST(ApiParamsTest, LogTakesOffsetAttemptAndRank) {
  auto p = ParseLogParams({{"offset", "4096"}, {"attempt", "2"}, {"rank", "1"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->offset, 4096);
  EXPECT_EQ(p->attempt, 2);
  EXPECT_EQ(p->rank, 1);
  EXPECT_EQ(Error(ParseLogParams({{"offset", "-1"}}).status()),
            "offset: expected a whole number from 0 to 1125899906842624, got "
            "\"-1\"");
  EXPECT_EQ(Error(ParseLogParams({{"follow", "1"}}).status()),
            "unknown parameter \"follow\" (expected offset, attempt, rank)");
}

}  // namespace
}  // namespace tiresias

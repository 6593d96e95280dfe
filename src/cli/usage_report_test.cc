// `tiresias report usage`'s roll-up and formats (usage_report.h), on jobs
// worked out by hand.
#include "cli/usage_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using ::testing::HasSubstr;

v1::Job Job(std::string vc, std::string user, int gpus,
            std::optional<double> start, std::optional<double> end,
            double executed, double cpu) {
  v1::Job job;
  job.mutable_spec()->set_vc(vc);
  job.mutable_spec()->set_user(user);
  job.mutable_spec()->set_gpus(gpus);
  if (start) job.set_first_start_time(*start);
  if (end) job.set_end_time(*end);
  job.set_total_executed_seconds(executed);
  job.set_cpu_seconds(cpu);
  return job;
}

// The window [1000, 2000), now 2500:
// 1. vision/alice, 2 GPUs, ran 1100-1500 (400 s): 800 GPU-s, 100 CPU-s.
// 2. vision/bob, 1 GPU, ran 500-1500: half inside: 500 GPU-s, 100 CPU-s.
// 3. speech/alice, 4 GPUs, running since 1800 (700 s by now): 200 of
//    its 700 s inside, 800 GPU-s.
// 4. never started; 5. ran before the window: nothing.
// In all 2,100 GPU-s: vision 1,300 (61.9%), speech 800 (38.1%).
std::vector<v1::Job> Jobs() {
  return {Job("vision", "alice", 2, 1100, 1500, 400, 100),
          Job("vision", "bob", 1, 500, 1500, 1000, 200),
          Job("speech", "alice", 4, 1800, std::nullopt, 700, 0),
          Job("speech", "carol", 1, std::nullopt, std::nullopt, 0, 0),
          Job("vision", "alice", 1, 100, 900, 800, 50)};
}

TEST(UsageReportTest, RollsUpByVcThenUser) {
  const UsageBy by{.vc = true, .user = true};
  const UsageReport r = RollUpUsage(Jobs(), by, 1000, 2000, 2500);
  EXPECT_EQ(r.total_jobs, 3);
  EXPECT_DOUBLE_EQ(r.total_gpu_seconds, 2100);
  ASSERT_EQ(r.rows.size(), 5u);
  EXPECT_EQ(r.rows[0].vc, "vision");
  EXPECT_EQ(r.rows[0].user, "");
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 1300);
  EXPECT_DOUBLE_EQ(r.rows[0].cpu_seconds, 200);
  EXPECT_EQ(r.rows[1].user, "alice");
  EXPECT_EQ(r.rows[2].user, "bob");
  EXPECT_DOUBLE_EQ(r.rows[2].gpu_seconds, 500);
  EXPECT_DOUBLE_EQ(r.rows[3].gpu_seconds, 800);
  EXPECT_EQ(FormatUsage(r, by, UsageFormat::kCsv),
            "VC,USER,JOBS,GPU-HOURS,SHARE,CPU-HOURS\n"
            "vision,,2,0.4,61.9%,0.1\n"
            "vision,alice,1,0.2,38.1%,0.0\n"
            "vision,bob,1,0.1,23.8%,0.0\n"
            "speech,,1,0.2,38.1%,0.0\n"
            "speech,alice,1,0.2,38.1%,0.0\n");
  const std::string table = FormatUsage(r, by, UsageFormat::kTable);
  EXPECT_THAT(table, HasSubstr(": 0.6 GPU-hours, 3 jobs\n"));
  EXPECT_THAT(table, HasSubstr("\n        bob    1     0.1"));
  const nlohmann::json j =
      nlohmann::json::parse(FormatUsage(r, by, UsageFormat::kJson));
  EXPECT_EQ(j["total_jobs"], 3);
  EXPECT_EQ(j["total_gpu_s"], 2100);
  EXPECT_EQ(j["rows"][0]["vc"], "vision");
  EXPECT_TRUE(j["rows"][0]["user"].is_null());
  EXPECT_EQ(j["rows"][2]["user"], "bob");
  EXPECT_EQ(j["rows"][2]["gpu_s"], 500);
  EXPECT_NEAR(j["rows"][0]["share"].get<double>(), 13.0 / 21, 1e-12);
}

TEST(UsageReportTest, ByUserOrVcAlone) {
  UsageReport r = RollUpUsage(Jobs(), UsageBy{.user = true}, 1000, 2000, 2500);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].user, "alice");
  EXPECT_EQ(r.rows[0].jobs, 2);
  EXPECT_DOUBLE_EQ(r.rows[0].gpu_seconds, 1600);
  EXPECT_EQ(FormatUsage(r, UsageBy{.user = true}, UsageFormat::kCsv),
            "USER,JOBS,GPU-HOURS,SHARE,CPU-HOURS\n"
            "alice,2,0.4,76.2%,0.0\n"
            "bob,1,0.1,23.8%,0.0\n");
  r = RollUpUsage(Jobs(), UsageBy{.vc = true}, 1000, 2000, 2500);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[1].vc, "speech");
  const nlohmann::json j = nlohmann::json::parse(
      FormatUsage(r, UsageBy{.vc = true}, UsageFormat::kJson));
  EXPECT_FALSE(j["rows"][0].contains("user"));
  EXPECT_EQ(j["rows"][1]["vc"], "speech");
  // Nothing in a window before every job.
  r = RollUpUsage(Jobs(), UsageBy{.vc = true}, 0, 50, 2500);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_THAT(FormatUsage(r, UsageBy{.vc = true}, UsageFormat::kTable),
              HasSubstr(": 0.0 GPU-hours, 0 jobs\n"));
}

TEST(UsageReportTest, ByTakesVcUserOrBoth) {
  EXPECT_TRUE(ParseUsageBy("vc")->vc);
  EXPECT_TRUE(ParseUsageBy("user")->user);
  const auto both = ParseUsageBy("user,vc");
  ASSERT_TRUE(both.ok());
  EXPECT_TRUE(both->vc && both->user);
  for (const char* bad : {"", "team", "vc,vc", "vc,"}) {
    const auto by = ParseUsageBy(bad);
    ASSERT_FALSE(by.ok()) << bad;
    EXPECT_THAT(by.status().message(),
                HasSubstr("expected vc, user or vc,user"));
  }
}

}  // namespace
}  // namespace tiresias::cli

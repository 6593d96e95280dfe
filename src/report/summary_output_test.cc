#include "report/summary_output.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias {
namespace {

using ::testing::HasSubstr;

SimResult TwoJobs(const std::string& policy, double jct_scale) {
  SimResult r;
  r.policy = policy;
  r.placement = "consolidate";
  r.total_gpus = 4;
  r.first_submit = 0;
  r.last_end = 100 * jct_scale;
  r.busy_gpu_seconds = 200 * jct_scale;
  r.jobs = {JobResult{1, 1, "vgg16", 0, 0, 50 * jct_scale, 50, 50, 0, 0, 0, 0},
            JobResult{2, 8, "resnet50", 0, 10, 100 * jct_scale, 900, 90, 2.5,
                      1, 0, 1}};
  r.timeseries = {{0, 1, 1, 1}, {10, 4, 0, 2}};
  return r;
}

TEST(SummaryOutputTest, JsonKeepsContractFieldNames) {
  RunInfo info;
  info.trace = "data/x.csv";
  info.servers = 1;
  info.gpus = 4;
  info.seed = 7;
  nlohmann::json j = SummaryJson(info, {Summarize(TwoJobs("fifo", 1))});
  EXPECT_EQ(j["trace"], "data/x.csv");
  EXPECT_EQ(j["cluster"]["servers"], 1);
  EXPECT_EQ(j["cluster"]["gpus"], 4);
  EXPECT_EQ(j["seed"], 7);
  const nlohmann::json& p = j["policies"][0];
  for (const char* field :
       {"name", "jobs", "avg_jct_s", "median_jct_s", "p95_jct_s", "max_jct_s",
        "avg_queueing_s", "makespan_s", "preemptions",
        "preemption_overhead_s", "gpu_utilization", "bins"}) {
    EXPECT_TRUE(p.contains(field)) << field;
  }
  EXPECT_EQ(p["name"], "fifo");
  EXPECT_DOUBLE_EQ(p["avg_jct_s"].get<double>(), 75);
  EXPECT_DOUBLE_EQ(p["gpu_utilization"].get<double>(), 0.5);
  EXPECT_EQ(p["bins"]["SS"]["jobs"], 1);
  EXPECT_EQ(p["bins"]["LL"]["jobs"], 1);
}

TEST(SummaryOutputTest, TableNormalizesToBaseline) {
  std::string table =
      FormatSummaryTable({Summarize(TwoJobs("yarn-cs", 2)),
                          Summarize(TwoJobs("tiresias-l", 1))},
                         "yarn-cs");
  EXPECT_THAT(table, HasSubstr("avg/yarn-cs"));
  // tiresias-l's JCTs are half of yarn-cs's.
  EXPECT_THAT(table, HasSubstr("0.50"));
  EXPECT_THAT(table, HasSubstr("1.00"));
  EXPECT_THAT(FormatSummaryTable({Summarize(TwoJobs("fifo", 1))}, "srtf"),
              ::testing::Not(HasSubstr("avg/srtf")));
}

TEST(SummaryOutputTest, CsvRows) {
  SimResult r = TwoJobs("fifo", 1);
  EXPECT_EQ(JobsCsv(r),
            "id,gpus,model,submit_s,first_start_s,end_s,jct_s,queueing_s,"
            "executed_s,overhead_s,preemptions,promotions,final_queue,"
            "slowdown,ftf,active_jobs\n"
            "1,1,vgg16,0,0,50,50,0,50,0,0,0,0,1,0.5,2\n"
            "2,8,resnet50,0,10,100,100,10,90,2.5,1,0,1,0.111111,0.0740741,"
            "1.5\n");
  EXPECT_EQ(TimeseriesCsv(r),
            "time_s,busy_gpus,pending_jobs,running_jobs\n0,1,1,1\n10,4,0,2\n");
}

// Fairness of TwoJobs: both submitted at 0, active together until 50. Job
// 1 ran alone-speed (slowdown 1, N 2, FTF 0.5); job 2 finished at 100
// with a 900 s trace duration (slowdown 1/9, N 1.5). Jain over (1, 1/9):
// (10/9)^2 / (2 x 82/81) = 100/164.
TEST(SummaryOutputTest, FairnessInJsonCsvAndTable) {
  const Summary s = Summarize(TwoJobs("fifo", 1));
  nlohmann::json j = SummaryJson(RunInfo{}, {s});
  const nlohmann::json& f = j["policies"][0]["fairness"];
  for (const char* key :
       {"max_slowdown", "p95_slowdown", "ftf_max", "ftf_over_1_share",
        "jain_slowdown", "longest_wait_s", "avg_slowdown",
        "jobs_without_duration"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_DOUBLE_EQ(f["max_slowdown"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(f["ftf_max"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(f["ftf_over_1_share"].get<double>(), 0.0);
  EXPECT_NEAR(f["jain_slowdown"].get<double>(), 100.0 / 164.0, 1e-12);
  EXPECT_DOUBLE_EQ(f["longest_wait_s"].get<double>(), 10.0);
  const std::string csv = SummaryCsv({s});
  EXPECT_THAT(csv, ::testing::StartsWith(
                       "policy,placement,jobs,avg_jct_s,median_jct_s,"));
  EXPECT_THAT(csv, ::testing::HasSubstr(",jain_slowdown,longest_wait_s\n"
                                        "fifo,consolidate,2,75,"));
  EXPECT_THAT(csv, ::testing::EndsWith(",0.609756,10\n"));
  const std::string table = FormatFairnessTable({s});
  EXPECT_THAT(table, ::testing::HasSubstr("Jain"));
  EXPECT_THAT(table, ::testing::HasSubstr("fifo "));
  EXPECT_THAT(table, ::testing::HasSubstr(" 0.610 "));
}

TEST(SummaryOutputTest, ReportJsonCarriesChartsData) {
  SimResult r = TwoJobs("fifo", 1);
  nlohmann::json j = ReportJson(RunInfo{}, {Summarize(r)}, {&r});
  const nlohmann::json& p = j["policies"][0];
  ASSERT_EQ(p["jct_cdf"].size(), 2u);
  EXPECT_EQ(p["jct_cdf"][1][1], 1.0);
  EXPECT_FALSE(p["utilization"].empty());
}

}  // namespace
}  // namespace tiresias

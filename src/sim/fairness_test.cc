#include "sim/fairness.h"

#include "gtest/gtest.h"

namespace tiresias {
namespace {

JobResult Job(double submit, double end, double duration, double executed) {
  JobResult j{};
  j.submit = submit;
  j.first_start = submit;
  j.end = end;
  j.duration = duration;
  j.executed = executed;
  return j;
}

// One 1-GPU job from 0 to 10 (alone until 5), one submitted at 5 that waits
// until 15 and runs 5 s, and one of duration 0 at 20. Active jobs: 1 on
// [0, 5), 2 on [5, 10), 1 on [10, 20).
//   first:  slowdown 10/10 = 1, N = (5x1 + 5x2)/10 = 1.5, FTF 10/15 = 2/3
//   second: slowdown 15/5 = 3, N = (5x2 + 10x1)/15 = 4/3, FTF 15/(5x4/3)
//           = 2.25
//   third:  no duration, left out; its wait is 0.
// Jain over (1, 3): 16 / (2 x 10) = 0.8.
TEST(FairnessTest, HandComputedSmallRun) {
  const std::vector<JobResult> jobs = {Job(0, 10, 10, 10), Job(5, 20, 5, 5),
                                       Job(20, 20, 0, 0)};
  const std::vector<JobFairness> f = PerJobFairness(jobs);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_DOUBLE_EQ(*f[0].slowdown, 1.0);
  EXPECT_DOUBLE_EQ(f[0].active_jobs, 1.5);
  EXPECT_DOUBLE_EQ(*f[0].ftf, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(*f[1].slowdown, 3.0);
  EXPECT_DOUBLE_EQ(f[1].active_jobs, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(*f[1].ftf, 2.25);
  EXPECT_FALSE(f[2].slowdown.has_value());
  EXPECT_FALSE(f[2].ftf.has_value());

  const FairnessSummary s = SummarizeFairness(jobs, f);
  EXPECT_DOUBLE_EQ(s.avg_slowdown, 2.0);
  EXPECT_DOUBLE_EQ(s.max_slowdown, 3.0);
  EXPECT_DOUBLE_EQ(s.p95_slowdown, 3.0);
  EXPECT_DOUBLE_EQ(s.jain_slowdown, 0.8);
  EXPECT_DOUBLE_EQ(s.ftf_max, 2.25);
  EXPECT_DOUBLE_EQ(s.ftf_over_1_share, 0.5);
  EXPECT_DOUBLE_EQ(s.longest_wait_s, 10.0);
  EXPECT_EQ(s.jobs_without_duration, 1);
}

// Properties on a larger run: every job is active over its own life (N >=
// 1), slowdown >= 1 when a job cannot run faster than alone, FTF <=
// slowdown, and Jain's index is in (0, 1], 1 exactly when all slowdowns
// are equal.
TEST(FairnessTest, PropertiesOnManyJobs) {
  std::vector<JobResult> jobs;
  for (int i = 0; i < 500; ++i) {
    const double submit = i * 7 % 300;
    const double duration = 1 + i % 13;
    const double wait = (i * 31) % 50;
    jobs.push_back(Job(submit, submit + wait + duration, duration, duration));
  }
  const std::vector<JobFairness> f = PerJobFairness(jobs);
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_GE(f[i].active_jobs, 1.0 - 1e-9) << i;
    EXPECT_GE(*f[i].slowdown, 1.0) << i;
    EXPECT_LE(*f[i].ftf, *f[i].slowdown + 1e-9) << i;
  }
  const FairnessSummary s = SummarizeFairness(jobs, f);
  EXPECT_GT(s.jain_slowdown, 0);
  EXPECT_LT(s.jain_slowdown, 1);
  EXPECT_EQ(s.longest_wait_s, 49);

  std::vector<JobResult> alike;
  for (int i = 0; i < 10; ++i) alike.push_back(Job(i, i + 4, 2, 2));
  EXPECT_DOUBLE_EQ(SummarizeFairness(alike, PerJobFairness(alike)).jain_slowdown,
                   1.0);
  EXPECT_EQ(SummarizeFairness({}, {}).max_slowdown, 0);
}

}  // namespace
}  // namespace tiresias

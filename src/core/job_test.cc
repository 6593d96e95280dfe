#include "core/job.h"

#include <gtest/gtest.h>

namespace tiresias {
namespace {

JobSpec Spec(int gpus, double submit) {
  JobSpec s;
  s.id = 7;
  s.num_gpus = gpus;
  s.submit_time = Seconds{submit};
  return s;
}

TEST(JobTest, AccountsAttainedServiceAcrossRuns) {
  Job job(Spec(2, 10));
  EXPECT_EQ(job.state(), JobState::kPending);
  EXPECT_EQ(job.last_stop(), Seconds{10});
  job.Start(Seconds{20}, {0, 1});
  EXPECT_EQ(job.first_start(), Seconds{20});
  EXPECT_DOUBLE_EQ(job.AttainedGpuSeconds(Seconds{50}), 60.0);  // 2 x 30 s
  job.Preempt(Seconds{50});
  EXPECT_EQ(job.state(), JobState::kPreempted);
  EXPECT_EQ(job.preemptions(), 1);
  EXPECT_TRUE(job.gpus().empty());
  // Waiting accrues nothing.
  EXPECT_DOUBLE_EQ(job.AttainedGpuSeconds(Seconds{90}), 60.0);
  job.Start(Seconds{100}, {2, 3});
  EXPECT_EQ(job.first_start(), Seconds{20});  // unchanged by a resume
  job.Finish(Seconds{110});
  EXPECT_EQ(job.state(), JobState::kFinished);
  EXPECT_EQ(job.finish_time(), Seconds{110});
  EXPECT_DOUBLE_EQ(job.Executed(Seconds{500}).count(), 40.0);
  EXPECT_DOUBLE_EQ(job.TotalExecuted(Seconds{500}).count(), 40.0);
}

TEST(JobTest, PromotionResetsExecutedButNotProgress) {
  Job job(Spec(1, 0));
  job.Start(Seconds{0}, {0});
  job.Preempt(Seconds{30});
  job.set_queue(1);
  job.Promote(Seconds{100});
  EXPECT_EQ(job.queue(), 0);
  EXPECT_EQ(job.promotions(), 1);
  EXPECT_EQ(job.last_stop(), Seconds{100});
  EXPECT_DOUBLE_EQ(job.Executed(Seconds{100}).count(), 0.0);
  EXPECT_DOUBLE_EQ(job.TotalExecuted(Seconds{100}).count(), 30.0);
}

// earlier_waits (the released simulator's last_pending_time less the
// current wait): waits count only once the job has run since its last
// promotion. Submitted at 0 and started at 10: that wait is not counted.
// Run 10..20, wait 20..30 (counted), run 30..40, wait 40..50, promoted at
// 50 (reset; the wait cut by the promotion is gone with it), wait 50..60
// with nothing executed since (not counted), start at 60.
TEST(JobTest, EarlierWaitsCountOnlyAfterARunSinceThePromotion) {
  Job job(Spec(1, 0));
  job.Start(Seconds{10}, {0});
  EXPECT_DOUBLE_EQ(job.earlier_waits().count(), 0.0);
  job.Preempt(Seconds{20});
  job.Start(Seconds{30}, {0});
  EXPECT_DOUBLE_EQ(job.earlier_waits().count(), 10.0);
  job.Preempt(Seconds{40});
  job.set_queue(1);
  job.Promote(Seconds{50});
  EXPECT_DOUBLE_EQ(job.earlier_waits().count(), 0.0);
  job.Start(Seconds{60}, {0});
  EXPECT_DOUBLE_EQ(job.earlier_waits().count(), 0.0);
}

}  // namespace
}  // namespace tiresias

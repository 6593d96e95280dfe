// Job control in the scheduling core, worked out by hand: no-preempt jobs
// are never victims, held jobs never start, requeue is a preemption.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "sched/scheduler.h"
#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Harness;
using testing::HarnessOptions;
using testing::Preempted;
using testing::Started;

void Submit(Harness& h, JobId id, int gpus, double t, bool no_preempt) {
  JobSpec spec{id, gpus, Seconds{t}, std::nullopt, ""};
  spec.no_preempt = no_preempt;
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{t}).ok());
}

// 4 GPUs, threshold 100 GPU-s. A (4 GPUs) starts at 0 and is demoted at
// t = 25 (4 x 25 = 100). B (2 GPUs) arrives at 30 in Q1: with A
// preemptible, B preempts A at 30; with A no-preempt, B waits until A ends
// (at 50) and only then starts.
TEST(NoPreemptTest, RunningNoPreemptJobIsNeverAVictim) {
  for (bool no_preempt : {false, true}) {
    SCOPED_TRACE(no_preempt ? "no-preempt" : "preemptible");
    Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
    Submit(h, 1, 4, 0, no_preempt);
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
    EXPECT_TRUE(h.At(25).empty());  // demoted, nobody waits
    EXPECT_EQ(h.job(1).queue(), 1);
    Submit(h, 2, 2, 30, false);
    Decisions d = h.At(30);
    if (!no_preempt) {
      EXPECT_THAT(Preempted(d), ElementsAre(1));
      EXPECT_THAT(Started(d), ElementsAre(2));
      continue;
    }
    EXPECT_TRUE(d.empty());
    EXPECT_TRUE(h.job(1).running());
    h.Finish(1, 50);
    EXPECT_THAT(Started(h.At(50)), ElementsAre(2));
  }
}

// 4 GPUs. A (2 GPUs, no-preempt) and B (2 GPUs) run, both demoted to Q1.
// C (4 GPUs, Q0) cannot have A's GPUs, so it does not fit and preempts no
// one (B keeps running too: preempting B alone would not make room).
// D (2 GPUs, Q0) then takes B's GPUs.
TEST(NoPreemptTest, JobThatWouldNeedANoPreemptJobsGpusPreemptsNoOne) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  Submit(h, 1, 2, 0, true);
  Submit(h, 2, 2, 0, false);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  h.At(50);  // both demoted at 50 (2 x 50 = 100)
  Submit(h, 3, 4, 60, false);
  EXPECT_TRUE(h.At(60).empty());
  Submit(h, 4, 2, 70, false);
  Decisions d = h.At(70);
  EXPECT_THAT(Preempted(d), ElementsAre(2));
  EXPECT_THAT(Started(d), ElementsAre(4));
  EXPECT_TRUE(h.job(1).running());
}

// A held job is passed over however high its priority; released, it starts
// at the next pass.
TEST(HoldTest, HeldJobNeverStartsUntilReleased) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  h.Submit(1, 4, 0);
  ASSERT_TRUE(h.scheduler().Hold(1).ok());
  EXPECT_TRUE(h.scheduler().held(1));
  h.Submit(2, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(2));
  EXPECT_TRUE(h.At(10).empty());
  EXPECT_EQ(h.scheduler().num_waiting(), 0);  // the held job waits apart
  ASSERT_TRUE(h.scheduler().Release(1, Seconds{20}).ok());
  EXPECT_FALSE(h.scheduler().held(1));
  // Job 2 (20 GPU-s, still in Q0) runs ahead of job 1 in Q0's list, so
  // job 1 (4 GPUs) waits for it to end.
  EXPECT_TRUE(h.At(20).empty());
  h.Finish(2, 30);
  EXPECT_THAT(Started(h.At(30)), ElementsAre(1));
}

TEST(HoldTest, OnlyWaitingJobsCanBeHeld) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  h.Submit(1, 1, 0);
  h.At(0);
  absl::Status held = h.scheduler().Hold(1);
  EXPECT_EQ(held.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(h.scheduler().Hold(9).code(), absl::StatusCode::kNotFound);
  // Holding twice and releasing a job not held change nothing.
  h.Submit(2, 1, 5);
  ASSERT_TRUE(h.scheduler().Hold(2).ok());
  ASSERT_TRUE(h.scheduler().Hold(2).ok());
  ASSERT_TRUE(h.scheduler().Release(2, Seconds{6}).ok());
  ASSERT_TRUE(h.scheduler().Release(2, Seconds{6}).ok());
  EXPECT_THAT(Started(h.At(6)), ElementsAre(2));
}

// A held job can be removed (cancelled) while held.
TEST(HoldTest, HeldJobCanBeRemoved) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  h.Submit(1, 1, 0);
  ASSERT_TRUE(h.scheduler().Hold(1).ok());
  ASSERT_TRUE(h.scheduler().Remove(1, Seconds{1}, h.cluster()).ok());
  EXPECT_TRUE(h.job(1).finished());
  EXPECT_TRUE(h.At(2).empty());
}

// Requeue stops a running job as a preemption: its GPUs are free at once,
// its executed time kept, and the next pass starts it again (it is the
// only job), as a resumption.
TEST(RequeueTest, RunningJobIsPreemptedAndRunsAgain) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  h.Submit(1, 2, 0);
  h.At(0);
  ASSERT_TRUE(h.scheduler().Requeue(1, Seconds{10}, h.cluster()).ok());
  EXPECT_EQ(h.job(1).state(), JobState::kPreempted);
  EXPECT_EQ(h.job(1).preemptions(), 1);
  EXPECT_DOUBLE_EQ(h.job(1).TotalExecuted(Seconds{10}).count(), 10.0);
  EXPECT_EQ(h.cluster().free_gpus(), 4);
  Decisions d = h.At(10);
  ASSERT_THAT(Started(d), ElementsAre(1));
  EXPECT_TRUE(d.started[0].resumed);
  EXPECT_EQ(h.scheduler().Requeue(9, Seconds{11}, h.cluster()).code(),
            absl::StatusCode::kNotFound);
  h.Submit(2, 1, 11);
  EXPECT_EQ(h.scheduler().Requeue(2, Seconds{11}, h.cluster()).code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace tiresias

// Hand-computed timelines for the scheduling core (Tiresias-L and the
// mechanics every policy shares). Each comment works the timeline out.
#include "sched/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAreArray;
using testing::Harness;
using testing::HarnessOptions;
using testing::Preempted;
using testing::Started;

HarnessOptions TiresiasL(std::vector<double> thresholds,
                         double knob = INFINITY) {
  HarnessOptions o;
  o.policy = "tiresias-l";
  o.scheduler.queues = *QueueConfig::Create(std::move(thresholds));
  o.scheduler.promote_knob = knob;
  return o;
}

// 4 GPUs, threshold 3600 GPU-s. A (2 GPUs), B, C (1 GPU) start at 0.
// D (2 GPUs, t=100) and E (1 GPU, t=200) wait: the cluster is full and all
// are in Q1, where jobs that ran go first.
// t=1800: A's attained service 2 x 1800 = 3600 reaches the bound: demoted;
//   D (Q1) takes A's GPUs. E still waits (B, C, D fill the cluster).
// t=3600: B, C (1 x 3600) and D (2 x 1800) reach the bound together. Q1 holds
//   only E; Q2 in first-start order is A(0) B(0) C(0) D(1800). E (1) + A (2)
//   + B (1) fill 4 GPUs: C and D are preempted.
TEST(TiresiasLTest, DemotesAtThresholdOverGpusAndStartsNewcomer) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({3600}));
  h.Submit(1, 2, 0);  // A
  h.Submit(2, 1, 0);  // B
  h.Submit(3, 1, 0);  // C
  Decisions d = h.At(0);
  EXPECT_THAT(Started(d), ElementsAre(1, 2, 3));
  EXPECT_EQ(h.next_wakeup(), 1800.0);

  h.Submit(4, 2, 100);  // D
  EXPECT_TRUE(h.At(100).empty());
  h.Submit(5, 1, 200);  // E
  EXPECT_TRUE(h.At(200).empty());
  EXPECT_EQ(h.next_wakeup(), 1800.0);

  std::vector<GpuId> a_gpus = h.job(1).gpus();
  d = h.At(1800);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(4));
  EXPECT_THAT(h.job(4).gpus(), UnorderedElementsAreArray(a_gpus));
  EXPECT_EQ(h.job(1).queue(), 1);
  EXPECT_DOUBLE_EQ(h.job(1).AttainedGpuSeconds(Seconds{1800}), 3600.0);
  EXPECT_EQ(h.job(5).state(), JobState::kPending);
  EXPECT_EQ(h.next_wakeup(), 3600.0);

  d = h.At(3600);
  EXPECT_THAT(Preempted(d), ElementsAre(3, 4));
  EXPECT_THAT(Started(d), ElementsAre(1, 5));
  EXPECT_TRUE(d.started[0].resumed || d.started[1].resumed);
  EXPECT_EQ(h.job(2).queue(), 1);
  EXPECT_EQ(h.job(4).queue(), 1);
  // E runs in Q1 for 3600 s on one GPU; nothing else is bounded.
  EXPECT_EQ(h.next_wakeup(), 7200.0);
}

// 4 GPUs: J1 (3 GPUs) runs; J2 (2 GPUs) cannot fit and is skipped, so J3
// (1 GPU), which arrived later, starts at once.
TEST(TiresiasLTest, SkipsJobThatDoesNotFit) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({3600}));
  h.Submit(1, 3, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 2, 5);
  EXPECT_TRUE(h.At(5).empty());
  h.Submit(3, 1, 6);
  EXPECT_THAT(Started(h.At(6)), ElementsAre(3));
  EXPECT_EQ(h.job(2).state(), JobState::kPending);
  // When J1 finishes, J2 gets its GPUs.
  h.Finish(1, 50);
  EXPECT_THAT(Started(h.At(50)), ElementsAre(2));
}

// 4 GPUs, threshold 100 GPU-s. A (4 GPUs) is demoted at 25 and the four
// 1-GPU jobs B..E (submitted at 1..4) take over; they would be demoted at
// 25 + 100 = 125. With PROMOTEKNOB 2, A has waited 2 x its 25 s of executed
// time at 25 + 50 = 75: it goes back to Q1 with its counters reset, ahead of
// B..E (it started first), and preempts all four. Its new demotion is at
// 75 + 100 / 4 = 100. Without the knob, A waits until 125.
TEST(TiresiasLTest, PromoteKnobReturnsStarvedJobToFirstQueue) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({100}, 2.0));
  h.Submit(1, 4, 0);
  h.At(0);
  for (int id = 2; id <= 5; ++id) h.Submit(id, 1, id - 1);
  h.At(4);
  EXPECT_EQ(h.next_wakeup(), 25.0);
  Decisions d = h.At(25);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2, 3, 4, 5));
  EXPECT_EQ(h.next_wakeup(), 75.0);

  d = h.At(75);
  EXPECT_THAT(Preempted(d), ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(Started(d), ElementsAre(1));
  const Job& a = h.job(1);
  EXPECT_EQ(a.promotions(), 1);
  EXPECT_EQ(a.queue(), 0);
  EXPECT_DOUBLE_EQ(a.Executed(Seconds{75}).count(), 0.0);
  EXPECT_DOUBLE_EQ(a.TotalExecuted(Seconds{75}).count(), 25.0);
  EXPECT_EQ(h.next_wakeup(), 100.0);
}

TEST(TiresiasLTest, WithoutKnobStarvedJobWaitsForDemotions) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({100}));
  h.Submit(1, 4, 0);
  h.At(0);
  for (int id = 2; id <= 5; ++id) h.Submit(id, 1, id - 1);
  h.At(4);
  h.At(25);
  EXPECT_EQ(h.next_wakeup(), 125.0);
  Decisions d = h.At(125);
  EXPECT_THAT(Started(d), ElementsAre(1));
  EXPECT_EQ(h.job(1).promotions(), 0);
  EXPECT_EQ(h.job(1).queue(), 1);
}

// The original simulator's preset: K = 3. A 1-GPU job goes Q1 -> Q2 at 3250
// and Q2 -> Q3 at 7200, then is never woken again.
TEST(TiresiasLTest, ThreeQueuesDemoteTwice) {
  HarnessOptions o = TiresiasL({});
  o.scheduler.queues = QueueConfig::OriginalSimulator();
  Harness h(Topology::Uniform(1, 1, 1), o);
  h.Submit(1, 1, 0);
  h.At(0);
  EXPECT_EQ(h.next_wakeup(), 3250.0);
  h.At(3250);
  EXPECT_EQ(h.job(1).queue(), 1);
  EXPECT_EQ(h.next_wakeup(), 7200.0);
  h.At(7200);
  EXPECT_EQ(h.job(1).queue(), 2);
  EXPECT_TRUE(std::isinf(h.next_wakeup()));
}

// A job preempted after 10 s of a 3-GPU run keeps its 30 GPU-s; it demotes
// after (100 - 30) / 3 more seconds of running.
TEST(TiresiasLTest, DemotionInstantCountsEarlierRuns) {
  Harness h(Topology::Uniform(1, 1, 3), TiresiasL({100}));
  h.Submit(1, 3, 0);
  h.At(0);
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 100.0 / 3);
  ASSERT_TRUE(h.scheduler().Remove(1, Seconds{1}, h.cluster()).ok());
  EXPECT_TRUE(std::isinf(h.next_wakeup()));
  EXPECT_EQ(h.cluster().free_gpus(), 3);
}

TEST(SchedulerTest, RejectsBadSubmissions) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({100}));
  EXPECT_FALSE(h.scheduler().Submit(JobSpec{1, 0}, Seconds{0}).ok());
  ASSERT_TRUE(h.scheduler().Submit(JobSpec{1, 1}, Seconds{0}).ok());
  absl::Status dup = h.scheduler().Submit(JobSpec{1, 1}, Seconds{0});
  EXPECT_EQ(dup.message(), "job 1 already exists");
  EXPECT_EQ(h.scheduler().Finish(9, Seconds{1}, h.cluster()).message(),
            "job 9 not found");
  EXPECT_EQ(h.scheduler().Finish(1, Seconds{1}, h.cluster()).message(),
            "job 1 is pending, not running");

  HarnessOptions o;
  o.policy = "srtf";
  Harness oracle(Topology::Uniform(1, 1, 4), o);
  EXPECT_EQ(oracle.scheduler().Submit(JobSpec{1, 1}, Seconds{0}).message(),
            "policy srtf needs job durations; job 1 has none");
}

TEST(SchedulerTest, PassWithNothingNewDecidesNothing) {
  Harness h(Topology::Uniform(1, 1, 2), TiresiasL({100}));
  h.Submit(1, 1, 0);
  EXPECT_FALSE(h.At(0).empty());
  EXPECT_TRUE(h.At(1).empty());
  EXPECT_EQ(h.scheduler().num_running(), 1);
  EXPECT_EQ(h.scheduler().num_waiting(), 0);
}

}  // namespace
}  // namespace tiresias

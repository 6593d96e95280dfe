// Scheduler::Retune: new queues and PROMOTEKNOB on a live scheduler, with
// hand-worked timelines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "sched/gittins.h"
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

HarnessOptions TiresiasL(std::vector<double> thresholds, double knob = INFINITY) {
  HarnessOptions o;
  o.policy = "tiresias-l";
  o.scheduler.queues = *QueueConfig::Create(std::move(thresholds));
  o.scheduler.promote_knob = knob;
  return o;
}

Scheduler::Tuning MakeTuning(std::vector<double> thresholds,
                             double knob = INFINITY) {
  return {*QueueConfig::Create(std::move(thresholds)), knob,
          QueueOrder::kStable};
}

// 2 GPUs, threshold 3600. A and B (1 GPU) start at 0; C (1 GPU) waits from
// 100, all in Q0 (A and B reach the bound only at 3600).
// t=1000: thresholds become 500. A and B have attained 1000 > 500: they
//   are in Q1 now, so C (Q0) takes the GPU of the last of Q1's list, B.
//   C's demotion is at 1000 + 500 / 1 = 1500.
TEST(RetuneTest, NewThresholdsRequeueByAttainedServiceAndPreempt) {
  Harness h(Topology::Uniform(1, 1, 2), TiresiasL({3600}));
  h.Submit(1, 1, 0);
  h.Submit(2, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  h.Submit(3, 1, 100);
  EXPECT_TRUE(h.At(100).empty());
  EXPECT_EQ(h.next_wakeup(), 3600.0);

  ASSERT_TRUE(h.scheduler().Retune(MakeTuning({500}), Seconds{1000}).ok());
  EXPECT_EQ(h.job(1).queue(), 1);
  EXPECT_EQ(h.job(2).queue(), 1);
  EXPECT_EQ(h.job(3).queue(), 0);
  Decisions d = h.At(1000);
  EXPECT_THAT(Preempted(d), ElementsAre(2));
  EXPECT_THAT(Started(d), ElementsAre(3));
  // Moved jobs are the pass's requeued ones (the master updates their
  // records from these).
  EXPECT_THAT(d.requeued, ::testing::UnorderedElementsAre(1, 2));
  EXPECT_EQ(h.next_wakeup(), 1500.0);
  EXPECT_EQ(h.scheduler().tuning().queues.thresholds(),
            std::vector<double>{500});
}

// Raising the bound moves a job back up: A (1 GPU) alone ran 0-200 under a
// bound of 100 and sits in Q1; under a bound of 1000 its 200 GPU-seconds
// are in Q0 and it is demoted at 200 + 800 = 1000. K = 3 at once: with
// 1000:5000 it is in Q0, then Q1 from 1000 to 1000 + 4000 = 5000.
TEST(RetuneTest, RaisedBoundMovesAJobUpAndKCanChange) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({100}));
  h.Submit(1, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  EXPECT_TRUE(h.At(100).empty());  // demoted, nothing else to run
  EXPECT_EQ(h.job(1).queue(), 1);
  ASSERT_TRUE(h.scheduler().Retune(MakeTuning({1000, 5000}), Seconds{200}).ok());
  EXPECT_EQ(h.job(1).queue(), 0);
  EXPECT_EQ(h.next_wakeup(), 1000.0);
  EXPECT_TRUE(h.At(1000).empty());
  EXPECT_EQ(h.job(1).queue(), 1);
  EXPECT_EQ(h.next_wakeup(), 5000.0);
}

// 1 GPU, threshold 100, no knob. A starts at 0; B comes at 50. t=100: A is
// demoted and B (Q0) preempts it; A waits in Q1 with 100 s executed from
// 100. B's demotion is at 200; nothing else is due.
// t=150: knob 0.25: A's wait reaches 0.25 x 100 = 25 s at 125, already
// past, so its promotion is due at 150 itself: it goes back to Q0 (behind
// the running B, which keeps its GPU: stable order).
TEST(RetuneTest, ANewKnobArmsPromotionsOfWaitingJobs) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({100}));
  h.Submit(1, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 1, 50);
  EXPECT_TRUE(h.At(50).empty());
  Decisions d = h.At(100);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
  EXPECT_EQ(h.next_wakeup(), 200.0);

  ASSERT_TRUE(h.scheduler().Retune(MakeTuning({100}, 0.25), Seconds{150}).ok());
  EXPECT_EQ(h.next_wakeup(), 150.0);
  d = h.At(150);
  EXPECT_THAT(Started(d), IsEmpty());
  EXPECT_EQ(h.job(1).queue(), 0);
  EXPECT_EQ(h.job(1).promotions(), 1);
  EXPECT_EQ(h.scheduler().tuning().promote_knob, 0.25);
}

// A held job stays held through a retune: 1 GPU, A runs from 0, B is held.
// At 10 the bound becomes 5: A (10 GPU-s) goes to Q1, B (Q0) would take
// its GPU but is held: nothing changes. Released at 20, B preempts A.
TEST(RetuneTest, AHeldJobStaysHeld) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({3600}));
  h.Submit(1, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 1, 5);
  ASSERT_TRUE(h.scheduler().Hold(2).ok());
  EXPECT_TRUE(h.At(5).empty());
  ASSERT_TRUE(h.scheduler().Retune(MakeTuning({5}), Seconds{10}).ok());
  Decisions d = h.At(10);
  EXPECT_THAT(d.requeued, ElementsAre(1));  // A's queue changed
  EXPECT_THAT(Started(d), IsEmpty());
  EXPECT_THAT(Preempted(d), IsEmpty());
  EXPECT_TRUE(h.scheduler().held(2));
  ASSERT_TRUE(h.scheduler().Release(2, Seconds{20}).ok());
  d = h.At(20);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
}

TEST(RetuneTest, RefusesAKnobThatIsNotPositiveAndChangesNothing) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({100}));
  h.Submit(1, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  for (double knob : {0.0, -1.0, std::nan("")}) {
    EXPECT_FALSE(h.scheduler().Retune(MakeTuning({5}, knob), Seconds{10}).ok());
  }
  EXPECT_EQ(h.scheduler().tuning().queues.thresholds(),
            std::vector<double>{100});
  EXPECT_EQ(h.next_wakeup(), 100.0);
}

// Tiresias-G rebuilds its per-queue index tables (one per bounded queue:
// 3 for K = 4, where there was 1): the preempted A waits in Q1 and its
// rank reads tables_[1], past the end of the old tables (ASan and the
// hardened build stop there without Policy::SetQueues).
TEST(RetuneTest, TiresiasGRebuildsItsTables) {
  HarnessOptions o = TiresiasL({3600});
  o.policy = "tiresias-g";
  o.policy_options.gittins_samples = {100, 200, 400, 800, 1600, 3200, 6400,
                                      12800, 25600, 51200, 102400};
  Harness h(Topology::Uniform(1, 1, 2), o);
  h.Submit(1, 1, 0);
  h.Submit(2, 2, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  ASSERT_TRUE(
      h.scheduler().Retune(MakeTuning({50, 500, 5000}), Seconds{100}).ok());
  EXPECT_EQ(h.job(1).queue(), 1);  // 100 GPU-seconds: in [50, 500)
  // Each queue's index comes from a table for the new bounds (the old one
  // was for 3600 GPU-s, and there was no table for Q1 at all).
  const GittinsDistribution dist(
      GittinsDistribution::Quantiles(o.policy_options.gittins_samples, 2000));
  const Policy& g = h.scheduler().policy();
  EXPECT_DOUBLE_EQ(g.Key(h.job(1), Seconds{100}).k1,
                   -dist.MakeTable(500).Lookup(100));
  EXPECT_DOUBLE_EQ(g.Key(h.job(2), Seconds{100}).k1,
                   -dist.MakeTable(50).Lookup(0));
  EXPECT_NE(dist.MakeTable(50).Lookup(0), dist.MakeTable(3600).Lookup(0));
  // B (2 GPUs, Q0) outranks A (Q1) now and takes the whole server.
  Decisions d = h.At(100);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
}

}  // namespace
}  // namespace tiresias

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using testing::Harness;
using testing::HarnessOptions;
using testing::Preempted;
using testing::Started;

// Tiresias-G with the released simulator's index, samples 100, 200, 5000
// (indexes 563.5418 below 100 GPU-s, 289.8551 below 200, then 0: see
// gittins_test.cc), one GPU, K = 3 (3250:7200).
// t=0:   A starts.
// t=150: B arrives with the higher index (attained 0 against A's 150): in
//        the same queue it preempts the running A (the paper's stable order
//        would not).
// t=300: no event but a pass: B has 150 GPU-s, A 150: equal indexes, and
//        the earlier submit goes first: A preempts B.
TEST(OriginalGittinsTest, EveryJobOfAQueueIsReSortedByIndexThenSubmit) {
  HarnessOptions o;
  o.policy = "tiresias-g";
  o.scheduler.queues = QueueConfig::OriginalSimulator();
  o.policy_options.gittins_samples = {100, 200, 5000};
  o.policy_options.gittins_original_index = true;
  Harness h(Topology::Uniform(1, 1, 1), o);
  h.Submit(1, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 1, 150);
  Decisions d = h.At(150);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
  d = h.At(300);
  EXPECT_THAT(Preempted(d), ElementsAre(2));
  EXPECT_THAT(Started(d), ElementsAre(1));

  // The paper's index under the stable order: B waits behind the running A.
  o.policy_options.gittins_original_index = false;
  Harness paper(Topology::Uniform(1, 1, 1), o);
  paper.Submit(1, 1, 0);
  EXPECT_THAT(Started(paper.At(0)), ElementsAre(1));
  paper.Submit(2, 1, 150);
  EXPECT_TRUE(paper.At(150).empty());
}

}  // namespace
}  // namespace tiresias

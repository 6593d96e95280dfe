// One hand-computed scenario per baseline policy, plus Tiresias-G's order.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sched/policy.h"
#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Harness;
using testing::HarnessOptions;
using testing::Preempted;
using testing::Started;

HarnessOptions Policy(std::string name) {
  HarnessOptions o;
  o.policy = std::move(name);
  return o;
}

// 4 GPUs. J1 (2) runs. J2 (4) cannot fit. J3 (1) arrives: yarn-cs blocks it
// behind J2 (head of line); fifo skips J2 and starts J3.
TEST(YarnCsTest, BlocksBehindHeadOfLine) {
  Harness h(Topology::Uniform(1, 1, 4), Policy("yarn-cs"));
  h.Submit(1, 2, 0);
  h.Submit(2, 4, 1);
  h.Submit(3, 1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(1));
  h.Finish(1, 10);
  EXPECT_THAT(Started(h.At(10)), ElementsAre(2));
  EXPECT_EQ(h.job(3).state(), JobState::kPending);
  h.Finish(2, 20);
  EXPECT_THAT(Started(h.At(20)), ElementsAre(3));
}

TEST(FifoTest, SkipsJobsThatDoNotFit) {
  Harness h(Topology::Uniform(1, 1, 4), Policy("fifo"));
  h.Submit(1, 2, 0);
  h.Submit(2, 4, 1);
  h.Submit(3, 1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(1, 3));
  h.Finish(1, 10);
  EXPECT_TRUE(h.At(10).empty());  // J2 needs all 4; J3 holds one
  h.Finish(3, 12);
  EXPECT_THAT(Started(h.At(12)), ElementsAre(2));
}

// 2 servers x 4 GPUs. J1 and J2 (3 GPUs each) fill 3 of each server. J3
// (2 GPUs) arrives: one GPU is free on each server. Best-effort starts it
// across both at once; fifo and yarn-cs, which consolidate, wait for a
// server with two free GPUs (J1 ends at 50).
TEST(BestEffortTest, StartsAsSoonAsEnoughGpusAreFreeAnywhere) {
  for (const char* name : {"best-effort", "fifo", "yarn-cs"}) {
    HarnessOptions o = Policy(name);
    o.placement = (*MakePolicy(name, {}))->traits().default_placement;
    Harness h(Topology::Uniform(1, 2, 4), o);
    h.Submit(1, 3, 0);
    h.Submit(2, 3, 1);
    EXPECT_THAT(Started(h.At(1)), ElementsAre(1, 2)) << name;
    h.Submit(3, 2, 5);
    if (std::string_view(name) == "best-effort") {
      EXPECT_THAT(Started(h.At(5)), ElementsAre(3));
      EXPECT_THAT(h.job(3).gpus(), ElementsAre(3, 7));
    } else {
      EXPECT_TRUE(h.At(5).empty()) << name;
      h.Finish(1, 50);
      EXPECT_THAT(Started(h.At(50)), ElementsAre(3)) << name;
    }
  }
}

// FIFO order without head-of-line blocking: J2 (4 GPUs) cannot start while
// J1 runs, and J3 (1 GPU), behind it, starts at once; J2 starts when both
// are done.
TEST(BestEffortTest, AJobThatCannotStartDoesNotBlockThoseBehind) {
  HarnessOptions o = Policy("best-effort");
  o.placement = "pack";
  Harness h(Topology::Uniform(1, 2, 2), o);
  h.Submit(1, 2, 0);
  h.Submit(2, 4, 1);
  h.Submit(3, 1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(1, 3));
  h.Finish(1, 10);
  EXPECT_TRUE(h.At(10).empty());
  h.Finish(3, 12);
  EXPECT_THAT(Started(h.At(12)), ElementsAre(2));
}

TEST(NonPreemptiveTest, NeverPreempts) {
  for (const char* name : {"yarn-cs", "fifo", "best-effort", "sjf"}) {
    Harness h(Topology::Uniform(1, 1, 1), Policy(name));
    h.Submit(1, 1, 0, 1000);
    h.At(0);
    h.Submit(2, 1, 1, 1);
    EXPECT_THAT(h.At(1).preempted, IsEmpty()) << name;
  }
}

// One GPU busy until 10; three 1-GPU jobs wait with durations 50, 5, 20:
// sjf runs them shortest first.
TEST(SjfTest, ShortestDurationFirst) {
  Harness h(Topology::Uniform(1, 1, 1), Policy("sjf"));
  h.Submit(1, 1, 0, 10);
  h.At(0);
  h.Submit(2, 1, 1, 50);
  h.Submit(3, 1, 2, 5);
  h.Submit(4, 1, 3, 20);
  h.At(3);
  h.Finish(1, 10);
  EXPECT_THAT(Started(h.At(10)), ElementsAre(3));
  h.Finish(3, 15);
  EXPECT_THAT(Started(h.At(15)), ElementsAre(4));
}

// 4 GPUs: a 4-GPU job runs; a 1-GPU job arrives and preempts it.
TEST(SmallestFirstTest, FewerGpusPreemptMore) {
  Harness h(Topology::Uniform(1, 1, 4), Policy("smallest-first"));
  h.Submit(1, 4, 0);
  h.At(0);
  h.Submit(2, 1, 5);
  Decisions d = h.At(5);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
}

// 1 GPU. A (100 s) runs from 0. B (30 s) arrives at 50: A has 50 s left,
// B 30: B preempts. C (25 s) arrives at 60: B has 20 s left: no preemption.
TEST(SrtfTest, ShortestRemainingTimePreempts) {
  Harness h(Topology::Uniform(1, 1, 1), Policy("srtf"));
  h.Submit(1, 1, 0, 100);
  h.At(0);
  h.Submit(2, 1, 50, 30);
  Decisions d = h.At(50);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
  h.Submit(3, 1, 60, 25);
  EXPECT_TRUE(h.At(60).empty());
}

// 2 GPUs. A (2 GPUs, 100 s) runs from 0. At 10, B (1 GPU, 150 s) arrives.
// srsf: A's remaining service 2 x 90 = 180 > 150: B preempts A.
// srtf: A's remaining time 90 < 150: A keeps running.
TEST(SrsfTest, RemainingServiceCountsGpus) {
  Harness srsf(Topology::Uniform(1, 1, 2), Policy("srsf"));
  Harness srtf(Topology::Uniform(1, 1, 2), Policy("srtf"));
  for (Harness* h : {&srsf, &srtf}) {
    h->Submit(1, 2, 0, 100);
    h->At(0);
    h->Submit(2, 1, 10, 150);
  }
  EXPECT_THAT(Preempted(srsf.At(10)), ElementsAre(1));
  EXPECT_TRUE(srtf.At(10).empty());
}

// 1 GPU. Continuous LAS: A runs from 0; B arrives at 10 with no service and
// preempts A (10 GPU-s). At 15 C arrives: B has 5, A 10, C 0: C runs.
TEST(LasTest, LeastAttainedServiceFirst) {
  Harness h(Topology::Uniform(1, 1, 1), Policy("las"));
  h.Submit(1, 1, 0);
  h.At(0);
  h.Submit(2, 1, 10);
  EXPECT_THAT(Preempted(h.At(10)), ElementsAre(1));
  h.Submit(3, 1, 15);
  Decisions d = h.At(15);
  EXPECT_THAT(Preempted(d), ElementsAre(2));
  EXPECT_THAT(Started(d), ElementsAre(3));
  EXPECT_TRUE(std::isinf(h.next_wakeup()));  // no queues, no wakeups
}

// Tiresias-G with samples {1, 2, 3, 4, 10} GPU-s and one threshold of 5:
// in Q1 (D = 5), G(0) = 4/14 and G(2) = 2/5 (gittins_test.cc works them
// out). A job with 2 GPU-s attained outranks a fresh one; in the last queue
// least attained service goes first.
TEST(TiresiasGTest, OrdersByGittinsIndexWithinQueue) {
  PolicyOptions o;
  o.queues = *QueueConfig::Create({5});
  o.gittins_samples = {1, 2, 3, 4, 10};
  o.gittins_min_samples = 5;
  auto policy = *MakePolicy("tiresias-g", o);
  Job fresh(JobSpec{1, 1, Seconds{0}});
  Job served(JobSpec{2, 1, Seconds{5}});
  served.Start(Seconds{10}, {0});
  served.Preempt(Seconds{12});  // 2 GPU-s attained
  EXPECT_DOUBLE_EQ(policy->Key(fresh, Seconds{20}).k1, -4.0 / 14);
  EXPECT_DOUBLE_EQ(policy->Key(served, Seconds{20}).k1, -0.4);
  EXPECT_LT(policy->Key(served, Seconds{20}), policy->Key(fresh, Seconds{20}));

  Job big(JobSpec{3, 1, Seconds{0}});
  big.Start(Seconds{0}, {0});
  big.Preempt(Seconds{8});
  big.set_queue(1);
  Job bigger(JobSpec{4, 1, Seconds{0}});
  bigger.Start(Seconds{0}, {0});
  bigger.Preempt(Seconds{9});
  bigger.set_queue(1);
  EXPECT_LT(policy->Key(big, Seconds{20}), policy->Key(bigger, Seconds{20}));
}

// With fewer samples than the minimum, Tiresias-G orders as Tiresias-L:
// jobs that ran first, by first start.
TEST(TiresiasGTest, FallsBackToLasOrderWithFewSamples) {
  PolicyOptions o;
  o.gittins_samples = {1, 2, 3};
  o.gittins_min_samples = 10;
  auto g = *MakePolicy("tiresias-g", o);
  auto l = *MakePolicy("tiresias-l", o);
  Job never(JobSpec{1, 1, Seconds{0}});
  Job ran(JobSpec{2, 1, Seconds{5}});
  ran.Start(Seconds{10}, {0});
  ran.Preempt(Seconds{12});
  for (auto* p : {g.get(), l.get()}) {
    EXPECT_LT(p->Key(ran, Seconds{20}), p->Key(never, Seconds{20}))
        << p->name();
  }
}

// Learning from finished jobs: after enough finishes the table is built and
// LearnFinished reports that keys changed.
TEST(TiresiasGTest, LearnsDistributionFromFinishedJobs) {
  PolicyOptions o;
  o.gittins_min_samples = 3;
  auto g = *MakePolicy("tiresias-g", o);
  std::vector<bool> rebuilt;
  for (int i = 0; i < 6; ++i) {
    Job j(JobSpec{i, 1, Seconds{0}});
    j.Start(Seconds{0}, {0});
    j.Finish(Seconds{10.0 * (i + 1)});
    rebuilt.push_back(g->LearnFinished(j, Seconds{100}));
  }
  // Built at 3 samples, rebuilt when the count doubles (6).
  EXPECT_THAT(rebuilt, ElementsAre(false, false, true, false, false, true));
}

// One queue (K = 1), so with a distribution Tiresias-G orders by least
// attained service, and without one it falls back to Tiresias-L order. On
// 1 GPU: F runs; R ran 10 s and waits; N never ran. F's finish is the first
// sample: the scheduler must re-key the waiting jobs, so N (0 GPU-s) starts
// rather than R (10 GPU-s), which Tiresias-L order would have picked.
TEST(TiresiasGTest, RekeysWaitingJobsWhenDistributionArrives) {
  HarnessOptions o = Policy("tiresias-g");
  o.scheduler.queues = *QueueConfig::Create({});
  o.policy_options.gittins_min_samples = 1;
  Harness h(Topology::Uniform(1, 1, 1), o);
  Job f(JobSpec{1, 1, Seconds{0}, Seconds{20}});
  f.Start(Seconds{0}, {0});
  Job r(JobSpec{2, 1, Seconds{0}});
  r.Start(Seconds{2}, {0});
  r.Preempt(Seconds{12});
  Job n(JobSpec{3, 1, Seconds{5}});
  ASSERT_TRUE(h.cluster().Allocate(1, std::vector<GpuId>{0}).ok());
  for (const Job* j : {&f, &r, &n}) {
    ASSERT_TRUE(h.scheduler().Restore(*j, Seconds{12}).ok());
  }
  EXPECT_TRUE(h.At(12).empty());  // F started first: it keeps its GPU
  h.Finish(1, 20);
  EXPECT_THAT(Started(h.At(20)), ElementsAre(3));
}

TEST(RegistryTest, KnowsEveryPolicyAndRejectsOthers) {
  EXPECT_THAT(PolicyNames(),
              ElementsAre("tiresias-l", "tiresias-g", "yarn-cs", "fifo",
                          "best-effort", "smallest-first", "sjf", "srtf",
                          "srsf", "las"));
  for (const std::string& name : PolicyNames()) {
    auto p = MakePolicy(name, {});
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
  auto bad = MakePolicy("lifo", {});
  EXPECT_EQ(bad.status().message(),
            "unknown policy \"lifo\"; expected one of tiresias-l, tiresias-g, "
            "yarn-cs, fifo, best-effort, smallest-first, sjf, srtf, srsf, "
            "las");
  EXPECT_EQ((*MakePolicy("tiresias-l", {}))->traits().default_placement,
            "profiled");
  EXPECT_EQ((*MakePolicy("yarn-cs", {}))->traits().default_placement,
            "consolidate");
  EXPECT_EQ((*MakePolicy("best-effort", {}))->traits().default_placement,
            "pack");
}

}  // namespace
}  // namespace tiresias

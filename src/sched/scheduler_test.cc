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
// t=3600: B, C (1 x 3600) and D (2 x 1800) reach the bound together and
//   join the tail of Q2, behind A (waiting there since 1800). Q1 holds only
//   E, which displaces the last of Q2's list, D; then A (2) displaces C.
//   E (1) + A (2) + B (1) fill 4 GPUs: C and D are preempted.
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
// time at 25 + 50 = 75: it goes back to Q1 with its counters reset. Under
// the stable order it joins Q1's tail, behind the running B..E, so it waits
// until they are demoted at 125; then it preempts all four (its new
// demotion: 125 + 100 / 4 = 150).
TEST(TiresiasLTest, PromoteKnobReturnsStarvedJobToFirstQueue) {
  Harness h(Topology::Uniform(1, 1, 4), TiresiasL({100}, 2.0));
  h.Submit(1, 4, 0);
  h.At(0);
  for (int id = 2; id <= 5; ++id) h.Submit(id, 1, id - 1);
  h.At(4);
  Decisions d = h.At(25);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_EQ(h.next_wakeup(), 75.0);

  d = h.At(75);
  EXPECT_TRUE(d.empty());
  EXPECT_THAT(d.requeued, ElementsAre(1));
  const Job& a = h.job(1);
  EXPECT_EQ(a.promotions(), 1);
  EXPECT_EQ(a.queue(), 0);
  EXPECT_DOUBLE_EQ(a.Executed(Seconds{75}).count(), 0.0);
  EXPECT_EQ(h.next_wakeup(), 125.0);

  d = h.At(125);
  EXPECT_THAT(Preempted(d), ElementsAre(2, 3, 4, 5));
  EXPECT_THAT(Started(d), ElementsAre(1));
  EXPECT_EQ(h.next_wakeup(), 150.0);
}

// The released simulator's PROMOTEKNOB counts every wait since the last
// promotion (SchedulerOptions::original_promotion_wait). 1 GPU, bound 300
// GPU-s, knob 0.5. A runs 0..300 (demoted at 300), is preempted by B at
// 310, waits until B ends at 350 (40 s), runs again until C preempts it at
// 360: executed 320 s. Counting the current wait only, A is promoted at
// 360 + 160 = 520; counting the earlier 40 s too, at 480 (C, demoted only
// at 660, keeps running meanwhile).
TEST(TiresiasLTest, OriginalPromoteKnobCountsEveryWaitSinceThePromotion) {
  for (bool original : {false, true}) {
    SCOPED_TRACE(original ? "original" : "paper");
    HarnessOptions options = TiresiasL({300}, 0.5);
    options.scheduler.original_promotion_wait = original;
    Harness h(Topology::Uniform(1, 1, 1), options);
    h.Submit(1, 1, 0);
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
    h.At(300);
    EXPECT_EQ(h.job(1).queue(), 1);
    h.Submit(2, 1, 310);
    EXPECT_THAT(Preempted(h.At(310)), ElementsAre(1));
    h.Finish(2, 350);
    EXPECT_THAT(Started(h.At(350)), ElementsAre(1));
    h.Submit(3, 1, 360);
    EXPECT_THAT(Preempted(h.At(360)), ElementsAre(1));
    EXPECT_DOUBLE_EQ(h.job(1).earlier_waits().count(), 40.0);
    EXPECT_EQ(h.next_wakeup(), original ? 480.0 : 520.0);
    h.At(479);
    EXPECT_EQ(h.job(1).promotions(), 0);
    h.At(480);
    EXPECT_EQ(h.job(1).promotions(), original ? 1 : 0);
    h.At(520);
    EXPECT_EQ(h.job(1).promotions(), 1);
    EXPECT_EQ(h.job(1).queue(), 0);
    EXPECT_DOUBLE_EQ(h.job(1).earlier_waits().count(), 0.0);
  }
}

// A promotion is never due before the pass that computes it. 1 GPU, bound
// 300, knob 0.5. A runs 0..300, B preempts it at 310: due at 310 + 155 =
// 465. Held at 320 (no wakeup while held) and released at 600, A is past
// due: the scheduler asks for a pass at 600 (not at 465, in the past) and
// promotes it there.
TEST(TiresiasLTest, APromotionPastDueIsMadeAtTheNextPassNotBefore) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({300}, 0.5));
  h.Submit(1, 1, 0);
  h.At(0);
  h.At(300);
  h.Submit(2, 1, 310);
  EXPECT_THAT(Preempted(h.At(310)), ElementsAre(1));
  EXPECT_EQ(h.next_wakeup(), 465.0);
  ASSERT_TRUE(h.scheduler().Hold(1).ok());
  ASSERT_TRUE(h.scheduler().Release(1, Seconds{600}).ok());
  EXPECT_EQ(h.next_wakeup(), 600.0);
  h.At(600);
  EXPECT_EQ(h.job(1).promotions(), 1);
  EXPECT_EQ(h.job(1).queue(), 0);
}

// The same under the start-time order: at 75 A goes ahead of B..E (it
// started first) and preempts all four at once. Its new demotion is at
// 75 + 100 / 4 = 100.
TEST(TiresiasLTest, PromoteKnobUnderStartTimeOrderPreemptsAtOnce) {
  HarnessOptions options = TiresiasL({100}, 2.0);
  options.scheduler.queue_order = QueueOrder::kStartTime;
  Harness h(Topology::Uniform(1, 1, 4), options);
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

// A job preempted after 10 s of a 3-GPU run keeps its 30 GPU-s: resumed at
// 50, it is demoted after (100 - 30) / 3 more seconds, at 50 + 70/3.
TEST(TiresiasLTest, DemotionInstantCountsEarlierRuns) {
  Harness h(Topology::Uniform(1, 1, 3), TiresiasL({100}));
  Job job(JobSpec{1, 3, Seconds{0}});
  job.Start(Seconds{0}, {0, 1, 2});
  job.Preempt(Seconds{10});
  ASSERT_TRUE(h.scheduler().Restore(job, Seconds{10}).ok());
  EXPECT_THAT(Started(h.At(50)), ElementsAre(1));
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 50 + 70.0 / 3);
  h.At(50 + 70.0 / 3);
  EXPECT_EQ(h.job(1).queue(), 1);
  EXPECT_NEAR(h.job(1).AttainedGpuSeconds(Seconds{50 + 70.0 / 3}), 100,
              1e-9);
}

TEST(TiresiasLTest, RemoveFreesGpusAndWakeups) {
  Harness h(Topology::Uniform(1, 1, 3), TiresiasL({100}));
  h.Submit(1, 3, 0);
  h.At(0);
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 100.0 / 3);
  ASSERT_TRUE(h.scheduler().Remove(1, Seconds{1}, h.cluster()).ok());
  EXPECT_TRUE(std::isinf(h.next_wakeup()));
  EXPECT_EQ(h.cluster().free_gpus(), 3);
  EXPECT_TRUE(h.job(1).finished());
}

// PROMOTEKNOB only lifts jobs below queue 0: a preempted Q1 job (10 s run,
// knob 2) gets no promotion at 10 + 20 = 30; the only wakeup is the running
// job's demotion at 10 + 100.
TEST(TiresiasLTest, KnobIgnoresJobsAlreadyInFirstQueue) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({100}, 2.0));
  Job waiting(JobSpec{1, 1, Seconds{0}});
  waiting.Start(Seconds{0}, {0});
  waiting.Preempt(Seconds{10});
  ASSERT_TRUE(h.scheduler().Restore(waiting, Seconds{10}).ok());
  Job running(JobSpec{2, 1, Seconds{0}});
  running.Start(Seconds{10}, {0});
  ASSERT_TRUE(h.cluster().Allocate(2, std::vector<GpuId>{0}).ok());
  ASSERT_TRUE(h.scheduler().Restore(running, Seconds{10}).ok());
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 110);
}

// Restores a job that has been running since `start` on `gpus`.
void RestoreRunning(Harness& h, JobSpec spec, double start,
                    std::vector<GpuId> gpus, int queue = 0) {
  Job job(std::move(spec));
  job.set_queue(queue);
  job.Start(Seconds{start}, gpus);
  ASSERT_TRUE(h.cluster().Allocate(job.id(), gpus).ok());
  ASSERT_TRUE(h.scheduler().Restore(job, Seconds{start}).ok());
}

// srtf, consolidate, 3 servers x 4 GPUs, at t=100. Running: A (GPUs 0-3,
// 10 s left), B (4-5, 20 s left), C (6-7, 100 s left). Waiting: W1 (5 GPUs,
// 50 s) and W2 (1 GPU, 500 s). W1 outranks C but cannot be consolidated
// even with C's GPUs (one whole free server of 4), so it preempts no one;
// C outranks W2, keeps its GPUs, and W2 starts on the free server.
TEST(SchedulerTest, SkippedJobDoesNotHandVictimsToLowerPriority) {
  HarnessOptions o;
  o.policy = "srtf";
  o.placement = "consolidate";
  Harness h(Topology::Uniform(1, 3, 4), o);
  RestoreRunning(h, JobSpec{1, 4, Seconds{0}, Seconds{110}}, 0, {0, 1, 2, 3});
  RestoreRunning(h, JobSpec{2, 2, Seconds{0}, Seconds{120}}, 0, {4, 5});
  RestoreRunning(h, JobSpec{3, 2, Seconds{0}, Seconds{200}}, 0, {6, 7});
  h.Submit(4, 5, 50, 50);
  h.Submit(5, 1, 60, 500);
  Decisions d = h.At(100);
  EXPECT_THAT(d.preempted, IsEmpty());
  EXPECT_THAT(Started(d), ElementsAre(5));
  EXPECT_THAT(h.job(5).gpus(), ElementsAre(8));
  EXPECT_TRUE(h.job(3).running());
}

// tiresias-l, profiled, 2 servers x 8 GPUs. Eight 1-GPU jobs in Q2 hold
// four GPUs on each server (jobs 1-4 on s0, 5-8 on s1, started in id
// order). A VGG16 job needing 8 GPUs arrives in Q1: it fits by count but
// needs a whole server, so the lowest-priority Q2 jobs are set aside until
// one server is free: 8, 7, 6, 5, all on s1. They are preempted; jobs 1-4
// keep running, and a later 1-GPU job in Q1 takes a free GPU on s0 (GPU 4).
// The displaced jobs wait behind it, in their list order, and in the same
// pass 5, 6 and 7 move to s0's three GPUs left; 8 waits.
TEST(SchedulerTest, HigherQueueJobPreemptsToGetAWholeServer) {
  HarnessOptions o = TiresiasL({100});
  o.placement = "profiled";
  Harness h(Topology::Uniform(1, 2, 8), o);
  for (int id = 1; id <= 8; ++id) {
    const GpuId gpu = id <= 4 ? id - 1 : 8 + (id - 5);
    RestoreRunning(h, JobSpec{id, 1, Seconds{0}}, id, {gpu}, /*queue=*/1);
  }
  h.Submit(100, 8, 20, std::nullopt, "vgg16");
  h.Submit(101, 1, 21);
  Decisions d = h.At(21);
  EXPECT_THAT(Preempted(d), ElementsAre(5, 6, 7, 8));
  EXPECT_THAT(Started(d), ElementsAre(5, 6, 7, 100, 101));
  EXPECT_THAT(h.job(100).gpus(),
              ElementsAre(8, 9, 10, 11, 12, 13, 14, 15));
  EXPECT_THAT(h.job(101).gpus(), ElementsAre(4));
  for (int id = 1; id <= 7; ++id) EXPECT_TRUE(h.job(id).running()) << id;
  EXPECT_THAT(h.job(5).gpus(), ElementsAre(5));
  EXPECT_THAT(h.job(7).gpus(), ElementsAre(7));
  EXPECT_TRUE(h.job(8).waiting());
}

// A corrected record (the master moving a run's start to when the agent
// really started it) re-keys the job and moves its demotion: started at 0
// by decision, really at 5, a 1-GPU job with bound 100 demotes at 105.
TEST(SchedulerTest, ReplaceCorrectsAccountingAndWakeups) {
  Harness h(Topology::Uniform(1, 1, 1), TiresiasL({100}));
  h.Submit(1, 1, 0);
  h.At(0);
  EXPECT_EQ(h.next_wakeup(), 100);
  Job corrected(JobSpec{1, 1, Seconds{0}});
  corrected.Start(Seconds{5}, h.job(1).gpus());
  ASSERT_TRUE(h.scheduler().Replace(corrected, Seconds{6}).ok());
  EXPECT_EQ(h.next_wakeup(), 105);
  EXPECT_DOUBLE_EQ(h.job(1).Executed(Seconds{6}).count(), 1);
  EXPECT_EQ(h.scheduler().Replace(Job(JobSpec{9, 1}), Seconds{6}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(h.scheduler().num_running(), 1);
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

namespace tiresias {
namespace {

// Scheduler::SetPlacer (a refreshed PACKLIMIT) applies to jobs already
// waiting. 2 servers x 4 GPUs, profiled placement. A and B (3 GPUs,
// ResNet50) take one server each, leaving one free GPU on each. V (2 GPUs,
// VGG16, skew 0.744) and R (2 GPUs, ResNet50, 0.092) wait.
//  - PACKLIMIT 0.8: V is packed across the two free GPUs; R finds none.
//  - PACKLIMIT lowered to 0.4 after V and R were submitted: V must now be
//    consolidated and cannot be; R is packed across the two. (Had V kept
//    the scheme read at submission, "pack", its failure would have ruled
//    out R, a job of the same scheme and size.)
std::unique_ptr<Placer> Profiled(double pack_limit) {
  return *MakePlacer("profiled", PlacementOptions{.pack_limit = pack_limit});
}

void SubmitSetPlacerJobs(Harness& h) {
  h.Submit(1, 3, 0, std::nullopt, "resnet50");
  h.Submit(2, 3, 0, std::nullopt, "resnet50");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  h.Submit(3, 2, 1, std::nullopt, "vgg16");
  h.Submit(4, 2, 2, std::nullopt, "resnet50");
}

TEST(SchedulerTest, SetPlacerReschemesWaitingJobs) {
  HarnessOptions o = TiresiasL({3600});
  o.placement = "profiled";
  Harness fixed(Topology::Uniform(1, 2, 4), o);
  fixed.scheduler().SetPlacer(Profiled(0.8));
  SubmitSetPlacerJobs(fixed);
  EXPECT_THAT(Started(fixed.At(2)), ElementsAre(3));

  Harness learnt(Topology::Uniform(1, 2, 4), o);
  learnt.scheduler().SetPlacer(Profiled(0.8));
  SubmitSetPlacerJobs(learnt);
  learnt.scheduler().SetPlacer(Profiled(0.4));
  EXPECT_THAT(Started(learnt.At(2)), ElementsAre(4));
  EXPECT_EQ(learnt.scheduler().placer().SchemeFor(learnt.job(3)),
            "consolidate");
}

}  // namespace
}  // namespace tiresias

// Priority levels (QOS) in the scheduling core, worked out by hand: a
// higher level comes before every lower one (and so preempts it), a
// per-user GPU limit holds a user's jobs back without holding back anyone
// else's, levels change under running jobs; and a property over random
// workloads.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "sched/pending_reason.h"
#include "sched/scheduler.h"
#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using testing::Harness;
using testing::HarnessOptions;
using ::testing::IsEmpty;
using testing::Preempted;
using testing::Started;

void Submit(Harness& h, JobId id, int gpus, double t, std::string qos,
            std::string user = "") {
  JobSpec spec{.id = id, .num_gpus = gpus, .submit_time = Seconds{t}};
  spec.qos = std::move(qos);
  spec.user = std::move(user);
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{t}).ok());
}

std::vector<QosSpec> Levels() {
  return {QosSpec{.name = "high", .priority = 10},
          QosSpec{.name = "scavenger", .priority = -5}};
}

// 4 GPUs, threshold 100 GPU-s. A (4 GPUs, no QOS) starts at 0; at 10 it
// has 40 GPU-s, still in Q1. B (4 GPUs) arrives at 10 in Q1 too. Without
// a QOS, B waits behind its running peer (the stable order never preempts
// a peer of the same queue) until A is demoted at 25; with QOS high, B
// comes before every level-0 job and preempts A at once.
TEST(QosTest, AHigherLevelPreemptsAPeerOfItsQueue) {
  for (const std::string qos : {"", "high"}) {
    SCOPED_TRACE(qos.empty() ? "no QOS" : qos);
    Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
    ASSERT_TRUE(h.scheduler().SetQos(Levels(), Seconds{0}).ok());
    Submit(h, 1, 4, 0, "");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
    Submit(h, 2, 4, 10, qos);
    Decisions d = h.At(10);
    if (qos.empty()) {
      EXPECT_TRUE(d.empty());
      d = h.At(25);  // A demoted: B (Q1) now outranks it
    }
    EXPECT_THAT(Preempted(d), ElementsAre(1));
    EXPECT_THAT(Started(d), ElementsAre(2));
  }
}

// 4 GPUs. C (2 GPUs, scavenger) and E (2 GPUs, no QOS) run from 0. D (4
// GPUs, no QOS) arrives at 5, in Q1 beside them. D's level-0 key comes
// after E (a running peer) but before C (level 5 behind): D may displace
// only C, which leaves it 2 GPUs short, so it preempts no one. When E
// ends at 20, D takes E's GPUs and C's: C is preempted.
TEST(QosTest, AScavengerIsTheFirstVictim) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  ASSERT_TRUE(h.scheduler().SetQos(Levels(), Seconds{0}).ok());
  Submit(h, 1, 2, 0, "scavenger");
  Submit(h, 2, 2, 0, "");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  Submit(h, 3, 4, 5, "");
  EXPECT_TRUE(h.At(5).empty());
  h.Finish(2, 20);
  Decisions d = h.At(20);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(3));
}

// 8 GPUs; QOS high allows 4 GPUs per user. Alice's jobs 1 and 2 (2 GPUs
// each) start; her job 3 waits with 4 GPUs free, naming the limit; Bob's
// job 4 of the same QOS starts (the limit is per user). When job 1 ends,
// job 3 starts.
TEST(QosTest, APerUserLimitHoldsBackOnlyThatUser) {
  Harness h(Topology::Uniform(1, 1, 8), testing::TiresiasL100());
  std::vector<QosSpec> levels = Levels();
  levels[0].max_gpus_per_user = 4;
  ASSERT_TRUE(h.scheduler().SetQos(levels, Seconds{0}).ok());
  Submit(h, 1, 2, 0, "high", "alice");
  Submit(h, 2, 2, 0, "high", "alice");
  Submit(h, 3, 2, 0, "high", "alice");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  EXPECT_EQ(h.cluster().free_gpus(), 4);
  auto reasons = ExplainWaiting(h.scheduler(), h.cluster());
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].second.kind, PendingReasonKind::kQosLimit);
  EXPECT_EQ(FormatPendingReason(reasons[0].second),
            "qos high: alice's running jobs hold 4 of at most 4 GPUs per "
            "user (needs 2 GPUs)");
  EXPECT_EQ(PendingReasonKindName(reasons[0].second.kind), "qos-limit");
  Submit(h, 4, 2, 1, "high", "bob");
  EXPECT_THAT(Started(h.At(1)), ElementsAre(4));
  h.Finish(1, 30);
  EXPECT_THAT(Started(h.At(30)), ElementsAre(3));
}

// Under FIFO (head-of-line blocking), a job its QOS's limit holds back
// blocks no one: Bob's job behind it starts.
TEST(QosTest, ALimitedJobBlocksNoOneUnderFifo) {
  HarnessOptions o;
  o.policy = "fifo";
  Harness h(Topology::Uniform(1, 1, 4), o);
  ASSERT_TRUE(
      h.scheduler()
          .SetQos({QosSpec{.name = "q", .max_gpus_per_user = 2}}, Seconds{0})
          .ok());
  Submit(h, 1, 2, 0, "q", "alice");
  Submit(h, 2, 1, 1, "q", "alice");
  Submit(h, 3, 1, 2, "", "bob");
  EXPECT_THAT(Started(h.At(2)), ElementsAre(1, 3));
  EXPECT_FALSE(h.job(2).running());
}

// The limit counts a user's running jobs even where the job would displace
// them (as Slurm's limit on running jobs does): on 4 GPUs with a limit of
// 4, Alice's job 1 (2 GPUs, demoted to Q2 at 50) runs; her job 2 (4 GPUs,
// Q1) would displace it, but 2 + 4 > 4: job 2 waits and preempts no one,
// and starts when job 1 ends.
TEST(QosTest, TheLimitCountsRunningJobsItWouldDisplace) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  ASSERT_TRUE(
      h.scheduler()
          .SetQos(
              {QosSpec{.name = "high", .priority = 10, .max_gpus_per_user = 4}},
              Seconds{0})
          .ok());
  Submit(h, 1, 2, 0, "high", "alice");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.At(50);  // demoted at 50 (2 x 50 = 100)
  EXPECT_EQ(h.job(1).queue(), 1);
  Submit(h, 2, 4, 60, "high", "alice");
  EXPECT_TRUE(h.At(60).empty());
  h.Finish(1, 70);
  EXPECT_THAT(Started(h.At(70)), ElementsAre(2));
}

// Levels change under running and waiting jobs: raising a waiting job's
// QOS makes it preempt at the next pass; dropping the QOS (not in the new
// list) puts its jobs back at level 0.
TEST(QosTest, ChangingLevelsRekeysEveryJob) {
  Harness h(Topology::Uniform(1, 1, 4), testing::TiresiasL100());
  ASSERT_TRUE(
      h.scheduler()
          .SetQos({QosSpec{.name = "urgent", .priority = 0}}, Seconds{0})
          .ok());
  Submit(h, 1, 4, 0, "");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  Submit(h, 2, 4, 5, "urgent");
  EXPECT_TRUE(h.At(5).empty());  // same level: behind its running peer
  ASSERT_TRUE(
      h.scheduler()
          .SetQos({QosSpec{.name = "urgent", .priority = 3}}, Seconds{6})
          .ok());
  Decisions d = h.At(6);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
  // Gone: both at level 0 again, job 2 (running, Q1) keeps its place.
  ASSERT_TRUE(h.scheduler().SetQos({}, Seconds{7}).ok());
  EXPECT_TRUE(h.At(7).empty());
  EXPECT_EQ(h.scheduler().QosUseOf(2).qos, -1);
  EXPECT_FALSE(
      h.scheduler()
          .SetQos({QosSpec{.name = "a"}, QosSpec{.name = "a"}}, Seconds{8})
          .ok());
}

// VCs a and b each hold one 4-GPU server of two. B's jobs X (scavenger)
// and Y (no QOS) both run: b's walk puts Y (level 0) on its quota and X
// borrows a's server. A's job Z reclaims X. Without QOS, X (first by id)
// would hold the quota and Y would be reclaimed.
TEST(QosTest, AVcsLowerLevelBorrowsAndIsReclaimedFirst) {
  for (bool with_qos : {false, true}) {
    SCOPED_TRACE(with_qos ? "X scavenger" : "no QOS");
    Harness h(Topology::Uniform(1, 2, 4), testing::VcOptions());
    ASSERT_TRUE(h.scheduler()
                    .SetVcs({VcSpec{.name = "a", .cells = {4}},
                             VcSpec{.name = "b", .cells = {4}}},
                            h.cluster().topology())
                    .ok());
    ASSERT_TRUE(h.scheduler().SetQos(Levels(), Seconds{0}).ok());
    JobSpec x{.id = 1, .num_gpus = 4, .submit_time = Seconds{0}};
    x.vc = "b";
    if (with_qos) x.qos = "scavenger";
    JobSpec y{.id = 2, .num_gpus = 4, .submit_time = Seconds{0}};
    y.vc = "b";
    ASSERT_TRUE(h.scheduler().Submit(x, Seconds{0}).ok());
    ASSERT_TRUE(h.scheduler().Submit(y, Seconds{0}).ok());
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
    testing::SubmitInVc(h, 3, 4, 10, "a");
    Decisions d = h.At(10);
    EXPECT_THAT(Preempted(d), ElementsAre(with_qos ? 1 : 2));
    EXPECT_THAT(Started(d), ElementsAre(3));
  }
}

// The level and the per-user share share one key field, the share clamped
// below 2^40 quanta: a user at the clamp has no next step, so the
// scheduler asks for no pass for it (not one in the past, at every pass).
TEST(QosTest, AUserShareAtTheClampAsksForNoPass) {
  HarnessOptions o = testing::TiresiasL100();
  o.scheduler.fair_per_user = true;
  o.scheduler.fair_quantum = 1e-9;  // 2^40 quanta after ~1,100 GPU-s
  Harness h(Topology::Uniform(1, 1, 4), o);
  ASSERT_TRUE(h.scheduler().SetQos(Levels(), Seconds{0}).ok());
  Submit(h, 1, 1, 0, "high", "alice");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.At(2000);
  EXPECT_GT(h.next_wakeup(), 2000);
}

// Random workloads of 1-GPU jobs (placement is then never in the way), at
// every pass: no user's running jobs of a QOS hold more than its limit;
// and under a preemptive policy, no waiting job that its limit lets start
// has a higher level than a running job that is preemptible.
TEST(QosTest, PropertyLimitsHoldAndLevelsComeFirst) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    Harness h(Topology::Uniform(1, 2, 4), testing::TiresiasL100());
    const std::vector<QosSpec> levels = {
        QosSpec{.name = "hi", .priority = 5, .max_gpus_per_user = 2},
        QosSpec{.name = "lo", .priority = -5},
        QosSpec{.name = "mid", .priority = 0, .max_gpus_per_user = 3}};
    ASSERT_TRUE(h.scheduler().SetQos(levels, Seconds{0}).ok());
    const char* names[] = {"", "hi", "lo", "mid"};
    const char* users[] = {"u1", "u2", "u3"};
    std::set<JobId> running;
    JobId next = 1;
    for (int step = 0; step < 60; ++step) {
      const double t = step * 7.0;
      const int arrivals = static_cast<int>(rng() % 3);
      for (int a = 0; a < arrivals; ++a) {
        Submit(h, next++, 1, t, names[rng() % 4], users[rng() % 3]);
      }
      if (!running.empty() && rng() % 2 == 0) {
        auto it = running.begin();
        std::advance(it, rng() % running.size());
        h.Finish(*it, t);
      }
      h.At(t);
      running.clear();
      std::map<std::pair<std::string, std::string>, int> used;
      double worst_running_level = -1e9;  // the lowest level running
      for (const Job& job : h.scheduler().jobs()) {
        if (!job.running()) continue;
        running.insert(job.id());
        ++used[{job.spec().qos, job.spec().user}];
        const int q = h.scheduler().QosUseOf(job.id()).qos;
        const double level = q < 0 ? 0 : -levels[q].priority;
        worst_running_level = std::max(worst_running_level, level);
      }
      for (const QosSpec& q : levels) {
        for (const char* u : users) {
          const int gpus = used[{q.name, u}];
          EXPECT_LE(gpus, q.max_gpus_per_user) << q.name << " " << u;
        }
      }
      for (const Job& job : h.scheduler().jobs()) {
        if (job.running() || job.finished()) continue;
        const Scheduler::QosUse use = h.scheduler().QosUseOf(job.id());
        if (use.qos >= 0 &&
            use.user_gpus + 1 > levels[use.qos].max_gpus_per_user) {
          continue;  // its limit holds it back
        }
        const double level = use.qos < 0 ? 0 : -levels[use.qos].priority;
        EXPECT_GE(level, worst_running_level)
            << "job " << job.id() << " waits at a higher level than a "
            << "running one";
      }
    }
  }
}

}  // namespace
}  // namespace tiresias

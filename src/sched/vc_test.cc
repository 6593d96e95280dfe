// Virtual clusters in the scheduling core: hand-computed cases for cells,
// reclaim, borrowing and lending limits and weights, and properties over
// random multi-VC workloads (sched/scheduler.h, core/cells.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "absl/strings/str_cat.h"
#include "core/rng.h"
#include "core/shape.h"
#include "place/placement.h"
#include "sched/scheduler.h"
#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Ge;
using testing::Harness;
using testing::HarnessOptions;
using ::testing::Lt;
using testing::Preempted;
using testing::Started;
using testing::SubmitInVc;
using testing::VcOptions;

VcSpec Vc(std::string name, std::string cells, int borrow = kUnlimited,
          int lend = kUnlimited, double weight = 1) {
  return VcSpec{std::move(name), *ParseCells(cells), weight, borrow, lend};
}

std::vector<int> Servers(Harness& h, JobId id) {
  std::vector<int> servers;
  for (GpuId g : h.job(id).gpus()) {
    servers.push_back(h.cluster().topology().ServerOf(g));
  }
  return servers;
}

TEST(VcFileTest, ParsesQuotasLimitsAndFairShare) {
  auto vcs = ParseVcs(
      "# teams\n"
      "vision quota=2x8,4x1 weight=2 borrow=8   # two servers, four GPUs\n"
      "\n"
      "speech quota=8 lend=all fair=user fair-quantum=300\n",
      "vcs.txt");
  ASSERT_TRUE(vcs.ok()) << vcs.status();
  ASSERT_EQ(vcs->size(), 2u);
  EXPECT_THAT((*vcs)[0].cells, ElementsAre(8, 8, 1, 1, 1, 1));
  EXPECT_EQ((*vcs)[0].quota_gpus(), 20);
  EXPECT_EQ((*vcs)[0].weight, 2);
  EXPECT_EQ((*vcs)[0].borrow_limit, 8);
  EXPECT_EQ((*vcs)[0].lend_limit, kUnlimited);
  EXPECT_FALSE((*vcs)[0].fair_per_user);
  EXPECT_THAT((*vcs)[1].cells, ElementsAre(8));
  EXPECT_TRUE((*vcs)[1].fair_per_user);
  EXPECT_EQ((*vcs)[1].fair_quantum, 300);
  EXPECT_EQ(CellsText((*vcs)[0].cells), "2x8,4x1");
}

TEST(VcFileTest, RefusesWithTheLineAndTheField) {
  auto error = [](std::string_view text) {
    return std::string(ParseVcs(text, "vcs.txt").status().message());
  };
  EXPECT_EQ(error("a quota=1x8\na quota=1x4\n"),
            "vcs.txt:2: VC \"a\" is defined twice");
  EXPECT_THAT(error("a quota=1x8 colour=red\n"),
              ::testing::StartsWith("vcs.txt:1: unknown field \"colour\""));
  EXPECT_EQ(error("a weight=2\n"),
            "vcs.txt:1: field quota is missing (quota=2x8,4x1)");
  EXPECT_THAT(error("\n\na quota=1x8 weight=0\n"),
              ::testing::StartsWith("vcs.txt:3: field weight"));
  EXPECT_THAT(error("a quota=1x8 borrow=-1\n"),
              ::testing::HasSubstr("field borrow: expected a GPU count"));
  EXPECT_THAT(error("a quota=3x6\n"), ::testing::HasSubstr("power of two"));
  EXPECT_THAT(error("a quota=1x8 fair=team\n"),
              ::testing::HasSubstr("field fair: expected user or job"));
  EXPECT_EQ(error("# nothing\n"), "vcs.txt: no virtual cluster defined");
  EXPECT_THAT(error("quota=1x8\n"), ::testing::HasSubstr("name first"));
}

// 2 servers x 4 GPUs; A and B own one 4-GPU cell each. B's 8 one-GPU jobs:
// jobs 1-4 fill B's cell (bound to server 0, its home), jobs 5-8 borrow
// A's idle quota (server 1). At t=10 A's 4-GPU job binds A's cell to the
// one free block, server 1, and the four borrowers there are checkpointed
// in the same pass.
TEST(VcTest, LenderReclaimsItsQuotaFromBorrowersInOnePass) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions());
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({Vc("a", "1x4"), Vc("b", "1x4")}, h.cluster().topology())
          .ok());
  for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "b");
  Decisions d = h.At(0);
  EXPECT_THAT(Started(d), ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
  for (JobId id = 1; id <= 4; ++id) {
    EXPECT_TRUE(h.scheduler().Guaranteed(id)) << id;
    EXPECT_THAT(Servers(h, id), ElementsAre(0));
  }
  for (JobId id = 5; id <= 8; ++id) EXPECT_FALSE(h.scheduler().Guaranteed(id));
  EXPECT_EQ(h.scheduler().Usage(1).borrowed, 4);

  SubmitInVc(h, 9, 4, 10, "a");
  d = h.At(10);
  EXPECT_THAT(Preempted(d), ElementsAre(5, 6, 7, 8));
  EXPECT_THAT(Started(d), ElementsAre(9));
  EXPECT_TRUE(h.scheduler().Guaranteed(9));
  EXPECT_THAT(Servers(h, 9), Each(1));
  EXPECT_EQ(h.scheduler().Usage(1).borrowed, 0);
  EXPECT_EQ(h.scheduler().reclaims(), 4);
  // A's job ends: its cell is unbound, and B borrows it again.
  h.Finish(9, 20);
  EXPECT_EQ(h.scheduler().BoundCells(0)[0].server, -1);
  d = h.At(20);
  EXPECT_THAT(Started(d), ElementsAre(5, 6, 7, 8));
}

// B may borrow 2 GPUs at most; A lends 3 at most: B's borrowers stop at 2,
// then (borrow limit lifted) at 3.
TEST(VcTest, BorrowingAndLendingLimits) {
  {
    Harness h(Topology::Uniform(1, 2, 4), VcOptions());
    ASSERT_TRUE(h.scheduler()
                    .SetVcs({Vc("a", "1x4"), Vc("b", "1x4", /*borrow=*/2)},
                            h.cluster().topology())
                    .ok());
    for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "b");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5, 6));
    EXPECT_EQ(h.scheduler().Usage(1).borrowed, 2);
  }
  // The lending limit, also under a policy that does not preempt (which
  // once ignored it).
  for (const char* policy : {"tiresias-l", "fifo"}) {
    HarnessOptions o = VcOptions();
    o.policy = policy;
    Harness h(Topology::Uniform(1, 2, 4), o);
    ASSERT_TRUE(
        h.scheduler()
            .SetVcs({Vc("a", "1x4", kUnlimited, /*lend=*/3), Vc("b", "1x4")},
                    h.cluster().topology())
            .ok());
    for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "b");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5, 6, 7)) << policy;
    EXPECT_EQ(h.scheduler().Usage(1).borrowed, 3) << policy;
  }
}

// Review cases (each failed before its fix).

// A's borrowing is capped at its share (4 of 8: B wants 8 too) in the
// first borrowers' walk; B's 8-GPU job does not fit the 4 left, so the
// second, uncapped walk gives A 2 more, up to its limit of 6 (its first
// walk's 4 counted once).
TEST(VcTest, SecondBorrowersWalkCountsTheFirstOnce) {
  Harness h(Topology::Uniform(1, 1, 8), VcOptions());
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({Vc("l", "1x8"), Vc("a", "", /*borrow=*/6), Vc("b", "")},
                  h.cluster().topology())
          .ok());
  for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "a");
  SubmitInVc(h, 9, 8, 0, "b");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(h.scheduler().Usage(1).borrowed, 6);
}

// One 4-GPU server lent by L. F's user (fair share, steps of 100 GPU-s)
// is a step in at 30 s; P's newcomer, in the same queue, does not preempt
// F's borrower for that: between VCs only the policy's order counts.
TEST(VcTest, FairShareStepsDoNotOrderOtherVcsBorrowers) {
  Harness h(Topology::Uniform(1, 1, 4), VcOptions());
  VcSpec fair = Vc("f", "");
  fair.fair_per_user = true;
  fair.fair_quantum = 100;
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({Vc("l", "1x4"), fair, Vc("p", "")}, h.cluster().topology())
          .ok());
  SubmitInVc(h, 1, 4, 0, "f");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  SubmitInVc(h, 2, 4, 30, "p");
  EXPECT_TRUE(h.At(30).empty());
}

// B's exclusive borrower reserves the whole server; A's job on its own
// quota there reclaims it, instead of failing to bind at every pass.
// And a job that is never preempted does not borrow at all.
TEST(VcTest, ExclusiveBorrowersAreReclaimedAndNoPreemptJobsDoNotBorrow) {
  Harness h(Topology::Uniform(1, 1, 4), VcOptions());
  ASSERT_TRUE(h.scheduler()
                  .SetVcs({Vc("a", "4x1"), Vc("b", "")}, h.cluster().topology())
                  .ok());
  JobSpec exclusive{.id = 1, .num_gpus = 1, .exclusive = true};
  exclusive.vc = "b";
  ASSERT_TRUE(h.scheduler().Submit(exclusive, Seconds{0}).ok());
  JobSpec stubborn{.id = 2, .num_gpus = 1, .no_preempt = true};
  stubborn.vc = "b";
  ASSERT_TRUE(h.scheduler().Submit(stubborn, Seconds{0}).ok());
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  SubmitInVc(h, 3, 1, 10, "a");
  const Decisions d = h.At(10);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(3));
  EXPECT_EQ(h.scheduler().bind_failures(), 0);
  EXPECT_EQ(h.job(2).state(), JobState::kPending);
}

// One 8-GPU server, all of it L's quota, idle. A (weight 1) and B (weight
// 3) own nothing and each want 8 GPUs: the 8 lent are shared 2 : 6.
TEST(VcTest, WeightsShareWhatIsLent) {
  Harness h(Topology::Uniform(1, 1, 8), VcOptions());
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({Vc("l", "1x8"), Vc("a", "", kUnlimited, kUnlimited, 1),
                   Vc("b", "", kUnlimited, kUnlimited, 3)},
                  h.cluster().topology())
          .ok());
  for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "a");
  for (JobId id = 11; id <= 18; ++id) SubmitInVc(h, id, 1, 0, "b");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 11, 12, 13, 14, 15, 16));
  // A wants only 1 more after 3 of its jobs are cancelled... 6 of its 8:
  // its demand (2 running + 0 waiting) is under its share, B takes the
  // rest as B's jobs end.
  for (JobId id = 3; id <= 8; ++id) {
    ASSERT_TRUE(h.scheduler().Remove(id, Seconds{5}, h.cluster()).ok());
  }
  h.Finish(11, 10);
  EXPECT_THAT(Started(h.At(10)), ElementsAre(17));
}

// 2 servers x 8. B's quota is eight single GPUs, A's one whole server.
// B's jobs, spread one per cell by `spread`, are packed into one server by
// best-fit binding, so A's 8-GPU job starts at once.
TEST(VcTest, CellsKeepAWholeServerForTheVcThatOwnsOne) {
  Harness h(Topology::Uniform(1, 2, 8), VcOptions("spread"));
  ASSERT_TRUE(h.scheduler()
                  .SetVcs({Vc("a", "1x8", 0), Vc("b", "8x1", 0)},
                          h.cluster().topology())
                  .ok());
  for (JobId id = 1; id <= 8; ++id) SubmitInVc(h, id, 1, 0, "b");
  h.At(0);
  for (JobId id = 1; id <= 8; ++id) EXPECT_THAT(Servers(h, id), ElementsAre(0));
  SubmitInVc(h, 9, 8, 10, "a");
  EXPECT_THAT(Started(h.At(10)), ElementsAre(9));
}

// HiveD's sharing anomaly, and the cells that avoid it. 2 servers x 8,
// consolidate. Without VCs: 16 one-GPU jobs fill both servers, 1-4 and
// 9-12 end, and an 8-GPU job waits with 8 GPUs free, 4 on each server.
// With VCs (A: one whole server; B: eight single GPUs, borrowing): B's
// jobs 1-8 hold B's cells, packed on server 0; 9-16 borrow server 1. When
// A's job comes, A's cell binds server 1 and its 4 borrowers there are
// reclaimed: it starts at once.
TEST(VcTest, NoSharingAnomalyWhereAFlatClusterHasOne) {
  Harness flat(Topology::Uniform(1, 2, 8), VcOptions());
  for (JobId id = 1; id <= 16; ++id) flat.Submit(id, 1, 0);
  EXPECT_EQ(flat.At(0).started.size(), 16u);
  for (JobId id : {1, 2, 3, 4, 9, 10, 11, 12}) flat.Finish(id, 5);
  flat.Submit(17, 8, 10);
  EXPECT_TRUE(flat.At(10).empty());

  Harness h(Topology::Uniform(1, 2, 8), VcOptions());
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({Vc("a", "1x8", 0), Vc("b", "8x1")}, h.cluster().topology())
          .ok());
  for (JobId id = 1; id <= 16; ++id) SubmitInVc(h, id, 1, 0, "b");
  EXPECT_EQ(h.At(0).started.size(), 16u);
  for (JobId id = 1; id <= 8; ++id) {
    EXPECT_TRUE(h.scheduler().Guaranteed(id));
    EXPECT_THAT(Servers(h, id), ElementsAre(0));
  }
  for (JobId id : {1, 2, 3, 4, 9, 10, 11, 12}) h.Finish(id, 5);
  SubmitInVc(h, 17, 8, 10, "a");
  const Decisions d = h.At(10);
  // The reclaimed borrowers fit B's own quota (1-4 left it): they move
  // there in the same pass.
  EXPECT_THAT(Started(d), ElementsAre(13, 14, 15, 16, 17));
  EXPECT_THAT(Preempted(d), ElementsAre(13, 14, 15, 16));
  EXPECT_THAT(Servers(h, 17), Each(1));
  for (JobId id = 13; id <= 16; ++id) {
    EXPECT_TRUE(h.scheduler().Guaranteed(id));
    EXPECT_THAT(Servers(h, id), ElementsAre(0));
  }
}

TEST(VcTest, RefusesUnknownVcsAndQuotasThatDoNotFit) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions());
  absl::Status fit = h.scheduler().SetVcs({Vc("a", "1x4"), Vc("b", "1x4,1x1")},
                                          h.cluster().topology());
  EXPECT_EQ(fit.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(fit.message()),
              ::testing::HasSubstr("do not fit the cluster"));
  EXPECT_FALSE(h.scheduler()
                   .SetVcs({Vc("a", "1x8")}, h.cluster().topology())
                   .ok());  // no 8-GPU server
  ASSERT_TRUE(
      h.scheduler().SetVcs({Vc("a", "2x4")}, h.cluster().topology()).ok());
  JobSpec spec{.id = 1, .num_gpus = 1};
  spec.vc = "nope";
  absl::Status unknown = h.scheduler().Submit(spec, Seconds{0});
  EXPECT_THAT(std::string(unknown.message()),
              ::testing::HasSubstr("no virtual cluster \"nope\""));
}

void SubmitAs(Harness& h, JobId id, double at, std::string user,
              std::string vc = "") {
  JobSpec spec{.id = id, .num_gpus = 1, .submit_time = Seconds{at}};
  spec.user = std::move(user);
  spec.vc = std::move(vc);
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{at}).ok());
}

// Per-user fair share on 4 GPUs, steps of 100 GPU-s. X's four jobs run
// from 0; Y's two come at 10 and wait (X's 40 GPU-s is still step 0, as
// Y's 0). At 25 X's service reaches 100, step 1: Y's jobs (step 0) now
// come first and take the GPUs of X's last two, 3 and 4. Then both users
// gain 2 GPU-s per second: X stays a step ahead and nothing moves.
// Without fair share X keeps all four (every job is in queue 0, where
// running jobs keep their place).
TEST(FairShareTest, UsersNotJobsShareTheGpus) {
  HarnessOptions o = VcOptions("count");
  o.scheduler.fair_per_user = true;
  o.scheduler.fair_quantum = 100;
  Harness h(Topology::Uniform(1, 1, 4), o);
  for (JobId id = 1; id <= 4; ++id) SubmitAs(h, id, 0, "x");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4));
  SubmitAs(h, 5, 10, "y");
  SubmitAs(h, 6, 10, "y");
  EXPECT_TRUE(h.At(10).empty());
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 25);  // X reaches 100 GPU-s
  Decisions d = h.At(25);
  EXPECT_THAT(Preempted(d), ElementsAre(3, 4));
  EXPECT_THAT(Started(d), ElementsAre(5, 6));
  // X: 100 + 2/s reaches 200 at 75; Y: 0 + 2/s reaches 100 at 75.
  EXPECT_DOUBLE_EQ(h.next_wakeup(), 75);
  EXPECT_TRUE(h.At(75).empty());
  EXPECT_TRUE(h.At(125).empty());

  Harness plain(Topology::Uniform(1, 1, 4), VcOptions("count"));
  for (JobId id = 1; id <= 4; ++id) SubmitAs(plain, id, 0, "x");
  plain.At(0);
  SubmitAs(plain, 5, 10, "y");
  SubmitAs(plain, 6, 10, "y");
  plain.At(10);
  EXPECT_TRUE(plain.At(25).empty());
}

// Inside one VC only: a VC with `fair=user` orders its users; another
// without it keeps the policy's order.
TEST(FairShareTest, PerVc) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions("count"));
  VcSpec fair = Vc("fair", "1x4", 0, 0);
  fair.fair_per_user = true;
  fair.fair_quantum = 100;
  ASSERT_TRUE(
      h.scheduler()
          .SetVcs({fair, Vc("plain", "1x4", 0, 0)}, h.cluster().topology())
          .ok());
  for (JobId id = 1; id <= 4; ++id) SubmitAs(h, id, 0, "x", "fair");
  for (JobId id = 11; id <= 14; ++id) SubmitAs(h, id, 0, "x", "plain");
  EXPECT_EQ(h.At(0).started.size(), 8u);
  SubmitAs(h, 5, 10, "y", "fair");
  SubmitAs(h, 15, 10, "y", "plain");
  h.At(10);
  const Decisions d = h.At(25);
  EXPECT_THAT(Preempted(d), ElementsAre(4));
  EXPECT_THAT(Started(d), ElementsAre(5));
}

// A random workload's jobs, replayed by one scheduler without VCs and one
// whose single VC owns every server: every pass decides the same.
TEST(VcTest, OneVcOwningEverythingSchedulesAsWithoutVcs) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    Rng rng(seed);
    const Topology topology = Topology::Uniform(2, 3, 4);
    const std::string placement = seed % 2 ? "consolidate" : "profiled";
    Harness flat(topology, VcOptions(placement));
    Harness one(topology, VcOptions(placement));
    ASSERT_TRUE(one.scheduler().SetVcs({Vc("all", "6x4")}, topology).ok());
    std::vector<std::pair<double, JobId>> running;
    double t = 0;
    for (JobId id = 1; id <= 120; ++id) {
      t += static_cast<double>(rng.Below(900));
      const int gpus = 1 << rng.Below(4);
      const std::string model = rng.Below(2) ? "vgg16" : "resnet50";
      flat.Submit(id, gpus, t, std::nullopt, model);
      JobSpec spec{id, gpus, Seconds{t}, std::nullopt, model};
      spec.vc = "all";
      ASSERT_TRUE(one.scheduler().Submit(spec, Seconds{t}).ok());
      // Finish a running job now and then, the same one in both.
      if (rng.Below(3) == 0) {
        for (const Job& job : flat.scheduler().jobs()) {
          if (job.running()) {
            flat.Finish(job.id(), t);
            one.Finish(job.id(), t);
            break;
          }
        }
      }
      const Decisions a = flat.At(t), b = one.At(t);
      ASSERT_EQ(Started(a), Started(b)) << "seed " << seed << " job " << id;
      ASSERT_EQ(Preempted(a), Preempted(b)) << "seed " << seed << " job " << id;
      for (const StartDecision& s : a.started) {
        ASSERT_EQ(s.gpus, one.job(s.job).gpus()) << "seed " << seed;
      }
    }
  }
}

// Random multi-VC workloads, checked after every pass:
//  - safety: every VC's unbound cells can still be bound at once, and no
//    start was refused for want of a cell;
//  - no VC holds more than its quota on it, nor borrows past its limit;
//  - a guaranteed job sits inside its VC's bound cells, on the physical
//    GPUs its virtual ones map to;
//  - a VC's waiting job never fits its quota's free GPUs (so one whose
//    demand fits gets it within the pass, borrowers reclaimed, and no
//    lender waits for what it lent);
//  - every running job holds its GPUs in the physical cluster.
// With `change_vcs`, the same VCs are set again (ChangeVcs, as the master
// does whenever its cluster changes) before one pass in four: every
// running job keeps its GPUs, and one that held its quota still does.
void CheckPropertiesAtEveryPass(bool change_vcs) {
  int64_t reclaims = 0, borrowing_passes = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Rng rng(seed);
    const int per = seed % 3 == 0 ? 4 : 8;
    const Topology topology =
        Topology::Uniform(1, 2 + static_cast<int>(rng.Below(4)), per);
    // Quotas: cells drawn until the next would not fit; a little left over.
    std::vector<VcSpec> vcs = {Vc("a", ""), Vc("b", ""), Vc("c", "")};
    CellPool pool(topology);
    for (int tries = 0; tries < 30; ++tries) {
      const int size = 1 << rng.Below(4);
      if (size > per || !pool.Bind(size)) continue;
      vcs[rng.Below(3)].cells.push_back(size);
    }
    for (VcSpec& vc : vcs) {
      std::sort(vc.cells.rbegin(), vc.cells.rend());
      if (rng.Below(3) == 0) vc.borrow_limit = static_cast<int>(rng.Below(6));
      if (rng.Below(3) == 0) vc.lend_limit = static_cast<int>(rng.Below(6));
      vc.weight = 1 + static_cast<double>(rng.Below(3));
    }
    Harness h(topology, VcOptions(seed % 2 ? "consolidate" : "spread"));
    ASSERT_TRUE(h.scheduler().SetVcs(vcs, topology).ok());
    Scheduler& s = h.scheduler();
    double t = 0;
    for (JobId id = 1; id <= 150; ++id) {
      t += static_cast<double>(rng.Below(600));
      // Now and then a job that is exclusive or never preempted.
      JobSpec spec{
          .id = id,
          .num_gpus = 1 << static_cast<int>(rng.Below(per == 8 ? 4 : 3)),
          .submit_time = Seconds{t},
          .no_preempt = rng.Below(20) == 0,
          .exclusive = rng.Below(15) == 0};
      spec.vc = vcs[rng.Below(3)].name;
      ASSERT_TRUE(s.Submit(spec, Seconds{t}).ok());
      for (int k = 0; k < 2; ++k) {
        std::vector<JobId> running;
        for (const Job& job : s.jobs()) {
          if (job.running()) running.push_back(job.id());
        }
        if (!running.empty() && rng.Below(2)) {
          h.Finish(running[rng.Below(running.size())], t);
        }
      }
      if (change_vcs && rng.Below(4) == 0) {
        std::map<JobId, std::pair<std::vector<GpuId>, bool>> before;
        for (const Job& job : s.jobs()) {
          if (job.running()) {
            before[job.id()] = {job.gpus(), s.Guaranteed(job.id())};
          }
        }
        ASSERT_TRUE(s.ChangeVcs(vcs, topology, Seconds{t}).ok());
        for (const auto& [id, was] : before) {
          ASSERT_TRUE(h.job(id).running());
          ASSERT_EQ(h.job(id).gpus(), was.first);
          // A borrower may be adopted where its VC's quota has room.
          if (was.second) {
            ASSERT_TRUE(s.Guaranteed(id)) << "seed " << seed << " job " << id;
          }
        }
      }
      h.At(t);
      // A pass may ask for another at once (a borrower it started holds
      // what a VC's job needs): the host runs it.
      for (int again = 0; again < 3 && s.NextWakeup().count() <= t; ++again) {
        h.At(t);
      }
      const std::string where = absl::StrCat("seed ", seed, " after job ", id);
      ASSERT_TRUE(s.UnboundCellsFit()) << where;
      ASSERT_EQ(s.bind_failures(), 0) << where;
      for (int v = 0; v < 3; ++v) {
        const Scheduler::VcUsage usage = s.Usage(v);
        borrowing_passes += usage.borrowed > 0;
        ASSERT_LE(usage.guaranteed, usage.quota) << where;
        ASSERT_LE(usage.borrowed, vcs[v].borrow_limit) << where;
      }
      for (const Job& job : s.jobs()) {
        if (!job.running()) continue;
        for (GpuId g : job.gpus()) {
          ASSERT_EQ(h.cluster().owner(g), job.id()) << where;
        }
        if (!s.Guaranteed(job.id())) continue;
        const int v = s.VcOf(job.id());
        const Cluster& own = *s.VcCluster(v);
        const std::vector<PhysicalCell> bound = s.BoundCells(v);
        const std::vector<GpuId>& virt = s.VirtualGpus(job.id());
        ASSERT_EQ(virt.size(), job.gpus().size()) << where;
        for (size_t i = 0; i < virt.size(); ++i) {
          const int c = own.topology().ServerOf(virt[i]);
          const PhysicalCell& cell = bound[c];
          ASSERT_GE(cell.server, 0) << where;
          ASSERT_EQ(job.gpus()[i], topology.server(cell.server).first_gpu +
                                       cell.offset + virt[i] -
                                       own.topology().server(c).first_gpu)
              << where;
        }
      }
      auto placer = *MakePlacer(seed % 2 ? "consolidate" : "spread");
      Rng probe(1);
      for (const Job& job : s.jobs()) {
        if (!job.waiting()) continue;
        const Cluster* own = s.VcCluster(s.VcOf(job.id()));
        if (!own) continue;
        std::vector<GpuId> gpus;
        ASSERT_FALSE(PlaceJob(*placer, *own, job, probe, &gpus))
            << where << ": job " << job.id() << " (" << job.num_gpus()
            << " GPUs, vc " << s.VcOf(job.id()) << ", held " << s.held(job.id())
            << ") waits but fits its quota; free " << own->free_gpus() << " of "
            << own->total_gpus() << (job.spec().exclusive ? ", exclusive" : "")
            << (job.spec().no_preempt ? ", no-preempt" : "") << ", next wakeup "
            << s.NextWakeup().count() << " at " << t;
      }
    }
    reclaims += s.reclaims();
  }
  // The workloads do borrow and reclaim (else the checks above say little).
  EXPECT_GT(borrowing_passes, 1000);
  EXPECT_GT(reclaims, 100);
}

TEST(VcTest, PropertiesAtEveryPass) { CheckPropertiesAtEveryPass(false); }

TEST(VcTest, PropertiesAtEveryPassWithVcsSetAgain) {
  CheckPropertiesAtEveryPass(true);
}

}  // namespace
}  // namespace tiresias

// Why waiting jobs wait (ExplainWaiting), and drained (cordoned) servers
// kept out of the scheduler's capacity. Small clusters worked out by hand.
#include "sched/pending_reason.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "sched/testing/harness.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Harness;
using testing::HarnessOptions;
using testing::Preempted;
using testing::Started;

HarnessOptions Options(std::string policy, std::string placement) {
  HarnessOptions o;
  o.policy = std::move(policy);
  o.placement = std::move(placement);
  o.scheduler.queues = *QueueConfig::Create({3600});
  return o;
}

std::map<JobId, PendingReason> Reasons(Harness& h) {
  std::map<JobId, PendingReason> out;
  for (auto& [id, r] : ExplainWaiting(h.scheduler(), h.cluster())) out[id] = r;
  return out;
}

std::string Text(Harness& h, JobId id) {
  return FormatPendingReason(Reasons(h).at(id));
}

// 2 servers x 4 GPUs, consolidated. A (3) takes server 0, B (3) server 1:
// one GPU free on each. D (2) fits by count (2 free) but on no one server.
TEST(PendingReasonTest, ConsolidatedJobSeesLargestFreeBlock) {
  Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
  h.Submit(1, 3, 0);
  h.Submit(2, 3, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  h.Submit(4, 2, 10);
  EXPECT_TRUE(h.At(10).empty());
  const PendingReason r = Reasons(h).at(4);
  EXPECT_EQ(r.kind, PendingReasonKind::kPlacement);
  EXPECT_EQ(r.largest_free, 1);
  EXPECT_EQ(Text(h, 4), "needs 2 GPUs on one server, largest free block is 1");
}

// The brief's example: 3 GPUs free on each of 2 x 4 (another holder has one
// GPU of each server), a 4-GPU consolidated job waits for a whole server.
TEST(PendingReasonTest, FourGpuJobOnTwoServersWithThreeFreeEach) {
  Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
  const std::vector<GpuId> held = {0, 4};
  ASSERT_TRUE(h.cluster().Allocate(99, held).ok());
  h.Submit(1, 4, 0);
  EXPECT_TRUE(h.At(0).empty());
  EXPECT_EQ(Text(h, 1), "needs 4 GPUs on one server, largest free block is 3");
}

// Virtual clusters, 2 servers x 4: A owns one, B the other and may borrow
// 2 GPUs. B's 8 one-GPU jobs: 6 run (4 on its quota, 2 borrowed), 7 and 8
// wait at the borrowing limit. A job never preempted may not borrow at
// all; one larger than the cluster keeps that reason. Without a limit, a
// waiting job keeps the cluster's reason and gets the VC's numbers after
// it.
TEST(PendingReasonTest, VirtualClustersNameTheQuotaAndTheBorrowingLimit) {
  {
    Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
    ASSERT_TRUE(
        h.scheduler()
            .SetVcs({VcSpec{"a", {4}}, VcSpec{"b", {4}, 1, /*borrow_limit=*/2}},
                    h.cluster().topology())
            .ok());
    for (JobId id = 1; id <= 8; ++id) testing::SubmitInVc(h, id, 1, 0, "b");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5, 6));
    JobSpec stubborn{.id = 10, .num_gpus = 1, .no_preempt = true};
    stubborn.vc = "b";
    ASSERT_TRUE(h.scheduler().Submit(stubborn, Seconds{1}).ok());
    testing::SubmitInVc(h, 11, 16, 1, "b");
    EXPECT_TRUE(h.At(1).empty());
    std::map<JobId, PendingReason> r = Reasons(h);
    EXPECT_EQ(r.at(7).kind, PendingReasonKind::kVcQuota);
    EXPECT_EQ(FormatPendingReason(r.at(7)),
              "vc b: 4 of 4 GPUs of its quota in use, 2 borrowed, borrowing "
              "limit 2 reached (needs 1 GPU)");
    EXPECT_EQ(PendingReasonKindName(r.at(7).kind), "vc-quota");
    EXPECT_EQ(FormatPendingReason(r.at(10)),
              "vc b: 4 of 4 GPUs of its quota in use, 2 borrowed; needs 1 GPU "
              "and, never preempted (--no-preempt), may run only on its VC's "
              "quota");
    EXPECT_EQ(r.at(11).kind, PendingReasonKind::kTooLarge);
    EXPECT_EQ(FormatPendingReason(r.at(11)),
              "needs 16 GPUs, more than every up node has together (8): "
              "cannot run as configured (vc b: 4 of 4 GPUs of its quota in "
              "use, 2 borrowed)");
  }
  {
    Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
    ASSERT_TRUE(
        h.scheduler()
            .SetVcs({VcSpec{"a", {4}}, VcSpec{"b", {4}, 1, 0}, VcSpec{"c", {}}},
                    h.cluster().topology())
            .ok());
    for (JobId id = 1; id <= 4; ++id) testing::SubmitInVc(h, id, 1, 0, "c");
    testing::SubmitInVc(h, 5, 1, 0, "b");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5));
    // C borrows 4 GPUs of the idle quotas; B has 3 of its own left and may
    // not borrow.
    testing::SubmitInVc(h, 6, 4, 10, "b");
    testing::SubmitInVc(h, 7, 4, 10, "c");
    EXPECT_TRUE(h.At(10).empty());
    std::map<JobId, PendingReason> r = Reasons(h);
    EXPECT_EQ(FormatPendingReason(r.at(6)),
              "vc b: 1 of 4 GPUs of its quota in use; needs 4 GPUs and may "
              "not borrow (borrowing limit 0)");
    EXPECT_EQ(r.at(7).kind, PendingReasonKind::kPriority);
    EXPECT_EQ(FormatPendingReason(r.at(7)),
              "in queue 0 behind 1 waiting job of higher priority (needs 4 "
              "GPUs, 3 free) (vc c: no quota of its own, 4 GPUs borrowed)");
  }
  {
    // A lends at most 1 GPU of its idle 4. B's 6 jobs: 4 on its quota, 1
    // borrowing; the 6th waits with 3 of A's GPUs idle, and says why
    // (not "the next pass", which would never come).
    Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
    ASSERT_TRUE(h.scheduler()
                    .SetVcs({VcSpec{"a", {4}, 1, kUnlimited, /*lend=*/1},
                             VcSpec{"b", {4}}},
                            h.cluster().topology())
                    .ok());
    for (JobId id = 1; id <= 6; ++id) testing::SubmitInVc(h, id, 1, 0, "b");
    EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3, 4, 5));
    EXPECT_EQ(h.cluster().free_gpus(), 3);
    std::map<JobId, PendingReason> r = Reasons(h);
    EXPECT_EQ(r.at(6).kind, PendingReasonKind::kVcQuota);
    EXPECT_EQ(FormatPendingReason(r.at(6)),
              "vc b: 4 of 4 GPUs of its quota in use, 1 borrowed; needs 1 GPU "
              "beyond it, the other VCs' lending limits leave 0 to borrow");
  }
}

// 1 server x 4: A (3) runs. B (2) and then C (2) wait: B is first in line
// and short of GPUs; C waits behind B.
TEST(PendingReasonTest, ResourcesThenPriority) {
  Harness h(Topology::Uniform(1, 1, 4), Options("tiresias-l", "consolidate"));
  h.Submit(1, 3, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 2, 5);
  h.Submit(3, 2, 6);
  EXPECT_TRUE(h.At(6).empty());
  std::map<JobId, PendingReason> r = Reasons(h);
  EXPECT_EQ(r.at(2).kind, PendingReasonKind::kResources);
  EXPECT_EQ(FormatPendingReason(r.at(2)), "needs 2 GPUs, only 1 free");
  EXPECT_EQ(r.at(3).kind, PendingReasonKind::kPriority);
  EXPECT_EQ(FormatPendingReason(r.at(3)),
            "in queue 0 behind 1 waiting job of higher priority "
            "(needs 2 GPUs, 1 free)");
}

// 4 GPUs: a --no-preempt job holds 3. A newcomer of 2 GPUs (queue 0, as
// the holder) cannot take them and is told why; one behind it too.
TEST(PendingReasonTest, NamesTheGpusOfJobsNeverPreempted) {
  Harness h(Topology::Uniform(1, 1, 4), Options("tiresias-l", "consolidate"));
  JobSpec spec{.id = 1, .num_gpus = 3, .no_preempt = true};
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{0}).ok());
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.Submit(2, 2, 5);
  h.Submit(3, 2, 6);
  h.At(6);
  EXPECT_EQ(Text(h, 2),
            "needs 2 GPUs, only 1 free; 3 held by jobs never preempted "
            "(--no-preempt)");
  EXPECT_EQ(Text(h, 3),
            "in queue 0 behind 1 waiting job of higher priority (needs 2 "
            "GPUs, 1 free; 3 held by jobs never preempted (--no-preempt))");
}

// 2 x 4 = 8 GPUs: a 16-GPU job can never run; an 8-GPU one cannot while
// server 1 is drained; a 1-GPU job submitted after the pass fits at once.
TEST(PendingReasonTest, TooLargeDrainedAndNextPass) {
  Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
  h.cluster().SetCordoned(1, true);
  h.Submit(1, 16, 0);
  h.Submit(2, 8, 0);
  EXPECT_TRUE(h.At(0).empty());
  h.Submit(3, 1, 1);
  std::map<JobId, PendingReason> r = Reasons(h);
  EXPECT_EQ(r.at(1).kind, PendingReasonKind::kTooLarge);
  EXPECT_EQ(FormatPendingReason(r.at(1)),
            "needs 16 GPUs, more than every up node has together (8): "
            "cannot run as configured");
  EXPECT_EQ(r.at(2).kind, PendingReasonKind::kDrained);
  EXPECT_EQ(FormatPendingReason(r.at(2)),
            "needs 8 GPUs, nodes not drained have 4 (nodes drained)");
  EXPECT_EQ(r.at(3).kind, PendingReasonKind::kNextPass);
  h.cluster().SetCordoned(0, true);
  EXPECT_EQ(Text(h, 3), "needs 1 GPU; every up node is drained");
}

// 3 servers x 4 GPUs. Job 1 (3 GPUs) takes server 0; a 2x2 job takes two
// GPUs of servers 1 and 2 (the fullest that hold 2 each; consolidate
// would put a 4-GPU job on one server); a 2x3 job then waits with 5 GPUs
// free, a 3x1 job starts behind it, and a 4x1 job can never run on 3
// servers.
TEST(PendingReasonTest, ShapedJobsArePlacedAndExplainedByTheirShape) {
  Harness h(Topology::Uniform(1, 3, 4), Options("tiresias-l", "consolidate"));
  h.Submit(1, 3, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  h.SubmitShaped(2, 2, 2, 1);
  EXPECT_THAT(Started(h.At(1)), ElementsAre(2));
  std::vector<GpuId> gpus = h.job(2).gpus();
  std::sort(gpus.begin(), gpus.end());
  EXPECT_THAT(gpus, ElementsAre(4, 5, 8, 9));
  h.SubmitShaped(3, 2, 3, 2);
  EXPECT_TRUE(h.At(2).empty());
  EXPECT_EQ(Text(h, 3), "needs 2 nodes with 3 GPUs each (6 GPUs), only 5 free");
  h.SubmitShaped(4, 3, 1, 3);
  h.SubmitShaped(5, 4, 1, 3);
  EXPECT_THAT(Started(h.At(3)), ElementsAre(4));  // one GPU of each server
  gpus = h.job(4).gpus();
  std::sort(gpus.begin(), gpus.end());
  EXPECT_THAT(gpus, ElementsAre(3, 6, 10));
  std::map<JobId, PendingReason> r = Reasons(h);
  EXPECT_EQ(r.at(5).kind, PendingReasonKind::kTooLarge);
  EXPECT_EQ(FormatPendingReason(r.at(5)),
            "needs 4 nodes with 1 GPU each, up nodes have 3 such: cannot "
            "run as configured");
  // Jobs 1 and 4 end: server 0 all free, servers 1 and 2 two each (job
  // 2 holds the rest): 8 GPUs free, but only one server with 3.
  h.Finish(1, 4);
  h.Finish(4, 4);
  r = Reasons(h);
  EXPECT_EQ(r.at(3).kind, PendingReasonKind::kPlacement);
  EXPECT_EQ(FormatPendingReason(r.at(3)),
            "needs 2 nodes with 3 free GPUs each, 1 node has that many free");
}

// s0 and s1 have 4 A100s each, s2 4 H200s. Filtered jobs land only on
// the servers they admit, wait there while those are busy, and their
// reasons count those servers alone.
TEST(PendingReasonTest, FilteredJobsArePlacedAndExplainedOnTheirNodes) {
  Harness h(*Topology::Create({{0, 4, "s0", "NVIDIA A100", {"ib"}},
                               {0, 4, "s1", "NVIDIA A100", {}},
                               {0, 4, "s2", "NVIDIA H200", {"ib"}}}),
            Options("tiresias-l", "consolidate"));
  h.SubmitFiltered(1, 3, 0, {.gpu_type = "h200"});
  h.SubmitFiltered(2, 2, 0, {.gpu_type = "h200"});
  h.SubmitFiltered(3, 2, 0, {.gpu_type = "v100"});
  h.SubmitFiltered(
      4, 4, 0,
      {.constraint = {{"ib"}}, .constraint_text = "ib", .exclude = {"s2"}});
  h.Submit(5, 4, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 4, 5));
  std::vector<GpuId> gpus = h.job(1).gpus();
  std::sort(gpus.begin(), gpus.end());
  EXPECT_THAT(gpus, ElementsAre(8, 9, 10));
  EXPECT_EQ(h.job(4).gpus().front(), 0);  // s0: the one with ib left
  EXPECT_EQ(h.job(5).gpus().front(), 4);  // what the filtered left
  std::map<JobId, PendingReason> r = Reasons(h);
  // Job 2 needs 2 H200s, 1 is free (10 GPUs are free nowhere else).
  EXPECT_EQ(r.at(2).kind, PendingReasonKind::kResources);
  EXPECT_EQ(r.at(2).free, 1);
  EXPECT_EQ(FormatPendingReason(r.at(2)),
            "needs 2 GPUs, only 1 free (on the node matching GPU type h200: "
            "s2)");
  EXPECT_EQ(r.at(3).kind, PendingReasonKind::kNoMatch);
  EXPECT_EQ(FormatPendingReason(r.at(3)),
            "no up node matches GPU type v100: waiting for one that does");
  EXPECT_EQ(PendingReasonKindName(PendingReasonKind::kNoMatch), "no-match");
  // Too large for the matching nodes alone, though the cluster has 12.
  h.SubmitFiltered(6, 8, 1, {.nodelist = {"s1", "s2"}, .exclude = {"s2"}});
  h.At(1);
  r = Reasons(h);
  EXPECT_EQ(r.at(6).kind, PendingReasonKind::kTooLarge);
  EXPECT_EQ(r.at(6).capacity, 4);
  EXPECT_EQ(FormatPendingReason(r.at(6)),
            "needs 8 GPUs, more than every up node has together (4): cannot "
            "run as configured (on the node matching nodes s1,s2, not s2: "
            "s1)");
  // Job 1 ends: job 2 takes the H200s, not the A100s job 5 left free.
  h.Finish(5, 2);
  h.Finish(1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(2));
  EXPECT_EQ(h.cluster().topology().ServerOf(h.job(2).gpus().front()), 2);
}

// 2 servers x 4 GPUs. An exclusive job takes a server no one holds GPUs
// of, and keeps everyone else off it until it ends; one that finds no such
// server waits saying so.
TEST(PendingReasonTest, ExclusiveJobsTakeWholeServersAndKeepThem) {
  Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "consolidate"));
  h.Submit(1, 1, 0);
  h.SubmitExclusive(2, 2, 0);
  h.Submit(3, 2, 0);
  h.Submit(4, 2, 0);
  h.SubmitExclusive(5, 1, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2, 3));
  auto server_of = [&](JobId id) {
    return h.cluster().topology().ServerOf(h.job(id).gpus().front());
  };
  EXPECT_EQ(server_of(1), 0);
  EXPECT_EQ(server_of(2), 1);
  EXPECT_EQ(server_of(3), 0);  // server 1's other two GPUs are not free
  EXPECT_EQ(h.cluster().free_gpus(), 1);
  std::map<JobId, PendingReason> r = Reasons(h);
  EXPECT_EQ(FormatPendingReason(r.at(4)), "needs 2 GPUs, only 1 free");
  EXPECT_EQ(r.at(5).kind, PendingReasonKind::kPlacement);
  EXPECT_EQ(FormatPendingReason(r.at(5)),
            "needs 1 GPU on nodes of its own (--exclusive), entirely free "
            "nodes have 0");
  // Job 2 ends: job 4 takes two of server 1's GPUs, so job 5 still waits.
  h.Finish(2, 10);
  EXPECT_THAT(Started(h.At(10)), ElementsAre(4));
  EXPECT_EQ(server_of(4), 1);
  // Jobs 1 and 3 end: job 5 takes server 0, and a new job goes to server 1.
  h.Finish(1, 20);
  h.Finish(3, 20);
  h.Submit(6, 1, 20);
  EXPECT_THAT(Started(h.At(20)), ElementsAre(5, 6));
  EXPECT_EQ(server_of(5), 0);
  EXPECT_EQ(server_of(6), 1);
  EXPECT_TRUE(h.cluster().reserved(0));
  h.Finish(5, 30);
  EXPECT_FALSE(h.cluster().reserved(0));
  EXPECT_EQ(h.cluster().free_on(0), 4);
}

// A host with no cluster at all (the master with no node up) says so.
TEST(PendingReasonTest, KindsHaveNamesAndTexts) {
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kNoNodes}),
            "no node is up");
  EXPECT_EQ(PendingReasonKindName(PendingReasonKind::kPlacement), "placement");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kNone}), "");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kCheckpointing,
                                 .blocker = 7}),
            "waiting for job 7's tasks to checkpoint (GPUs being freed by a "
            "preemption)");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kHeld}),
            "held (`tiresias release` to let it run)");
  EXPECT_EQ(PendingReasonKindName(PendingReasonKind::kHeld), "held");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kDependency,
                                 .blocker = 12,
                                 .unmet = 1}),
            "waiting for job 12 (afterok)");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kDependency,
                                 .blocker = 3,
                                 .dependency = DependencyKind::kAfterNotOk,
                                 .unmet = 3}),
            "waiting for job 3 (afternotok) and 2 other dependencies");
  EXPECT_EQ(PendingReasonKindName(PendingReasonKind::kDependency),
            "dependency");
  EXPECT_EQ(FormatPendingReason({.kind = PendingReasonKind::kArrayLimit,
                                 .ahead = 2,
                                 .capacity = 2,
                                 .blocker = 12}),
            "array limit: 2 of array 12's jobs running, at most 2 at once");
  EXPECT_EQ(PendingReasonKindName(PendingReasonKind::kArrayLimit),
            "array-limit");
}

// yarn-cs stops at the first job that does not fit: a 1-GPU job behind a
// 4-GPU one waits though a GPU is free.
TEST(PendingReasonTest, HeadOfLineBlockingIsPriority) {
  Harness h(Topology::Uniform(1, 1, 4), Options("yarn-cs", "consolidate"));
  h.Submit(1, 3, 0);
  h.Submit(2, 4, 1);
  h.Submit(3, 1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(1));
  std::map<JobId, PendingReason> r = Reasons(h);
  EXPECT_EQ(r.at(2).kind, PendingReasonKind::kResources);
  EXPECT_EQ(r.at(3).kind, PendingReasonKind::kPriority);
  EXPECT_EQ(FormatPendingReason(r.at(3)),
            "in queue 0 behind 1 waiting job of higher priority");
}

// A drained (cordoned) server takes no new job: of two 4-GPU jobs on
// 2 x 4 with server 0 drained, one starts, on server 1.
TEST(DrainedCapacityTest, NewJobsAvoidCordonedServer) {
  Harness h(Topology::Uniform(1, 2, 4), Options("tiresias-l", "pack"));
  h.cluster().SetCordoned(0, true);
  EXPECT_EQ(h.cluster().free_gpus(), 4);
  h.Submit(1, 4, 0);
  h.Submit(2, 1, 0);
  h.Submit(3, 4, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  EXPECT_THAT(h.job(1).gpus(), ElementsAre(4, 5, 6, 7));
  EXPECT_EQ(Text(h, 2), "needs 1 GPU, only 0 free");
  h.Finish(1, 10);
  // Job 2 (1 GPU) is next in line: it takes a GPU of server 1, and job 3
  // (4) no longer fits there. Server 0 is still drained.
  EXPECT_THAT(Started(h.At(10)), ElementsAre(2));
  EXPECT_GE(h.job(2).gpus()[0], 4);
  EXPECT_EQ(Text(h, 3), "needs 4 GPUs, only 3 free");
  // Resumed: job 3 gets server 0.
  h.cluster().SetCordoned(0, false);
  h.scheduler().CapacityChanged();
  EXPECT_THAT(Started(h.At(11)), ElementsAre(3));
  EXPECT_THAT(h.job(3).gpus(), ElementsAre(0, 1, 2, 3));
}

// smallest-first preempts. X (4) runs on server 0, which is then drained;
// Y (4) on server 1. Z (1 GPU) outranks both: setting X aside frees no
// usable GPU, so Y is preempted and X keeps running where it is.
TEST(DrainedCapacityTest, PreemptionNeverPlacesOnCordonedServer) {
  Harness h(Topology::Uniform(1, 2, 4), Options("smallest-first", "pack"));
  h.Submit(2, 4, 0);  // Y
  EXPECT_THAT(Started(h.At(0)), ElementsAre(2));
  h.Submit(1, 4, 1);  // X, later: lowest priority of the two
  EXPECT_THAT(Started(h.At(1)), ElementsAre(1));
  const int x_server = h.cluster().topology().ServerOf(h.job(1).gpus()[0]);
  h.cluster().SetCordoned(x_server, true);
  h.Submit(3, 1, 2);  // Z
  Decisions d = h.At(2);
  EXPECT_THAT(Preempted(d), ElementsAre(2));
  EXPECT_THAT(Started(d), ElementsAre(3));
  EXPECT_TRUE(h.job(1).running());
  EXPECT_NE(h.cluster().topology().ServerOf(h.job(3).gpus()[0]), x_server);
}

TEST(CordonTest, CountsFollowCordonAndRelease) {
  Cluster c(Topology::Uniform(1, 2, 4));
  const std::vector<GpuId> a = {0, 1};
  ASSERT_TRUE(c.Allocate(7, a).ok());
  c.SetCordoned(0, true);
  EXPECT_EQ(c.free_gpus(), 4);
  EXPECT_EQ(c.free_on(0), 0);
  EXPECT_EQ(c.cordoned_gpus(), 4);
  EXPECT_EQ(c.cordoned_idle_gpus(), 2);
  EXPECT_FALSE(c.gpu_free(2));
  EXPECT_TRUE(c.gpu_unheld(2));
  c.Release(7, a);
  EXPECT_EQ(c.free_gpus(), 4);
  EXPECT_EQ(c.cordoned_idle_gpus(), 4);
  EXPECT_EQ(c.whole_free_gpus(), 4);
  c.SetCordoned(0, false);
  EXPECT_EQ(c.free_gpus(), 8);
  EXPECT_EQ(c.whole_free_gpus(), 8);
  EXPECT_EQ(c.cordoned_gpus(), 0);
}

}  // namespace
}  // namespace tiresias

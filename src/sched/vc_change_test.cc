// Virtual clusters changed while jobs run (Scheduler::ChangeVcs, a
// restored running job): adoption into cells, bindings kept across a
// re-numbered cluster, jobs outside any quota borrowing, and refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

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
using testing::SubmitInVc;
using testing::VcOptions;

VcSpec Vc(std::string name, std::string cells) {
  return VcSpec{std::move(name), *ParseCells(cells)};
}

// 2 servers x 4 GPUs without VCs: job 1 (team a, 4 GPUs) takes server 0,
// job 2 (team b, 2 GPUs) half of server 1. VCs set then: a owns a 4-cell,
// b two 1-cells. Each running job is adopted into its VC's cells where it
// runs (a's 4-cell on server 0, b's 1-cells on its two GPUs): nothing is
// preempted, and b's next job borrows.
TEST(VcChangeTest, RunningJobsAreAdoptedWhereTheyRun) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions());
  Scheduler& s = h.scheduler();
  SubmitInVc(h, 1, 4, 0, "a");
  SubmitInVc(h, 2, 2, 0, "b");
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1, 2));
  const std::vector<GpuId> gpus2 = h.job(2).gpus();
  ASSERT_TRUE(s.ChangeVcs({Vc("a", "1x4"), Vc("b", "2x1")},
                          h.cluster().topology(), Seconds{5})
                  .ok());
  EXPECT_TRUE(s.Guaranteed(1));
  EXPECT_TRUE(s.Guaranteed(2));
  EXPECT_EQ(s.Usage(0).guaranteed, 4);
  EXPECT_EQ(s.Usage(1).guaranteed, 2);
  EXPECT_EQ(s.BoundCells(0)[0], (PhysicalCell{0, 0, 4}));
  const int first = h.cluster().topology().server(1).first_gpu;
  EXPECT_EQ(s.BoundCells(1)[0], (PhysicalCell{1, gpus2[0] - first, 1}));
  EXPECT_EQ(s.BoundCells(1)[1], (PhysicalCell{1, gpus2[1] - first, 1}));
  EXPECT_TRUE(s.UnboundCellsFit());
  SubmitInVc(h, 3, 1, 10, "b");
  const Decisions d = h.At(10);
  EXPECT_THAT(Preempted(d), IsEmpty());
  EXPECT_THAT(Started(d), ElementsAre(3));
  EXPECT_FALSE(s.Guaranteed(3));
  EXPECT_EQ(s.Usage(1).borrowed, 1);
  EXPECT_EQ(s.num_running(), 3);
}

// An exclusive job adopted into its VC's cells keeps their server to
// itself, as one started there would: job 1 (team a, exclusive, 2 of the
// server's 4 GPUs) is adopted into a's 4-cell; a's 1-GPU job 2 waits for
// it, instead of being placed beside it on the cell and then taking the
// server back from job 1 as if job 1 were a borrower.
TEST(VcChangeTest, AnAdoptedExclusiveJobKeepsItsServer) {
  Harness h(Topology::Uniform(1, 1, 4), VcOptions());
  Scheduler& s = h.scheduler();
  JobSpec exclusive{.id = 1, .num_gpus = 2, .submit_time = Seconds{0}};
  exclusive.vc = "a";
  exclusive.exclusive = true;
  ASSERT_TRUE(s.Submit(exclusive, Seconds{0}).ok());
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  ASSERT_TRUE(
      s.ChangeVcs({Vc("a", "1x4")}, h.cluster().topology(), Seconds{5}).ok());
  EXPECT_TRUE(s.Guaranteed(1));
  SubmitInVc(h, 2, 1, 10, "a");
  const Decisions d = h.At(10);
  EXPECT_THAT(Preempted(d), IsEmpty());
  EXPECT_THAT(Started(d), IsEmpty());
  EXPECT_TRUE(h.job(1).running());
  h.Finish(1, 20);
  EXPECT_THAT(Started(h.At(20)), ElementsAre(2));
}

// A running job whose VC has no cell where it runs borrows, and its GPUs
// are reclaimed in the first pass the owner needs them. A job without a VC
// counts in the VC named "".
TEST(VcChangeTest, AJobOutsideItsQuotaBorrowsAndIsReclaimed) {
  Harness h(Topology::Uniform(1, 1, 4), VcOptions());
  Scheduler& s = h.scheduler();
  SubmitInVc(h, 1, 4, 0, "");
  h.At(0);
  ASSERT_TRUE(s.ChangeVcs({Vc("a", "1x4"), Vc("", "")}, h.cluster().topology(),
                          Seconds{5})
                  .ok());
  EXPECT_EQ(s.VcOf(1), 1);
  EXPECT_FALSE(s.Guaranteed(1));
  EXPECT_EQ(s.Usage(1).borrowed, 4);
  SubmitInVc(h, 2, 2, 10, "a");
  const Decisions d = h.At(10);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(2));
  EXPECT_TRUE(s.Guaranteed(2));
}

// The master sets its VCs again on every cluster change: a cluster whose
// servers are re-numbered (a node before them left) keeps each cell bound
// on the same server, by name, and every running job keeps its quota.
TEST(VcChangeTest, BindingsFollowServersAcrossARenumberedCluster) {
  std::vector<ServerSpec> three = {{0, 4, "n0"}, {0, 4, "n1"}, {0, 4, "n2"}};
  Harness h(*Topology::Create(three), VcOptions());
  Scheduler& s = h.scheduler();
  ASSERT_TRUE(
      s.SetVcs({Vc("a", "1x2"), Vc("b", "1x4")}, h.cluster().topology()).ok());
  SubmitInVc(h, 1, 4, 0, "b");
  SubmitInVc(h, 2, 1, 0, "b");  // borrows
  SubmitInVc(h, 3, 1, 0, "a");
  h.At(0);
  ASSERT_TRUE(s.Guaranteed(1) && s.Guaranteed(3));
  const std::string b_server = three[s.BoundCells(1)[0].server].name;
  const PhysicalCell a_cell = s.BoundCells(0)[0];
  const std::string a_server = three[a_cell.server].name;
  // Node n0 leaves, with whatever ran there: the host finishes its jobs
  // and re-numbers the rest onto a cluster of n1 and n2.
  std::vector<ServerSpec> two = {three[1], three[2]};
  Harness after(*Topology::Create(two), VcOptions());
  for (const Job& job : s.jobs()) {
    if (!job.running()) continue;
    const int server = h.cluster().topology().ServerOf(job.gpus()[0]);
    if (server == 0) continue;  // lost with n0
    std::vector<GpuId> gpus;
    for (GpuId g : job.gpus()) gpus.push_back(g - 4);
    ASSERT_TRUE(after.cluster().Allocate(job.id(), gpus).ok());
  }
  for (JobId id : {JobId{1}, JobId{2}, JobId{3}}) {
    const int server = h.cluster().topology().ServerOf(h.job(id).gpus()[0]);
    if (server == 0) {
      ASSERT_TRUE(s.Finish(id, Seconds{5}, h.cluster()).ok());
      continue;
    }
    Job moved = h.job(id);
    std::vector<GpuId> gpus;
    for (GpuId g : moved.gpus()) gpus.push_back(g - 4);
    Job renumbered(moved.spec());
    renumbered.Start(moved.run_start(), gpus, -1);
    ASSERT_TRUE(s.Replace(renumbered, Seconds{5}).ok());
  }
  ASSERT_TRUE(s.ChangeVcs({Vc("a", "1x2"), Vc("b", "1x4")},
                          after.cluster().topology(), Seconds{5})
                  .ok());
  for (int v = 0; v < 2; ++v) {
    const PhysicalCell cell = s.BoundCells(v)[0];
    const std::string& was = v == 0 ? a_server : b_server;
    if (was == "n0") {
      EXPECT_EQ(cell.server, -1) << v;  // its job went with n0
    } else {
      EXPECT_EQ(two[cell.server].name, was) << v;
    }
  }
  EXPECT_EQ(s.BoundCells(0)[0].offset, a_server == "n0" ? 0 : a_cell.offset);
  for (JobId id : {JobId{1}, JobId{3}}) {
    if (h.job(id).running()) EXPECT_TRUE(s.Guaranteed(id)) << id;
  }
  EXPECT_TRUE(s.UnboundCellsFit());
}

// A restarted master restores its running jobs, then sets its VCs again
// (its first cluster): each is adopted into its quota where it runs.
TEST(VcChangeTest, ARestoredRunningJobHoldsItsQuota) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions());
  Scheduler& s = h.scheduler();
  ASSERT_TRUE(
      s.SetVcs({Vc("a", "1x4"), Vc("b", "1x4")}, h.cluster().topology()).ok());
  JobSpec spec{.id = 7, .num_gpus = 2, .submit_time = Seconds{0}};
  spec.vc = "b";
  Job job(spec);
  job.Start(Seconds{1}, {4, 5}, -1);
  ASSERT_TRUE(h.cluster().Allocate(7, job.gpus()).ok());
  ASSERT_TRUE(s.Restore(job, Seconds{2}).ok());
  EXPECT_FALSE(s.Guaranteed(7));
  ASSERT_TRUE(s.ChangeVcs({Vc("a", "1x4"), Vc("b", "1x4")},
                          h.cluster().topology(), Seconds{2})
                  .ok());
  EXPECT_TRUE(s.Guaranteed(7));
  EXPECT_EQ(s.BoundCells(1)[0], (PhysicalCell{1, 0, 4}));
  // b's next 2-GPU job fits the rest of its cell, a's 4-GPU job server 0.
  SubmitInVc(h, 8, 2, 3, "b");
  SubmitInVc(h, 9, 4, 3, "a");
  const Decisions d = h.At(3);
  EXPECT_THAT(Started(d), ElementsAre(8, 9));
  EXPECT_THAT(Preempted(d), IsEmpty());
  EXPECT_TRUE(s.Guaranteed(8) && s.Guaranteed(9));
}

// Going back to no VCs keeps every job; a VC that an unfinished job is in
// cannot go, and a refused change changes nothing.
TEST(VcChangeTest, RefusesToDropAVcInUseAndCanDropThemAll) {
  Harness h(Topology::Uniform(1, 2, 4), VcOptions());
  Scheduler& s = h.scheduler();
  ASSERT_TRUE(
      s.SetVcs({Vc("a", "1x4"), Vc("b", "1x4")}, h.cluster().topology()).ok());
  SubmitInVc(h, 1, 4, 0, "a");
  SubmitInVc(h, 2, 2, 0, "b");
  SubmitInVc(h, 3, 8, 0, "b");  // waits
  h.At(0);
  const absl::Status refused =
      s.ChangeVcs({Vc("a", "1x4")}, h.cluster().topology(), Seconds{1});
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("job 2 is in virtual cluster \"b\""));
  EXPECT_EQ(s.vcs().size(), 2u);
  EXPECT_TRUE(s.Guaranteed(2));
  EXPECT_EQ(s.ChangeVcs({Vc("a", "1x4"), Vc("a", "1x4")},
                        h.cluster().topology(), Seconds{1})
                .code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(s.ChangeVcs({}, h.cluster().topology(), Seconds{1}).ok());
  EXPECT_TRUE(s.vcs().empty());
  EXPECT_FALSE(s.Guaranteed(1));
  EXPECT_EQ(s.num_running(), 2);
  EXPECT_EQ(s.num_waiting(), 1);
  h.Finish(1, 2);
  h.Finish(2, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(3));
}

}  // namespace
}  // namespace tiresias

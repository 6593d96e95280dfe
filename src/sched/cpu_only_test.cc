// CPU-only jobs in the scheduling core, worked out by hand: their own
// first-come queue over servers' spare CPUs, best fit, backfill, no effect
// on GPU jobs either way, and the pending reasons that name spare CPUs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "core/node_filter.h"
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

// Two servers of 2 GPUs; s0 keeps 4 spare CPUs and 4096 MiB, s1 2 and
// 1024 MiB.
Topology TwoServers() {
  absl::StatusOr<Topology> t = Topology::Create({
      ServerSpec{.rack = 0,
                 .num_gpus = 2,
                 .name = "s0",
                 .cpus = 8,
                 .memory_mib = 8192,
                 .spare_cpus = 4,
                 .spare_memory_mib = 4096},
      ServerSpec{.rack = 0,
                 .num_gpus = 2,
                 .name = "s1",
                 .cpus = 8,
                 .memory_mib = 8192,
                 .spare_cpus = 2,
                 .spare_memory_mib = 1024},
  });
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

void SubmitCpu(Harness& h, JobId id, int cpus, double t, int64_t mem = 0,
               std::shared_ptr<const NodeFilter> filter = nullptr) {
  JobSpec spec{id, 0, Seconds{t}, std::nullopt, ""};
  spec.cpus = cpus;
  spec.mem_mib = mem;
  spec.filter = std::move(filter);
  ASSERT_TRUE(h.scheduler().Submit(spec, Seconds{t}).ok());
}

TEST(CpuOnlyTest, AJobWithoutGpusNeedsCpus) {
  Harness h(TwoServers(), testing::TiresiasL100());
  JobSpec spec{1, 0, Seconds{0}, std::nullopt, ""};
  absl::Status refused = h.scheduler().Submit(spec, Seconds{0});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.message()),
              ::testing::HasSubstr("without GPUs needs CPUs"));
  spec.num_gpus = -1;
  EXPECT_FALSE(h.scheduler().Submit(spec, Seconds{0}).ok());
}

// Best fit: a 2-CPU job goes to s1 (2 free, the fewest that hold it), a
// 3-CPU job to s0; a 2-CPU job after them finds 1 free on s0, none on s1:
// it waits, and a 1-CPU job behind it starts (backfill). When the first
// ends, the waiting one takes s1.
TEST(CpuOnlyTest, BestFitFirstComeWithBackfill) {
  Harness h(TwoServers(), testing::TiresiasL100());
  SubmitCpu(h, 1, 2, 0);
  SubmitCpu(h, 2, 3, 0);
  Decisions d = h.At(0);
  ASSERT_EQ(d.started.size(), 2u);
  EXPECT_EQ(d.started[0].job, 1);
  EXPECT_EQ(d.started[0].cpu_server, 1);
  EXPECT_THAT(d.started[0].gpus, IsEmpty());
  EXPECT_FALSE(d.started[0].resumed);
  EXPECT_EQ(d.started[1].job, 2);
  EXPECT_EQ(d.started[1].cpu_server, 0);
  EXPECT_EQ(h.cluster().spare_free_cpus(0), 1);
  EXPECT_EQ(h.cluster().spare_free_cpus(1), 0);
  // Memory went with the CPUs: a per-CPU share, 3/4 of 4096 and 2/2 of 1024.
  EXPECT_EQ(h.cluster().spare_free_memory_mib(0), 1024);
  EXPECT_EQ(h.cluster().spare_free_memory_mib(1), 0);
  // GPUs untouched.
  EXPECT_EQ(h.cluster().free_gpus(), 4);

  SubmitCpu(h, 3, 2, 1);
  SubmitCpu(h, 4, 1, 2);
  EXPECT_THAT(Started(h.At(2)), ElementsAre(4));
  EXPECT_TRUE(h.job(3).waiting());
  EXPECT_EQ(h.scheduler().num_waiting(), 1);
  EXPECT_EQ(h.scheduler().num_running(), 3);

  h.Finish(1, 10);
  d = h.At(10);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].job, 3);
  EXPECT_EQ(d.started[0].cpu_server, 1);
  EXPECT_EQ(h.cluster().spare_free_cpus(1), 0);
  EXPECT_EQ(h.cluster().spare_free_cpus(0), 0);
}

// A GPU job that needs every GPU neither waits for nor preempts CPU-only
// jobs, and a CPU-only job starts while every GPU is busy.
TEST(CpuOnlyTest, GpuJobsAndCpuOnlyJobsNeverTouch) {
  Harness h(TwoServers(), testing::TiresiasL100());
  h.Submit(1, 4, 0);
  SubmitCpu(h, 2, 4, 0);
  Decisions d = h.At(0);
  EXPECT_THAT(Started(d), ElementsAre(1, 2));
  // A higher-priority GPU job arrives: it preempts the (demoted) GPU job,
  // never the CPU-only one.
  EXPECT_TRUE(h.At(25).empty());  // job 1 demoted at 4 x 25 = 100
  h.Submit(3, 4, 30);
  d = h.At(30);
  EXPECT_THAT(Preempted(d), ElementsAre(1));
  EXPECT_THAT(Started(d), ElementsAre(3));
  EXPECT_TRUE(h.job(2).running());
  // A CPU-only job's executed time never demotes it: no wakeup for it.
  EXPECT_EQ(h.job(2).queue(), 0);
}

// Memory counts: a job asking 2048 MiB of 1 CPU fits s0 (4096), not s1
// (1024), even though s1 has the fewest free CPUs.
TEST(CpuOnlyTest, MemoryIsCountedToo) {
  Harness h(TwoServers(), testing::TiresiasL100());
  SubmitCpu(h, 1, 1, 0, /*mem=*/2048);
  Decisions d = h.At(0);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].cpu_server, 0);
  EXPECT_EQ(h.cluster().spare_free_memory_mib(0), 2048);
  h.Finish(1, 5);
  EXPECT_EQ(h.cluster().spare_free_memory_mib(0), 4096);
  EXPECT_EQ(h.cluster().spare_free_cpus(0), 4);
}

// Cancel (Remove), requeue and hold give the CPUs back and keep the queue
// first come: a requeued job waits at its submit time's place, ahead of
// jobs submitted after it.
TEST(CpuOnlyTest, RemoveRequeueAndHold) {
  Harness h(TwoServers(), testing::TiresiasL100());
  SubmitCpu(h, 1, 4, 0);
  EXPECT_THAT(Started(h.At(0)), ElementsAre(1));
  SubmitCpu(h, 2, 4, 1);
  EXPECT_TRUE(h.At(1).empty());
  ASSERT_TRUE(h.scheduler().Hold(2).ok());
  ASSERT_TRUE(h.scheduler().Requeue(1, Seconds{2}, h.cluster()).ok());
  EXPECT_EQ(h.cluster().spare_free_cpus(0), 4);
  EXPECT_EQ(h.job(1).preemptions(), 1);
  Decisions d = h.At(2);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].job, 1);
  EXPECT_TRUE(d.started[0].resumed);
  ASSERT_TRUE(h.scheduler().Remove(1, Seconds{3}, h.cluster()).ok());
  EXPECT_EQ(h.cluster().spare_free_cpus(0), 4);
  EXPECT_TRUE(h.At(3).empty());  // job 2 is held
  ASSERT_TRUE(h.scheduler().Release(2, Seconds{4}).ok());
  EXPECT_THAT(Started(h.At(4)), ElementsAre(2));
}

// A cordoned server takes no new CPU-only job; a node filter limits where
// one goes.
TEST(CpuOnlyTest, CordonAndFilter) {
  Harness h(TwoServers(), testing::TiresiasL100());
  h.cluster().SetCordoned(0, true);
  h.scheduler().CapacityChanged();
  SubmitCpu(h, 1, 1, 0);
  Decisions d = h.At(0);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].cpu_server, 1);
  auto only_s0 = std::make_shared<NodeFilter>();
  only_s0->nodelist = {"s0"};
  SubmitCpu(h, 2, 1, 1, 0, only_s0);
  EXPECT_TRUE(h.At(1).empty());
  std::vector<std::pair<JobId, PendingReason>> reasons =
      ExplainWaiting(h.scheduler(), h.cluster());
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].second.kind, PendingReasonKind::kDrained);
  EXPECT_EQ(FormatPendingReason(reasons[0].second),
            "needs 1 spare CPU on one node, nodes not drained keep at most 0 "
            "(nodes drained) (on the node matching node s0: s0)");
  h.cluster().SetCordoned(0, false);
  h.scheduler().CapacityChanged();
  d = h.At(2);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].cpu_server, 0);
}

// No CPU-only job starts on a server an exclusive job holds.
TEST(CpuOnlyTest, NotBesideAnExclusiveJob) {
  Harness h(TwoServers(), testing::TiresiasL100());
  h.SubmitExclusive(1, 2, 0);
  Decisions d = h.At(0);
  ASSERT_EQ(d.started.size(), 1u);
  const int held = h.cluster().topology().ServerOf(d.started[0].gpus[0]);
  JobSpec spec{2, 0, Seconds{0}, std::nullopt, ""};
  spec.cpus = 1;
  EXPECT_FALSE(h.cluster().SpareFits(held, spec));
  EXPECT_TRUE(h.cluster().SpareFits(1 - held, spec));
  SubmitCpu(h, 2, 1, 1);
  d = h.At(1);
  ASSERT_EQ(d.started.size(), 1u);
  EXPECT_EQ(d.started[0].cpu_server, 1 - held);
}

TEST(CpuOnlyTest, PendingReasonsNameSpareCpus) {
  Harness h(TwoServers(), testing::TiresiasL100());
  SubmitCpu(h, 1, 5, 0);  // more than any node keeps
  SubmitCpu(h, 2, 4, 0);
  SubmitCpu(h, 3, 4, 0);  // waits for job 2's
  h.At(0);
  std::vector<std::pair<JobId, PendingReason>> reasons =
      ExplainWaiting(h.scheduler(), h.cluster());
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[0].first, 1);
  EXPECT_EQ(reasons[0].second.kind, PendingReasonKind::kTooLarge);
  EXPECT_EQ(FormatPendingReason(reasons[0].second),
            "needs 5 spare CPUs on one node, up nodes keep at most 4 for "
            "CPU-only jobs (agent --spare-cpus): cannot run as configured");
  EXPECT_EQ(reasons[1].first, 3);
  EXPECT_EQ(reasons[1].second.kind, PendingReasonKind::kResources);
  EXPECT_EQ(FormatPendingReason(reasons[1].second),
            "needs 4 spare CPUs on one node, the most free on one node is 2 "
            "(2 free in all; 1 CPU-only job before it)");
}

// A node without GPUs (spare CPUs only) takes CPU-only jobs and no GPU
// job; a filtered GPU job's reason (a copy of the admitted servers) counts
// it without trouble, and a per-GPU ask never admits it.
TEST(CpuOnlyTest, ANodeWithoutGpus) {
  absl::StatusOr<Topology> t = Topology::Create({
      ServerSpec{.rack = 0, .num_gpus = 2, .name = "g0"},
      ServerSpec{.rack = 0,
                 .num_gpus = 0,
                 .name = "c0",
                 .cpus = 0,
                 .memory_mib = 0,
                 .spare_cpus = 4,
                 .spare_memory_mib = 4096},
  });
  ASSERT_TRUE(t.ok()) << t.status();
  Harness h(*std::move(t), testing::TiresiasL100());
  h.Submit(1, 2, 0);
  SubmitCpu(h, 2, 4, 0);
  Decisions d = h.At(0);
  ASSERT_EQ(d.started.size(), 2u);
  EXPECT_EQ(d.started[1].job, 2);
  EXPECT_EQ(d.started[1].cpu_server, 1);
  auto all = std::make_shared<NodeFilter>();
  all->exclude = {"nobody"};
  h.SubmitFiltered(3, 1, 1, *all);
  EXPECT_TRUE(h.At(1).empty());
  std::vector<std::pair<JobId, PendingReason>> reasons =
      ExplainWaiting(h.scheduler(), h.cluster());
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_EQ(reasons[0].second.kind, PendingReasonKind::kResources);
  EXPECT_EQ(reasons[0].second.matching, 2);
  // Sent to the node without GPUs alone: more GPUs than it has.
  auto there = std::make_shared<NodeFilter>();
  there->nodelist = {"c0"};
  h.SubmitFiltered(4, 1, 2, *there);
  h.At(2);
  reasons = ExplainWaiting(h.scheduler(), h.cluster());
  ASSERT_EQ(reasons.size(), 2u);
  EXPECT_EQ(reasons[1].first, 4);
  EXPECT_EQ(FormatPendingReason(reasons[1].second),
            "needs 1 GPU, more than every up node has together (0): cannot "
            "run as configured (on the node matching node c0: c0)");
  NodeFilter per_gpu{.cpus_per_gpu = 1};
  EXPECT_FALSE(per_gpu.Admits(h.cluster().topology().server(1)));
}

// Restored as running (a restarted master): its CPUs must be held in the
// cluster first, and it counts as running.
TEST(CpuOnlyTest, RestoredRunningJob) {
  Harness h(TwoServers(), testing::TiresiasL100());
  JobSpec spec{7, 0, Seconds{0}, std::nullopt, ""};
  spec.cpus = 2;
  Job job(spec);
  job.Start(Seconds{1}, {}, 1);
  ASSERT_TRUE(h.cluster().AllocateSpare(1, spec).ok());
  ASSERT_TRUE(h.scheduler().Restore(job, Seconds{5}).ok());
  EXPECT_EQ(h.scheduler().num_running(), 1);
  EXPECT_TRUE(h.At(5).empty());
  h.Finish(7, 9);
  EXPECT_EQ(h.cluster().spare_free_cpus(1), 2);
  EXPECT_EQ(h.scheduler().num_running(), 0);
}

}  // namespace
}  // namespace tiresias

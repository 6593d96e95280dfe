// Virtual clusters in the simulator: quotas from a trace's tenants, private
// clusters, and the shared cluster against them.
#include "sim/vc_runs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "sim/metrics.h"

namespace tiresias {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

JobSpec Spec(JobId id, int gpus, double submit, double duration,
             std::string vc) {
  JobSpec spec{id, gpus, Seconds{submit}, Seconds{duration}, "resnet50"};
  spec.vc = std::move(vc);
  return spec;
}

// GPU time 300 (a) and 100 (b) on 8 GPUs: 6 and 2 GPUs, as cells 4+2 and
// 2. Three equal tenants on 8 GPUs: 2.67 each, rounded down to 2, the two
// GPUs left to the first two largest remainders (equal: name order).
TEST(VcRunsTest, QuotasFromTheTracesShares) {
  std::vector<JobSpec> jobs = {Spec(1, 3, 0, 100, "a"), Spec(2, 1, 0, 100, "b"),
                               Spec(3, 1, 0, 0, "")};
  auto vcs = VcsFromTrace(&jobs, Topology::Uniform(1, 1, 8));
  ASSERT_TRUE(vcs.ok()) << vcs.status();
  ASSERT_EQ(vcs->size(), 3u);
  EXPECT_EQ((*vcs)[0].name, "a");
  EXPECT_THAT((*vcs)[0].cells, ElementsAre(4, 2));
  EXPECT_THAT((*vcs)[1].cells, ElementsAre(2));
  EXPECT_EQ((*vcs)[2].name, "default");  // the job without a tenant
  EXPECT_TRUE((*vcs)[2].cells.empty());
  EXPECT_EQ(jobs[2].vc, "default");

  std::vector<JobSpec> even = {Spec(1, 1, 0, 10, "x"), Spec(2, 1, 0, 10, "y"),
                               Spec(3, 1, 0, 10, "z")};
  vcs = VcsFromTrace(&even, Topology::Uniform(1, 1, 8));
  ASSERT_TRUE(vcs.ok());
  EXPECT_THAT((*vcs)[0].cells, ElementsAre(2, 1));
  EXPECT_THAT((*vcs)[1].cells, ElementsAre(2, 1));
  EXPECT_THAT((*vcs)[2].cells, ElementsAre(2));
  // 20 GPUs of 16 servers x 8 = 128: whole servers first.
  std::vector<JobSpec> big = {Spec(1, 1, 0, 20, "p"), Spec(2, 1, 0, 108, "q")};
  vcs = VcsFromTrace(&big, Topology::Uniform(1, 16, 8));
  ASSERT_TRUE(vcs.ok());
  EXPECT_EQ(CellsText((*vcs)[1].cells), "2x8,1x4");
  EXPECT_EQ((*vcs)[0].quota_gpus() + (*vcs)[1].quota_gpus(), 128);
}

TEST(VcRunsTest, PrivateClusterIsTheCells) {
  VcSpec vc{"v", {8, 2}};
  auto topology = PrivateTopology(vc);
  ASSERT_TRUE(topology.ok());
  EXPECT_EQ(topology->Describe(), "2 servers (1x2, 1x8), 10 GPUs, 1 rack");
  EXPECT_THAT(std::string(PrivateTopology(VcSpec{"e"}).status().message()),
              HasSubstr("no quota"));
}

SimConfig Config() {
  SimConfig c;
  c.policy = "tiresias-l";
  c.scheduler.queues = *QueueConfig::Create({3600});
  return c;
}

std::vector<JobSpec> RandomJobs(uint64_t seed, int n) {
  std::mt19937_64 gen(seed);
  std::vector<JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += static_cast<double>(gen() % 400);
    jobs.push_back(Spec(i, 1 << (gen() % 4), t, 60.0 + gen() % 5000,
                        std::string(1, static_cast<char>('a' + gen() % 3))));
  }
  return jobs;
}

// A VC that owns every server replays exactly as no VC at all.
TEST(VcRunsTest, OneVcOwningTheClusterIsTheFlatCluster) {
  const Topology topology = Topology::Uniform(2, 4, 8);
  std::vector<JobSpec> jobs = RandomJobs(3, 400);
  for (JobSpec& job : jobs) job.vc = "all";
  SimConfig flat = Config();
  SimConfig one = Config();
  one.vcs = {VcSpec{"all", std::vector<int>(8, 8)}};
  auto a = Simulate(jobs, topology, flat);
  auto b = Simulate(jobs, topology, one);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  ASSERT_EQ(a->jobs.size(), b->jobs.size());
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].end, b->jobs[i].end) << "job " << a->jobs[i].id;
    EXPECT_EQ(a->jobs[i].preemptions, b->jobs[i].preemptions);
  }
  EXPECT_EQ(a->preemptions, b->preemptions);
}

// Three tenants sharing 8 servers, against each alone on its quota: no
// tenant's jobs wait longer on average (borrowing only adds, reclaim
// gives the quota back within the pass).
TEST(VcRunsTest, SharingBeatsEachTenantsPrivateCluster) {
  const Topology topology = Topology::Uniform(1, 8, 8);
  std::vector<JobSpec> jobs = RandomJobs(11, 600);
  auto vcs = VcsFromTrace(&jobs, topology);
  ASSERT_TRUE(vcs.ok()) << vcs.status();
  SimConfig shared_config = Config();
  shared_config.vcs = *vcs;
  auto shared = Simulate(jobs, topology, shared_config);
  ASSERT_TRUE(shared.ok()) << shared.status();
  std::vector<SimResult> privates;
  privates.reserve(vcs->size());
  std::vector<const SimResult*> pointers;
  for (const VcSpec& vc : *vcs) {
    auto own = PrivateTopology(vc);
    ASSERT_TRUE(own.ok());
    std::vector<JobSpec> mine = JobsOf(jobs, vc.name);
    RemoveUnfittable(&mine, *own);
    auto r = Simulate(mine, *own, Config());
    ASSERT_TRUE(r.ok()) << r.status();
    privates.push_back(*std::move(r));
    pointers.push_back(&privates.back());
  }
  const std::vector<VcRow> rows = CompareVcs(*vcs, jobs, *shared, pointers);
  ASSERT_EQ(rows.size(), 3u);
  for (const VcRow& row : rows) {
    EXPECT_TRUE(row.has_private);
    EXPECT_GT(row.private_jobs, 50) << row.name;
    EXPECT_LE(row.anomaly_s(), 0)
        << row.name << ": shared " << row.shared_same_avg_queueing_s
        << " s, private " << row.private_avg_queueing_s << " s";
  }
  const SimResult merged = MergeResults(pointers, "static", 64);
  EXPECT_EQ(Summarize(merged).jobs,
            rows[0].private_jobs + rows[1].private_jobs + rows[2].private_jobs);
}

}  // namespace
}  // namespace tiresias

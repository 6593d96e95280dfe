// The Gandiva engine on traces small enough to work out on paper (each was
// also run through the original simulator, simulator/run_sim.py --schedule
// gandiva, which gave the same end times), and properties of random runs.
#include "sim/gandiva.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

#include "sim/engine.h"
#include "sim/metrics.h"

namespace tiresias {
namespace {

JobSpec Spec(JobId id, int gpus, double submit, double duration,
             std::string model = "resnet50") {
  return JobSpec{id, gpus, Seconds{submit}, Seconds{duration},
                 std::move(model)};
}

SimConfig GandivaConfig() {
  SimConfig c;
  c.policy = "gandiva";
  c.preemption_cost = false;
  c.placement_slowdown = false;
  return c;
}

std::map<JobId, JobResult> ById(const SimResult& r) {
  std::map<JobId, JobResult> out;
  for (const JobResult& j : r.jobs) out[j.id] = j;
  return out;
}

SimResult RunGandiva(const std::vector<JobSpec>& jobs, const Topology& topo,
                     const SimConfig& config = GandivaConfig()) {
  absl::StatusOr<SimResult> r = Simulate(jobs, topo, config);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : SimResult{};
}

// One server of 2 GPUs; three 1-GPU jobs at 0 (A 200 s, B 200 s, C 50 s).
// A makes a set (capacity 2, util 1); B does not fit by util (1 + 1 < 2 is
// false) and no GPU is free, so it time-slices into that set; so does C.
// A and B run; at 60 (a multiple of 60 on the 10 s grid) the slice switches:
// [A B C] -> [C A B], C and A run, B is suspended (60 s done). C ends at the
// step at 110 (50 s from 60); [A B] both run: A ends at 200, B needs 140 s
// more from 110: 250.
TEST(GandivaTest, TimeSlicesAnOversubscribedSet) {
  std::vector<JobSpec> jobs = {Spec(0, 1, 0, 200), Spec(1, 1, 0, 200),
                               Spec(2, 1, 0, 50)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 1, 2));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 200);
  EXPECT_DOUBLE_EQ(by[1].end, 250);
  EXPECT_DOUBLE_EQ(by[2].end, 110);
  EXPECT_DOUBLE_EQ(by[2].first_start, 60);
  EXPECT_EQ(by[1].preemptions, 1);
  EXPECT_EQ(r.preemptions, 1);
  // Executed = time holding GPUs; queueing = JCT - executed.
  EXPECT_DOUBLE_EQ(by[1].executed, 200);
  EXPECT_DOUBLE_EQ(by[1].queueing(), 50);
  EXPECT_DOUBLE_EQ(by[2].queueing(), 60);
  EXPECT_EQ(r.policy, "gandiva");
  EXPECT_EQ(r.placement, "node-sets");
  // Busy GPU-seconds: two GPUs from 0 to 200, one to 250.
  EXPECT_DOUBLE_EQ(r.busy_gpu_seconds, 2 * 200 + 50);
  EXPECT_DOUBLE_EQ(r.last_end, 250);
}

// The same jobs at 5 s: the original's steps are 5, 15, 25, ... (10 s from
// the last arrival), never a multiple of 60, so the slice never switches:
// A and B run to 205, C waits for them and ends at 255.
TEST(GandivaTest, SlicesSwitchOnlyOnStepsAtMultiplesOf60) {
  std::vector<JobSpec> jobs = {Spec(0, 1, 5, 200), Spec(1, 1, 5, 200),
                               Spec(2, 1, 5, 50)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 1, 2));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 205);
  EXPECT_DOUBLE_EQ(by[1].end, 205);
  EXPECT_DOUBLE_EQ(by[2].end, 255);
  EXPECT_EQ(r.preemptions, 0);
}

// A job ends at the first step at or after its duration: 25 s from 0 ends at
// the step at 30.
TEST(GandivaTest, JobsEndOnTheTenSecondGrid) {
  SimResult r = RunGandiva({Spec(0, 1, 0, 25)}, Topology::Uniform(1, 1, 1));
  EXPECT_DOUBLE_EQ(r.jobs[0].end, 30);
  EXPECT_DOUBLE_EQ(r.jobs[0].executed, 30);
  // An arrival is a step too: a job arriving at 27 makes a step there.
  r = RunGandiva({Spec(0, 1, 0, 25), Spec(1, 1, 27, 100)},
                 Topology::Uniform(1, 1, 2));
  EXPECT_DOUBLE_EQ(ById(r)[0].end, 27);
  EXPECT_DOUBLE_EQ(ById(r)[1].end, 127);
}

// 2 servers x 4 GPUs. Two 4-GPU jobs take a set (one server) each; the 2-GPU
// job has no set of its class and no free server: it pends, and is placed
// only when a set is released (A ends at 100). JCT 150.
TEST(GandivaTest, PendsUntilASetIsReleased) {
  std::vector<JobSpec> jobs = {Spec(0, 4, 0, 100), Spec(1, 4, 0, 300),
                               Spec(2, 2, 0, 50)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 2, 4));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 100);
  EXPECT_DOUBLE_EQ(by[1].end, 300);
  EXPECT_DOUBLE_EQ(by[2].end, 150);
  EXPECT_DOUBLE_EQ(by[2].first_start, 100);
  EXPECT_DOUBLE_EQ(by[2].queueing(), 100);
}

// Growth. 4 servers x 2 GPUs; three 4-GPU jobs (sets of 2 servers,
// capacity 1). A and B get a set each; C time-slices into B's set: [B C].
// At 60 the slice switches to [C B] (B suspended after 60 s). A ends at 100
// and its set is released; at the next step (110) the class's target, all
// its demand (8 GPUs), exceeds its 4 GPUs, so it grows by one set and
// re-deals its jobs: C stays, B moves to the new set and runs from 100 (the
// adjustment decides who ran since the previous step). B: 60 s + 240 s from
// 100 = 340; C: 300 s from 60 = 360.
TEST(GandivaTest, NodeSetGrowsAndMigratesAJob) {
  std::vector<JobSpec> jobs = {Spec(0, 4, 0, 100), Spec(1, 4, 0, 300),
                               Spec(2, 4, 0, 300)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 4, 2));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 100);
  EXPECT_DOUBLE_EQ(by[1].end, 340);
  EXPECT_DOUBLE_EQ(by[2].end, 360);
  EXPECT_EQ(by[1].preemptions, 1);
  EXPECT_EQ(by[2].preemptions, 0);
}

// Shrinking. 2 servers x 2 GPUs, 1-GPU jobs. A and B (1000 s) each make a
// set; at 10 the class holds 4 GPUs for a demand of 2: it shrinks by one
// set, A joins B's ([B A], both run: a migration, no suspension). C (100 s)
// arrives at 20 and makes a set on the freed server; at 30 the class shrinks
// again and C joins [B A C]: it waits (it never ran, so no preemption).
// From 40 on the class wants one more GPU but grows by whole sets of one
// server only when a growth step fails (the original's quirk): nothing
// changes. Slices: at 60 [C B A] (A suspended at 60 s), at 120 [A C B]
// (B suspended at 120 s), C ends at 160 ([A B] run). A: 60 + 940 from 120 =
// 1060; B: 120 + 880 from 160 = 1040.
TEST(GandivaTest, NodeSetShrinksAndMergesJobs) {
  std::vector<JobSpec> jobs = {Spec(0, 1, 0, 1000), Spec(1, 1, 0, 1000),
                               Spec(2, 1, 20, 100)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 2, 2));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 1060);
  EXPECT_DOUBLE_EQ(by[1].end, 1040);
  EXPECT_DOUBLE_EQ(by[2].end, 160);
  EXPECT_DOUBLE_EQ(by[2].first_start, 60);
  EXPECT_EQ(by[0].preemptions, 1);
  EXPECT_EQ(by[1].preemptions, 1);
  EXPECT_EQ(by[2].preemptions, 0);
}

// Job sizes the original has no list for (3 and 128 GPUs; it stops on
// them) get their own class. 32 servers x 4 GPUs: A and B (3 GPUs, 100 s)
// each get a set of one server (capacity 1); the 128-GPU job C pends. At 10
// the class holds 8 GPUs for a demand of 6, so it gives up a set (it counts
// the excess in job-sized steps: ceil(2 / 3) = 1) and A joins B's: B runs,
// A waits. Slices: A runs 60-120, B 120-160 (ends), A 160-200 (ends). Only
// the release of the last set lets C start, at 200: it ends at 210.
TEST(GandivaTest, AnyGpuCountGetsAClass) {
  std::vector<JobSpec> jobs = {Spec(0, 3, 0, 100), Spec(1, 3, 0, 100),
                               Spec(2, 128, 0, 10)};
  SimResult r = RunGandiva(jobs, Topology::Uniform(1, 32, 4));
  auto by = ById(r);
  EXPECT_DOUBLE_EQ(by[0].end, 200);
  EXPECT_DOUBLE_EQ(by[1].end, 160);
  EXPECT_DOUBLE_EQ(by[2].end, 210);
  EXPECT_EQ(by[1].preemptions, 1);
  EXPECT_EQ(by[0].preemptions, 1);
}

// A multi-GPU job whose set spans servers runs slower when placement
// slowdown is on (VGG16: 1.5x); a set within one server does not.
TEST(GandivaTest, PlacementSlowdownOnSetsSpanningServers) {
  SimConfig c = GandivaConfig();
  c.placement_slowdown = true;
  SimResult r =
      RunGandiva({Spec(0, 4, 0, 100, "vgg16")}, Topology::Uniform(1, 2, 2), c);
  EXPECT_DOUBLE_EQ(r.jobs[0].end, 150);
  r = RunGandiva({Spec(0, 4, 0, 100, "vgg16")}, Topology::Uniform(1, 1, 4), c);
  EXPECT_DOUBLE_EQ(r.jobs[0].end, 100);
}

TEST(GandivaTest, SimulatorOnlyPolicy) {
  EXPECT_TRUE(CheckSimulatorPolicy("gandiva").ok());
  EXPECT_FALSE(CheckSimulatorPolicy("gandiv").ok());
  std::vector<std::string> names = SimulatorPolicyNames();
  EXPECT_NE(std::find(names.begin(), names.end(), "gandiva"), names.end());
  // The scheduler (and so the master) refuses it, saying why.
  absl::Status status = MakePolicy("gandiva", {}).status();
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find("simulator-only"), std::string::npos);
  // Empty traces and bad inputs as for every policy.
  EXPECT_TRUE(Simulate({}, Topology::Uniform(1, 1, 1), GandivaConfig()).ok());
  EXPECT_FALSE(
      Simulate({Spec(0, 2, 0, 1)}, Topology::Uniform(1, 1, 1), GandivaConfig())
          .ok());
}

// Random traces on random clusters (some of mixed server sizes): every job
// finishes; it runs exactly its
// duration rounded up to the 10 s grid (never more than 10 s over, never
// under: work is neither lost nor made up); it never starts before it
// arrives; at no time are more GPUs busy than the cluster has (no set runs
// more jobs than its GPUs hold); busy GPU-seconds, and the area under the
// recorded busy-GPU series, equal the jobs' executed GPU-seconds; the run
// is deterministic.
TEST(GandivaTest, RandomTracesConserveWork) {
  std::mt19937_64 gen(7);
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 8, 3, 16};
  for (int trial = 0; trial < 60; ++trial) {
    const int servers = 1 + static_cast<int>(gen() % 6);
    const int per_server = std::vector<int>{1, 2, 4, 8}[gen() % 4];
    Topology topo = Topology::Uniform(1, servers, per_server);
    if (trial % 3 == 0) {  // mixed server sizes, as in the Philly cluster
      std::vector<ServerSpec> mixed;
      for (int i = 0; i < servers + 1; ++i) {
        mixed.push_back({0, i % 2 == 0 ? 2 : 8, ""});
      }
      topo = *Topology::Create(mixed);
    }
    std::vector<JobSpec> jobs;
    double t = 0;
    const int n = 5 + static_cast<int>(gen() % 60);
    for (int i = 0; i < n; ++i) {
      t += static_cast<double>(gen() % 200);
      int gpus = sizes[gen() % 10];
      if (gpus > topo.total_gpus()) gpus = 1;
      jobs.push_back(Spec(i, gpus, t, static_cast<double>(gen() % 3000)));
    }
    SimConfig c = GandivaConfig();
    c.record_timeseries = true;
    SimResult r = RunGandiva(jobs, topo, c);
    ASSERT_EQ(r.jobs.size(), jobs.size()) << "trial " << trial;
    double gpu_seconds = 0;
    for (const JobResult& j : r.jobs) {
      EXPECT_GE(j.executed, j.duration) << "trial " << trial << " job " << j.id;
      EXPECT_LE(j.executed, j.duration + 10 + 1e-9) << "trial " << trial;
      EXPECT_GE(j.first_start, j.submit);
      EXPECT_LE(j.first_start + j.executed, j.end + 1e-9);
      gpu_seconds += j.executed * j.gpus;
    }
    EXPECT_NEAR(r.busy_gpu_seconds, gpu_seconds, 1e-6 * gpu_seconds + 1e-6);
    double series_area = 0;
    const auto& ts = r.timeseries;
    for (size_t k = 0; k < ts.size(); ++k) {
      EXPECT_LE(ts[k].busy_gpus, topo.total_gpus()) << "trial " << trial;
      EXPECT_GE(ts[k].pending_jobs, 0);
      if (k + 1 < ts.size()) {
        series_area += ts[k].busy_gpus * (ts[k + 1].time - ts[k].time);
      }
    }
    EXPECT_NEAR(series_area, gpu_seconds, 1e-6 * gpu_seconds + 1e-6);
    ASSERT_FALSE(ts.empty());
    EXPECT_EQ(ts.back().busy_gpus, 0);
    EXPECT_EQ(ts.back().running_jobs, 0);
    SimResult again = RunGandiva(jobs, topo, c);
    for (size_t i = 0; i < jobs.size(); ++i) {
      EXPECT_EQ(again.jobs[i].end, r.jobs[i].end);
    }
    EXPECT_EQ(again.preemptions, r.preemptions);
  }
}

}  // namespace
}  // namespace tiresias

// The simulator on traces small enough to work out on paper, and
// conservation properties on larger random ones.
#include "sim/engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string_view>

#include "sim/metrics.h"
#include "trace/trace_reader.h"

namespace tiresias {
namespace {

JobSpec Spec(JobId id, int gpus, double submit, double duration,
             std::string model = "resnet50") {
  return JobSpec{id, gpus, Seconds{submit}, Seconds{duration},
                 std::move(model)};
}

SimConfig Config(std::string policy, double threshold = 100) {
  SimConfig c;
  c.policy = std::move(policy);
  c.placement = "count";
  c.scheduler.queues = *QueueConfig::Create({threshold});
  c.preemption_cost = false;
  c.placement_slowdown = false;
  return c;
}

double Jct(const SimResult& r, JobId id) {
  for (const JobResult& j : r.jobs) {
    if (j.id == id) return j.jct();
  }
  ADD_FAILURE() << "no job " << id;
  return NAN;
}

// 4 GPUs, threshold 100 GPU-s. A (4 GPUs, 50 s) from 0; B (1 GPU, 20 s) at
// 10 waits behind A (both Q1, A started first). A is demoted at 100 / 4 = 25;
// B preempts it and runs 25-45; A resumes at 45 with 25 s left: ends at 70.
// JCT A = 70, B = 35. Under yarn-cs: A 0-50, B 50-70: JCT 50 and 60.
TEST(EngineTest, TiresiasLHandComputed) {
  std::vector<JobSpec> jobs = {Spec(1, 4, 0, 50, "vgg19"), Spec(2, 1, 10, 20)};
  Topology topo = Topology::Uniform(1, 1, 4);
  auto las = Simulate(jobs, topo, Config("tiresias-l"));
  ASSERT_TRUE(las.ok()) << las.status();
  EXPECT_DOUBLE_EQ(Jct(*las, 1), 70);
  EXPECT_DOUBLE_EQ(Jct(*las, 2), 35);
  EXPECT_EQ(las->preemptions, 1);
  auto yarn = Simulate(jobs, topo, Config("yarn-cs"));
  EXPECT_DOUBLE_EQ(Jct(*yarn, 1), 50);
  EXPECT_DOUBLE_EQ(Jct(*yarn, 2), 60);
  EXPECT_EQ(yarn->preemptions, 0);

  // With preemption cost, A pays VGG19's 1.454 + 0.03194 x 39 s on resume.
  SimConfig costly = Config("tiresias-l");
  costly.preemption_cost = true;
  auto paid = Simulate(jobs, topo, costly);
  const double cost = 1.454 + 0.03194 * 39;
  EXPECT_NEAR(Jct(*paid, 1), 70 + cost, 1e-9);
  EXPECT_NEAR(paid->overhead_seconds, cost, 1e-9);
  Summary s = Summarize(*paid);
  EXPECT_EQ(s.preemptions, 1);
  EXPECT_NEAR(s.preemption_overhead_s, cost, 1e-9);
}

// 2 servers x 2 GPUs: a 4-GPU job must span both. VGG16 runs 1.5x slower
// spread, ResNet50 1.05x; a 2-GPU job on one server runs at full speed.
TEST(EngineTest, PlacementSlowdownHandComputed) {
  Topology topo = Topology::Uniform(1, 2, 2);
  auto run = [&](std::vector<JobSpec> jobs, bool slowdown) {
    SimConfig c = Config("fifo");
    c.placement = "consolidate";
    c.placement_slowdown = slowdown;
    return *Simulate(jobs, topo, c);
  };
  EXPECT_DOUBLE_EQ(Jct(run({Spec(1, 4, 0, 100, "vgg16")}, true), 1), 150);
  EXPECT_DOUBLE_EQ(Jct(run({Spec(1, 4, 0, 100, "resnet50")}, true), 1), 105);
  EXPECT_DOUBLE_EQ(Jct(run({Spec(1, 4, 0, 100, "vgg16")}, false), 1), 100);
  EXPECT_DOUBLE_EQ(Jct(run({Spec(1, 2, 0, 100, "vgg16")}, true), 1), 100);
}

// srtf on 1 GPU: A (100 s) at 0, B (10 s) at 20 preempts A; A ends at 110.
TEST(EngineTest, SrtfHandComputed) {
  std::vector<JobSpec> jobs = {Spec(1, 1, 0, 100), Spec(2, 1, 20, 10)};
  auto r = *Simulate(jobs, Topology::Uniform(1, 1, 1), Config("srtf"));
  EXPECT_DOUBLE_EQ(Jct(r, 1), 110);
  EXPECT_DOUBLE_EQ(Jct(r, 2), 10);
  Summary s = Summarize(r);
  EXPECT_DOUBLE_EQ(s.avg_jct_s, 60);
  EXPECT_DOUBLE_EQ(s.makespan_s, 110);
  EXPECT_DOUBLE_EQ(s.avg_queueing_s, (10.0 + 0) / 2);
  EXPECT_DOUBLE_EQ(s.gpu_utilization, 1.0);
}

// One trace for every policy, worked out on paper. 2 GPUs, no overheads.
// J1: 2 GPUs at 0 for 100 s; J2: 1 GPU at 10 for 20 s; J3: 1 GPU at 20 for
// 50 s. Threshold 60 GPU-s.
//  Non-preemptive (yarn-cs, fifo, best-effort, sjf): J1 0-100; J2 100-120,
//    J3 100-150.
//  srtf, srsf, smallest-first, las: J2 preempts J1 at 10 (shorter, smaller,
//    less served); J3 joins it at 20; J1 needs both GPUs, so it waits until
//    J3 ends at 70 and runs 70-160.
//  tiresias-l: J1 (Q1, ran first) keeps running until demoted at 60 / 2 =
//    30; J2 and J3 (Q1) start at 30; J2 ends at 50, J3 at 80; J1 resumes
//    80-150 (70 s left).
//  tiresias-g, samples {10,10,10,500,500}: in Q1 (D = 60) G(0) = 3/50 while
//    G(a) = 0 for a >= 10 (nothing ends within 60 GPU-s). The index orders
//    only Q1's waiting jobs; J1 runs and keeps its place, so the timeline
//    is Tiresias-L's.
//  tiresias-g under the start-time order, where the index orders running
//    jobs too: at 10 J2 outranks J1 (20 GPU-s served): J1 preempted. At 20
//    J3 (fresh) starts beside J2. At 30 J2 ends; J1 and J3 tie on index 0
//    and J1 started first: J3 is preempted after 10 s and J1 runs until
//    demoted at 30 + (60-20)/2 = 50; then J3 (Q1) runs 50-90 and J1
//    finishes 90-160 (70 s left).
TEST(EngineTest, EveryPolicyHandComputed) {
  std::vector<JobSpec> jobs = {Spec(1, 2, 0, 100), Spec(2, 1, 10, 20),
                               Spec(3, 1, 20, 50)};
  struct Want {
    const char* policy;
    double j1, j2, j3;
  };
  const Want wants[] = {
      {"yarn-cs", 100, 110, 130},       {"fifo", 100, 110, 130},
      {"best-effort", 100, 110, 130},   {"sjf", 100, 110, 130},
      {"srtf", 160, 20, 50},
      {"srsf", 160, 20, 50},            {"smallest-first", 160, 20, 50},
      {"las", 160, 20, 50},             {"tiresias-l", 150, 40, 60},
      {"tiresias-g", 150, 40, 60},      {"tiresias-g start-time", 160, 20, 70},
  };
  ASSERT_EQ(std::size(wants), PolicyNames().size() + 1);
  for (const Want& w : wants) {
    const std::string_view name = w.policy;
    const bool start_time = name.ends_with(" start-time");
    SimConfig c = Config(std::string(name.substr(0, name.find(' '))), 60);
    if (start_time) c.scheduler.queue_order = QueueOrder::kStartTime;
    c.policy_options.gittins_samples = {10, 10, 10, 500, 500};
    c.policy_options.gittins_min_samples = 5;
    auto r = Simulate(jobs, Topology::Uniform(1, 1, 2), c);
    ASSERT_TRUE(r.ok()) << w.policy << ": " << r.status();
    EXPECT_DOUBLE_EQ(Jct(*r, 1), w.j1) << w.policy;
    EXPECT_DOUBLE_EQ(Jct(*r, 2), w.j2) << w.policy;
    EXPECT_DOUBLE_EQ(Jct(*r, 3), w.j3) << w.policy;
  }
}

TEST(EngineTest, RejectsJobsItCannotSimulate) {
  Topology topo = Topology::Uniform(1, 1, 4);
  std::vector<JobSpec> big = {Spec(1, 8, 0, 10)};
  EXPECT_EQ(Simulate(big, topo, Config("fifo")).status().message(),
            "job 1 needs 8 GPUs; the cluster has 4");
  std::vector<JobSpec> kept = {Spec(1, 8, 0, 10), Spec(2, 2, 1, 10)};
  std::vector<JobSpec> removed = RemoveUnfittable(&kept, topo);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].id, 1);
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(kept[0].id, 2);
  SimConfig bad = Config("lifo");
  EXPECT_FALSE(Simulate(kept, topo, bad).ok());
}

std::vector<JobSpec> RandomJobs(uint64_t seed, int n) {
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> gap(1.0 / 30);
  std::lognormal_distribution<double> duration(5, 1.5);
  std::discrete_distribution<int> gpus({0, 60, 20, 0, 12, 0, 0, 0, 8});
  std::vector<JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < n; ++i) {
    t += gap(gen);
    jobs.push_back(Spec(i, gpus(gen), t, duration(gen), ""));
  }
  AssignModels(&jobs, ModelTable::Builtin(), seed);
  return jobs;
}

// Servers of one GPU each: a multi-GPU job always spans servers, a 1-GPU
// job never does, so every job's slowdown is known. Then, for every policy:
// executed = duration x slowdown + overhead, and the busy-GPU integral
// (and the recorded time series) equals the sum of GPUs x executed.
TEST(EngineTest, ConservesWork) {
  Topology topo = Topology::Uniform(2, 8, 1);
  std::vector<JobSpec> jobs = RandomJobs(5, 400);
  const ModelTable models = ModelTable::Builtin();
  for (const std::string& policy : PolicyNames()) {
    SCOPED_TRACE(policy);
    SimConfig c = Config(policy, 600);
    c.placement = "spread";
    c.preemption_cost = true;
    c.placement_slowdown = true;
    c.record_timeseries = true;
    auto r = Simulate(jobs, topo, c);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->jobs.size(), jobs.size());
    double gpu_seconds = 0;
    for (const JobResult& j : r->jobs) {
      const double slowdown = j.gpus > 1 ? models.SpreadSlowdown(j.model) : 1;
      EXPECT_NEAR(j.executed, j.duration * slowdown + j.overhead, 1e-6)
          << "job " << j.id;
      EXPECT_GE(j.first_start, j.submit);
      gpu_seconds += j.gpus * j.executed;
    }
    EXPECT_NEAR(r->busy_gpu_seconds, gpu_seconds, 1e-6 * gpu_seconds);
    double series_area = 0;
    const auto& ts = r->timeseries;
    for (size_t k = 0; k + 1 < ts.size(); ++k) {
      series_area += ts[k].busy_gpus * (ts[k + 1].time - ts[k].time);
    }
    EXPECT_NEAR(series_area, gpu_seconds, 1e-6 * gpu_seconds);
    EXPECT_EQ(ts.back().busy_gpus, 0);
    if (policy == "yarn-cs" || policy == "fifo" || policy == "sjf") {
      EXPECT_EQ(r->preemptions, 0);
    }
  }
}

// SimConfig::count_moves off (the released simulator's count): a job
// stopped and started on other GPUs in one pass is not a preemption. The
// schedule is the same (no preemption cost), only the count differs: at
// most as many per job, the per-job counts sum to the total either way.
// The first 2,000 Philly jobs on 16x8 (count placement) have some moves,
// so the test can tell the two apart.
TEST(EngineTest, MovesWithinAPassAreNotCountedWhenAsked) {
  auto philly = ReadTrace("data/philly.csv");
  ASSERT_TRUE(philly.ok()) << philly.status();
  const Topology topo = Topology::Uniform(1, 16, 8);
  std::vector<JobSpec> jobs;
  for (size_t i = 0; i < 2000; ++i) {
    if ((*philly)[i].num_gpus <= topo.total_gpus())
      jobs.push_back((*philly)[i]);
  }
  for (const std::string policy : {"tiresias-l", "srsf"}) {
    SCOPED_TRACE(policy);
    SimConfig c = Config(policy, 3250);
    c.placement = "count";
    c.preemption_cost = c.placement_slowdown = false;
    auto counted = Simulate(jobs, topo, c);
    c.count_moves = false;
    auto moves_free = Simulate(jobs, topo, c);
    ASSERT_TRUE(counted.ok() && moves_free.ok());
    ASSERT_EQ(counted->jobs.size(), moves_free->jobs.size());
    int64_t sum = 0;
    for (size_t i = 0; i < counted->jobs.size(); ++i) {
      EXPECT_EQ(counted->jobs[i].end, moves_free->jobs[i].end);
      EXPECT_LE(moves_free->jobs[i].preemptions, counted->jobs[i].preemptions);
      sum += moves_free->jobs[i].preemptions;
    }
    EXPECT_EQ(sum, moves_free->preemptions);
    EXPECT_LT(moves_free->preemptions, counted->preemptions);
    EXPECT_GT(moves_free->preemptions, 0);  // not every preemption a move
  }
}

TEST(EngineTest, SameSeedSameResult) {
  std::vector<JobSpec> jobs = RandomJobs(9, 300);
  SimConfig c = Config("tiresias-l", 600);
  c.placement = "random";
  c.preemption_cost = c.placement_slowdown = true;
  auto a = *Simulate(jobs, Topology::Uniform(1, 4, 4), c);
  auto b = *Simulate(jobs, Topology::Uniform(1, 4, 4), c);
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    EXPECT_EQ(a.jobs[i].end, b.jobs[i].end);
  }
}

// The engine finds a job's record from its id by arithmetic when the ids
// are consecutive (a trace's are) and through a map when not: the same
// jobs under ids 0, 1, 2, ... and under 1000, 1007, 1014, ... (the same
// order, so the same ties) have the same schedule, with moves counted or
// not, under policies that preempt thousands of times (each preemption
// leaves a completion in the engine's heap that is never reached).
TEST(EngineTest, JobIdsDoNotChangeTheSchedule) {
  const std::vector<JobSpec> jobs = RandomJobs(13, 400);
  std::vector<JobSpec> sparse = jobs;
  for (size_t i = 0; i < sparse.size(); ++i) {
    sparse[i].id = 1000 + 7 * static_cast<JobId>(i);
  }
  const Topology topo = Topology::Uniform(1, 4, 4);
  for (const std::string policy : {"las", "srsf", "tiresias-l"}) {
    for (bool count_moves : {true, false}) {
      SCOPED_TRACE(policy + (count_moves ? "" : ", moves not counted"));
      SimConfig c = Config(policy, 600);
      c.preemption_cost = c.placement_slowdown = true;
      c.count_moves = count_moves;
      auto a = Simulate(jobs, topo, c);
      auto b = Simulate(sparse, topo, c);
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_EQ(a->jobs.size(), b->jobs.size());
      if (policy == "las") EXPECT_GT(a->preemptions, 1000);
      EXPECT_EQ(a->preemptions, b->preemptions);
      for (size_t i = 0; i < a->jobs.size(); ++i) {
        EXPECT_EQ(b->jobs[i].id, sparse[i].id);
        EXPECT_EQ(a->jobs[i].end, b->jobs[i].end) << "job " << i;
        EXPECT_EQ(a->jobs[i].preemptions, b->jobs[i].preemptions);
        EXPECT_EQ(a->jobs[i].overhead, b->jobs[i].overhead);
      }
    }
  }
}

// data/60_job.csv on 8 GPUs with a queue bound of 100 GPU-seconds (12.5 s
// for an 8-GPU job) and PROMOTEKNOB 2, restores of 13.6 s (the built-in
// ResNet50-like models'): job 5 is preempted before each restore ends,
// demoted, promoted, for ever. The run fails naming it instead of never
// ending; without the restore cost every job ends.
TEST(EngineTest, SettingsThatNeverLetAJobProgressFailTheRun) {
  auto jobs = ReadTrace("data/60_job.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  SimConfig c = Config("tiresias-l", 100);
  c.scheduler.promote_knob = 2;
  c.preemption_cost = true;
  absl::StatusOr<SimResult> r = Simulate(*jobs, Topology::Uniform(1, 2, 4), c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(std::string(r.status().message())
                .find("preemptions in a row came before the job's restore ended"),
            std::string::npos)
      << r.status();
  c.preemption_cost = false;
  absl::StatusOr<SimResult> free =
      Simulate(*jobs, Topology::Uniform(1, 2, 4), c);
  ASSERT_TRUE(free.ok()) << free.status();
  EXPECT_EQ(free->jobs.size(), 60u);
}

// LAS may starve one job with restarts while others finish: 1 GPU, A
// (100 s) from 0, then a 0.5 s job every second from 10 to 309. Each
// preempts A (no service yet beats 10 s), A restarts at x.5 and is preempted
// again at x+1, before its restore ends: 300 barren preemptions in a row for
// A, yet the run goes on, and A ends after the last one with its restore
// and its 90 s left.
TEST(EngineTest, AStarvedJobDoesNotFailARunThatProgresses) {
  std::vector<JobSpec> jobs = {Spec(1, 1, 0, 100)};
  for (int i = 0; i < 300; ++i) jobs.push_back(Spec(2 + i, 1, 10 + i, 0.5));
  SimConfig c = Config("las");
  c.preemption_cost = true;
  const double restore = c.models.PreemptionCostSeconds("resnet50");
  ASSERT_GT(restore, 0.5);
  absl::StatusOr<SimResult> r = Simulate(jobs, Topology::Uniform(1, 1, 1), c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->preemptions, 300);
  EXPECT_NEAR(Jct(*r, 1), 309.5 + restore + 90, 1e-6);
}

TEST(EngineTest, ReplaysOriginalSixtyJobTrace) {
  auto jobs = ReadTrace("data/60_job.csv");
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  Topology topo = Topology::Uniform(1, 4, 4);
  for (const char* policy : {"tiresias-l", "yarn-cs", "srtf"}) {
    SimConfig c = Config(policy, 3600);
    c.placement = "";
    auto r = Simulate(*jobs, topo, c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->jobs.size(), 60u);
  }
}

}  // namespace
}  // namespace tiresias

namespace tiresias {
namespace {

// PACKLIMIT learnt during a run. 2 servers x 4 GPUs, tiresias-l with one
// queue (no demotion), `profiled` placement starting at PACKLIMIT 0.8, so a
// VGG16 job (skew 0.744) is at first packed, not consolidated.
//  - t = 0, 10, ..., 90: ten 1-GPU, 5 s jobs, VGG16 and ResNet50 (0.092)
//    in turn, one at a time. Each adds a sample labelled by its model's
//    spread slowdown (1.50: costly; 1.05: not, at the 10% threshold).
//    Refresh every 5: at 5 samples too few (min 8); at 10 a fit on 5 + 5
//    separable, balanced samples, whose boundary is their midpoint
//    (0.744 + 0.092) / 2 = 0.418.
//  - t = 1000: two 3-GPU ResNet50 jobs for 1000 s, one per server (pack:
//    best fit), leaving one free GPU on each.
//  - t = 1001: a 2-GPU VGG16 job for 100 s. Learning: 0.744 > 0.418, so it
//    is consolidated and waits for a whole server until 2000; JCT 1099.
//    Without learning it is packed across both servers and runs 1.5x
//    slower: JCT 150.
std::vector<JobSpec> LearningTrace() {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 10; ++i) {
    jobs.push_back(Spec(i + 1, 1, 10.0 * i, 5, i % 2 ? "resnet50" : "vgg16"));
  }
  jobs.push_back(Spec(11, 3, 1000, 1000, "resnet50"));
  jobs.push_back(Spec(12, 3, 1000, 1000, "resnet50"));
  jobs.push_back(Spec(13, 2, 1001, 100, "vgg16"));
  return jobs;
}

SimConfig LearningConfig(bool learn) {
  SimConfig c = Config("tiresias-l", 1e9);
  c.placement = "profiled";
  c.placement_slowdown = true;
  c.placement_options.pack_limit = 0.8;
  c.learn_pack_limit = learn;
  c.pack_limit_refresh_jobs = 5;
  return c;
}

TEST(EngineTest, LearntPackLimitFallsBetweenResNetAndVggAndChangesPlacement) {
  const Topology topo = Topology::Uniform(1, 2, 4);
  auto learnt = Simulate(LearningTrace(), topo, LearningConfig(true));
  ASSERT_TRUE(learnt.ok()) << learnt.status();
  ASSERT_TRUE(learnt->learnt_pack_limit.has_value());
  EXPECT_NEAR(*learnt->learnt_pack_limit, (0.744 + 0.092) / 2, 1e-9);
  EXPECT_EQ(learnt->pack_limit_samples, 10);  // the last refit, at 10
  EXPECT_EQ(learnt->pack_limit_fit, "fitted");
  EXPECT_EQ(learnt->pack_limit_updates, 1);
  EXPECT_DOUBLE_EQ(Jct(*learnt, 13), 1099);

  auto fixed = Simulate(LearningTrace(), topo, LearningConfig(false));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_FALSE(fixed->learnt_pack_limit.has_value());
  EXPECT_DOUBLE_EQ(Jct(*fixed, 13), 150);

  // The summary carries it for --json and the table's footer.
  const Summary s = Summarize(*learnt);
  ASSERT_TRUE(s.learnt_pack_limit.has_value());
  EXPECT_EQ(*s.learnt_pack_limit, *learnt->learnt_pack_limit);
  EXPECT_EQ(s.pack_limit_samples, 10);
}

TEST(EngineTest, LearntPackLimitIsDeterministic) {
  const Topology topo = Topology::Uniform(1, 2, 4);
  auto a = Simulate(LearningTrace(), topo, LearningConfig(true));
  auto b = Simulate(LearningTrace(), topo, LearningConfig(true));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a->learnt_pack_limit, *b->learnt_pack_limit);
  for (size_t i = 0; i < a->jobs.size(); ++i) {
    EXPECT_EQ(a->jobs[i].end, b->jobs[i].end) << a->jobs[i].id;
  }
}

// Only `profiled` learns; a bad refresh interval is refused.
TEST(EngineTest, PackLimitLearningOnlyUnderProfiled) {
  const Topology topo = Topology::Uniform(1, 2, 4);
  SimConfig pack = LearningConfig(true);
  pack.placement = "pack";
  auto r = Simulate(LearningTrace(), topo, pack);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->learnt_pack_limit.has_value());

  SimConfig bad = LearningConfig(true);
  bad.pack_limit_refresh_jobs = 0;
  EXPECT_EQ(Simulate(LearningTrace(), topo, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tiresias

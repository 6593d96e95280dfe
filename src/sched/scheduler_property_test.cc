// Properties of the scheduling core on seeded random workloads, for every
// policy and placement scheme: no GPU is ever double-booked, every job
// finishes, a job's executed time is the sum of its run intervals (and its
// attained service W times that), the incremental scheduler decides
// exactly what a fresh one built from a snapshot of the same state decides,
// and, under the stable queue order, a job is preempted only for a job of a
// higher queue (or of the queue it was just demoted into), and a pass with
// no arrival, completion or queue change decides nothing. With job control
// on (some jobs no-preempt, some submitted held and released later): a
// running no-preempt job is never preempted, and a held job never starts.
// With exclusive jobs (a share --exclusive): no server ever holds an
// exclusive job and another job at once, and a server is reserved exactly
// while an exclusive job holds GPUs there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "place/placement.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace tiresias {
namespace {

struct Workload {
  Topology topology;
  std::vector<JobSpec> jobs;  // by submit time
};

Workload RandomWorkload(uint64_t seed, int num_jobs,
                        double no_preempt_share = 0,
                        double exclusive_share = 0) {
  std::mt19937_64 gen(seed);
  // Two racks of mixed 2-, 4- and 8-GPU servers.
  std::vector<ServerSpec> servers;
  std::uniform_int_distribution<int> pick(0, 2);
  for (int i = 0; i < 6; ++i) servers.push_back({i % 2, 2 << pick(gen), ""});
  Workload w{*Topology::Create(servers), {}};
  std::exponential_distribution<double> gap(1.0 / 60);
  std::lognormal_distribution<double> duration(5, 1.5);
  std::discrete_distribution<int> gpus_index({60, 15, 12, 8, 5});
  const int kGpus[] = {1, 2, 4, 8, 12};
  double t = 0;
  for (int i = 0; i < num_jobs; ++i) {
    t += gap(gen);
    int gpus = std::min(kGpus[gpus_index(gen)], w.topology.total_gpus());
    w.jobs.push_back(JobSpec{i, gpus, Seconds{t}, Seconds{duration(gen)}, ""});
  }
  std::bernoulli_distribution no_preempt(no_preempt_share);
  for (JobSpec& job : w.jobs) job.no_preempt = no_preempt(gen);
  std::bernoulli_distribution exclusive(exclusive_share);
  for (JobSpec& job : w.jobs) job.exclusive = exclusive(gen);
  return w;
}

struct RunInterval {
  double start, end;
};

class Driver {
 public:
  Driver(const Workload& w, const std::string& policy,
         const std::string& placement, SchedulerOptions options,
         bool check_snapshot)
      : workload_(w),
        cluster_(w.topology),
        scheduler_(*MakePolicy(policy, PolicyOptions{.queues = options.queues}),
                   *MakePlacer(placement), options),
        policy_(policy),
        placement_(placement),
        options_(options),
        check_snapshot_(check_snapshot) {}

  // Job `id` is submitted held and released at `at`.
  void HoldUntil(JobId id, double at) { release_at_[id] = at; }

  void Run() {
    size_t next_arrival = 0;
    double now = 0;
    for (int steps = 0; steps < 1000000; ++steps) {
      double t = std::numeric_limits<double>::infinity();
      if (next_arrival < workload_.jobs.size()) {
        t = workload_.jobs[next_arrival].submit_time.count();
      }
      for (auto& [id, end] : finish_at_) t = std::min(t, end);
      for (auto& [id, at] : release_at_) {
        if (scheduler_.held(id)) t = std::min(t, at);
      }
      t = std::min(t, scheduler_.NextWakeup().count());
      if (std::isinf(t)) break;
      ASSERT_GE(t, now);
      now = t;
      while (next_arrival < workload_.jobs.size() &&
             workload_.jobs[next_arrival].submit_time.count() <= now) {
        const JobId id = workload_.jobs[next_arrival].id;
        ASSERT_TRUE(
            scheduler_.Submit(workload_.jobs[next_arrival++], Seconds{now})
                .ok());
        if (release_at_.contains(id)) ASSERT_TRUE(scheduler_.Hold(id).ok());
      }
      for (auto& [id, at] : release_at_) {
        if (at <= now && scheduler_.held(id)) {
          ASSERT_TRUE(scheduler_.Release(id, Seconds{now}).ok());
        }
      }
      std::vector<JobId> done;
      for (auto& [id, end] : finish_at_) {
        if (end <= now) done.push_back(id);
      }
      for (JobId id : done) {
        ASSERT_TRUE(scheduler_.Finish(id, Seconds{now}, cluster_).ok());
        Close(id, now);
        finish_at_.erase(id);
      }
      const bool wakeup_due = scheduler_.NextWakeup().count() <= now;
      std::optional<Decisions> expected;
      if (check_snapshot_ && !wakeup_due) expected = FromSnapshot(now);
      Decisions d = scheduler_.Schedule(Seconds{now}, cluster_);
      last_ = Describe(d);
      if (expected) ExpectSameDecisions(*expected, d);
      if (stable()) CheckStableOrder(d);
      Apply(d, now);
      CheckAllocation();
      if (stable()) CheckQuietPassDecidesNothing(now);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  void CheckFinal() {
    for (const Job& job : scheduler_.jobs()) {
      ASSERT_TRUE(job.finished()) << "job " << job.id() << " never finished";
      double sum = 0;
      for (const RunInterval& r : intervals_[job.id()]) sum += r.end - r.start;
      EXPECT_NEAR(job.TotalExecuted(job.finish_time()).count(), sum, 1e-6);
      EXPECT_NEAR(sum, job.spec().duration->count(), 1e-6);
      if (job.promotions() == 0) {
        EXPECT_NEAR(job.AttainedGpuSeconds(job.finish_time()),
                    job.num_gpus() * sum, 1e-6);
      }
    }
    EXPECT_EQ(cluster_.free_gpus(), cluster_.total_gpus());
  }

 private:
  bool stable() const {
    return options_.queue_order == QueueOrder::kStable &&
           scheduler_.policy().traits().multi_level_queues;
  }

  // Every preempted job is behind a job started in the same pass: in a
  // lower queue, or in the same queue only if it was demoted into it now.
  void CheckStableOrder(const Decisions& d) {
    int top_started = std::numeric_limits<int>::max();
    for (const StartDecision& s : d.started) {
      top_started = std::min(top_started, scheduler_.Find(s.job)->queue());
    }
    for (JobId id : d.preempted) {
      const bool demoted_now =
          std::find(d.requeued.begin(), d.requeued.end(), id) !=
          d.requeued.end();
      const int queue = scheduler_.Find(id)->queue();
      EXPECT_TRUE(queue > top_started ||
                  (demoted_now && queue == top_started))
          << "job " << id << " (queue " << queue
          << ") was preempted by a peer of its queue";
    }
  }

  // A pass that only re-reads a running job's record (as the master does
  // with agents' reports) starts and stops nothing, even under Tiresias-G,
  // whose index changes as jobs run.
  void CheckQuietPassDecidesNothing(double now) {
    for (const Job& job : scheduler_.jobs()) {
      if (!job.running()) continue;
      ASSERT_TRUE(scheduler_.Replace(job, Seconds{now}).ok());
      if (scheduler_.NextWakeup().count() <= now) return;
      Decisions quiet = scheduler_.Schedule(Seconds{now}, cluster_);
      EXPECT_TRUE(quiet.empty()) << "a pass with nothing new at " << now
                                 << " started " << quiet.started.size()
                                 << " and preempted " << quiet.preempted.size() << Describe(quiet) << " after" << last_;
      return;
    }
  }

  std::string Describe(const Decisions& d) {
    std::string out;
    for (auto& s : d.started) { const Job* j = scheduler_.Find(s.job); out += " S" + std::to_string(j->id()) + "/q" + std::to_string(j->queue()) + "/g" + std::to_string(j->num_gpus()) + "/p" + std::to_string(j->queue_position()); }
    for (auto id : d.preempted) { const Job* j = scheduler_.Find(id); out += " P" + std::to_string(j->id()) + "/q" + std::to_string(j->queue()) + "/g" + std::to_string(j->num_gpus()) + "/p" + std::to_string(j->queue_position()); }
    out += " free=" + std::to_string(cluster_.free_gpus());
    return out;
  }
  void Apply(const Decisions& d, double now) {
    for (JobId id : d.preempted) {
      EXPECT_FALSE(scheduler_.Find(id)->spec().no_preempt)
          << "no-preempt job " << id << " was preempted at " << now;
      Close(id, now);
      finish_at_.erase(id);
    }
    for (const StartDecision& s : d.started) {
      const Job& job = *scheduler_.Find(s.job);
      EXPECT_FALSE(scheduler_.held(s.job))
          << "held job " << s.job << " started";
      if (auto r = release_at_.find(s.job); r != release_at_.end()) {
        EXPECT_GE(now, r->second) << "job " << s.job << " started while held";
      }
      intervals_[s.job].push_back({now, NAN});
      double left = job.spec().duration->count() -
                    job.TotalExecuted(Seconds{now}).count();
      finish_at_[s.job] = now + std::max(0.0, left);
    }
  }
  void Close(JobId id, double now) { intervals_[id].back().end = now; }

  void CheckAllocation() {
    int busy = 0;
    const Topology& topology = cluster_.topology();
    // Per server: jobs holding GPUs there, and whether one is exclusive.
    std::vector<std::set<JobId>> holders(topology.num_servers());
    std::vector<bool> has_exclusive(topology.num_servers(), false);
    for (const Job& job : scheduler_.jobs()) {
      if (!job.running()) continue;
      busy += job.num_gpus();
      ASSERT_EQ(static_cast<int>(job.gpus().size()), job.num_gpus());
      for (GpuId g : job.gpus()) {
        ASSERT_EQ(cluster_.owner(g), job.id());
        const int s = topology.ServerOf(g);
        holders[s].insert(job.id());
        if (job.spec().exclusive) has_exclusive[s] = true;
      }
    }
    int reserved_idle = 0;
    for (int s = 0; s < topology.num_servers(); ++s) {
      ASSERT_EQ(cluster_.reserved(s), has_exclusive[s]) << "server " << s;
      if (has_exclusive[s]) {
        ASSERT_EQ(holders[s].size(), 1u)
            << "server " << s << " holds an exclusive job and another";
        const Server& server = topology.server(s);
        for (int i = 0; i < server.num_gpus; ++i) {
          reserved_idle += cluster_.owner(server.first_gpu + i) == kNoJob;
        }
      }
    }
    ASSERT_EQ(busy + reserved_idle, cluster_.busy_gpus())
        << "a GPU is held by no job";
  }

  Decisions FromSnapshot(double now) {
    Cluster copy = cluster_;
    Scheduler fresh(*MakePolicy(policy_, PolicyOptions{.queues = options_.queues}),
                    *MakePlacer(placement_), options_);
    for (const Job& job : scheduler_.jobs()) {
      if (!job.finished()) {
        EXPECT_TRUE(fresh.Restore(job, Seconds{now}).ok());
        if (scheduler_.held(job.id())) {
          EXPECT_TRUE(fresh.Hold(job.id()).ok());
        }
      }
    }
    return fresh.Schedule(Seconds{now}, copy);
  }

  static void ExpectSameDecisions(const Decisions& want, const Decisions& got) {
    auto sorted = [](std::vector<JobId> v) {
      std::sort(v.begin(), v.end());
      return v;
    };
    EXPECT_EQ(sorted(want.preempted), sorted(got.preempted));
    std::map<JobId, std::vector<GpuId>> a, b;
    for (const auto& s : want.started) a[s.job] = s.gpus;
    for (const auto& s : got.started) b[s.job] = s.gpus;
    EXPECT_EQ(a, b);
  }

  const Workload& workload_;
  Cluster cluster_;
  Scheduler scheduler_;
  std::string policy_, placement_;
  SchedulerOptions options_;
  bool check_snapshot_;
  std::map<JobId, double> finish_at_;
  std::map<JobId, double> release_at_;
  std::string last_;
  std::map<JobId, std::vector<RunInterval>> intervals_;
};

struct Case {
  std::string policy;
  std::string placement;
  double knob;
  QueueOrder order = QueueOrder::kStable;
  // Job control: a third of the jobs no-preempt, one in ten submitted held
  // and released 10 minutes later.
  bool jobctl = false;
  // One job in five --exclusive.
  bool exclusive = false;
};

class SchedulerPropertyTest : public ::testing::TestWithParam<Case> {};

TEST_P(SchedulerPropertyTest, ConservesWorkAndNeverDoubleBooks) {
  const Case& c = GetParam();
  for (uint64_t seed : {1, 2, 3}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    Workload w =
        RandomWorkload(seed, 300, c.jobctl ? 0.33 : 0, c.exclusive ? 0.2 : 0);
    SchedulerOptions options;
    options.queues = *QueueConfig::Create({600, 3000});
    options.promote_knob = c.knob;
    options.queue_order = c.order;
    options.seed = seed;
    // Snapshot equivalence needs the fresh scheduler to know all the state:
    // not Tiresias-G's learnt samples, not the random placer's stream.
    const bool check = c.policy != "tiresias-g" && c.placement != "random";
    Driver driver(w, c.policy, c.placement, options, check);
    if (c.jobctl) {
      for (const JobSpec& job : w.jobs) {
        if (job.id % 10 == 3) {
          driver.HoldUntil(job.id, job.submit_time.count() + 600);
        }
      }
    }
    driver.Run();
    if (HasFatalFailure()) return;
    driver.CheckFinal();
  }
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const std::string& p : PolicyNames()) {
    cases.push_back({p, "consolidate", INFINITY});
  }
  for (const std::string& s : PlacerNames()) {
    if (s != "consolidate") cases.push_back({"tiresias-l", s, INFINITY});
  }
  cases.push_back({"tiresias-l", "consolidate", 2.0});
  cases.push_back({"tiresias-g", "profiled", 2.0});
  for (const char* policy : {"tiresias-l", "tiresias-g"}) {
    cases.push_back({policy, "consolidate", INFINITY, QueueOrder::kStartTime});
  }
  cases.push_back(
      {"tiresias-l", "consolidate", 2.0, QueueOrder::kStartTime});
  for (const char* policy :
       {"tiresias-l", "tiresias-g", "las", "srtf", "smallest-first", "fifo"}) {
    cases.push_back({policy, "consolidate", 2.0, QueueOrder::kStable, true});
  }
  cases.push_back({"tiresias-l", "pack", INFINITY, QueueOrder::kStartTime,
                   true});
  for (const char* policy : {"tiresias-l", "tiresias-g", "yarn-cs", "srtf"}) {
    cases.push_back(
        {policy, "consolidate", 2.0, QueueOrder::kStable, false, true});
  }
  cases.push_back(
      {"tiresias-l", "pack", INFINITY, QueueOrder::kStartTime, true, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(AllPoliciesAndSchemes, SchedulerPropertyTest,
                         ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name =
                               info.param.policy + "_" + info.param.placement +
                               (std::isinf(info.param.knob) ? "" : "_knob") +
                               (info.param.order == QueueOrder::kStable
                                    ? ""
                                    : "_start_time") +
                               (info.param.jobctl ? "_jobctl" : "") +
                               (info.param.exclusive ? "_exclusive" : "");
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tiresias

// The preemptive walk's shortcuts change no decision. The walk sets
// running jobs aside by counts (core/free_counts.h) where the placer's
// rule allows, passes over waiting jobs it knows cannot be placed from
// their GPU count (walk_left.h), and answers "could it fit?" from the
// total where per-server counts add nothing; it keeps the running jobs
// ahead of a waiting job only when it may place that job. A placer that
// hides its rule (FitRule::kOther, several schemes) turns all but the last
// off, and Scheduler::KeepEagerlyForTesting the last; every pass of a
// scheduler with the real placer must decide exactly what the same pass
// with neither decides: the same jobs preempted, the same jobs started on
// the same GPUs, in the same order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "place/placement.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace tiresias {
namespace {

class HiddenRule final : public Placer {
 public:
  explicit HiddenRule(std::unique_ptr<Placer> inner)
      : inner_(std::move(inner)) {}
  std::string_view name() const override { return inner_->name(); }
  bool Place(const Cluster& cluster, const Job& job, Rng& rng,
             std::vector<GpuId>* gpus) const override {
    return inner_->Place(cluster, job, rng, gpus);
  }
  std::string_view SchemeFor(const Job& job) const override {
    return inner_->SchemeFor(job);
  }
  bool single_scheme() const override { return false; }
  bool MightFit(const Topology& topology, const std::vector<int>& avail,
                int total, const Job& job) const override {
    return inner_->MightFit(topology, avail, total, job);
  }
  // FitRuleFor: the default, kOther.

 private:
  std::unique_ptr<Placer> inner_;
};

struct Case {
  std::string policy;
  std::string placement;
  bool exclusive = false;  // one job in eight --exclusive
  // Two VCs (quotas of 8 and 4+2 GPUs, borrowing the rest): the VCs'
  // walks on their cells, then the borrowers' walk on the cluster.
  bool vcs = false;
};

std::vector<JobSpec> RandomJobs(uint64_t seed, int count, bool exclusive,
                                bool vcs) {
  std::mt19937_64 gen(seed);
  std::exponential_distribution<double> gap(1.0 / 40);
  std::lognormal_distribution<double> duration(5, 1.5);
  std::discrete_distribution<int> gpus_index({55, 15, 12, 10, 5, 3});
  const int kGpus[] = {1, 2, 4, 8, 12, 3};
  const char* kModels[] = {"", "vgg16", "resnet50"};
  std::bernoulli_distribution no_preempt(0.15), exclusive_job(0.125);
  std::vector<JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < count; ++i) {
    t += gap(gen);
    JobSpec spec{i, kGpus[gpus_index(gen)], Seconds{t}, Seconds{duration(gen)},
                 kModels[gen() % 3]};
    spec.no_preempt = no_preempt(gen);
    spec.exclusive = exclusive && exclusive_job(gen);
    if (spec.num_gpus == 4 && gen() % 4 == 0) {
      // Shaped, two servers of 2 (core/shape.h): placed by a rule of its
      // own, which turns the walk's count shortcuts off while it waits.
      spec.nodes = 2;
      spec.gpus_per_node = 2;
    }
    if (vcs) {
      spec.vc = gen() % 2 ? "a" : "b";
      // A no-preempt job runs only on its VC's quota: one larger would
      // never run.
      spec.no_preempt = false;
    }
    jobs.push_back(spec);
  }
  return jobs;
}

class WalkCountsTest : public ::testing::TestWithParam<Case> {};

TEST_P(WalkCountsTest, DecidesWhatTheWalkWithoutShortcutsDecides) {
  const Case& c = GetParam();
  // Mixed servers in two racks: 24 GPUs, so that the walk displaces.
  const Topology topo = *Topology::Create(
      {{0, 8, ""}, {0, 4, ""}, {0, 2, ""}, {1, 8, ""}, {1, 2, ""}});
  for (uint64_t seed : {1, 2, 3, 4}) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const std::vector<JobSpec> jobs = RandomJobs(seed, 400, c.exclusive, c.vcs);
    SchedulerOptions options;
    options.queues = *QueueConfig::Create({600, 3000});
    options.promote_knob = 4;
    options.seed = seed;
    auto make = [&](bool hidden) {
      std::unique_ptr<Placer> placer = *MakePlacer(c.placement);
      if (hidden) placer = std::make_unique<HiddenRule>(std::move(placer));
      return Scheduler(
          *MakePolicy(c.policy, PolicyOptions{.queues = options.queues}),
          std::move(placer), options);
    };
    Scheduler fast = make(false), plain = make(true);
    plain.KeepEagerlyForTesting();
    if (c.vcs) {
      for (Scheduler* s : {&fast, &plain}) {
        ASSERT_TRUE(s->SetVcs({VcSpec{"a", *ParseCells("8")},
                               VcSpec{"b", *ParseCells("4,2")}},
                              topo)
                        .ok());
      }
    }
    Cluster fast_cluster(topo), plain_cluster(topo);
    std::map<JobId, double> finish_at;
    size_t next = 0;
    double now = 0;
    int passes = 0, preemptions = 0;
    bool cordoned = false;
    while (true) {
      double t = std::numeric_limits<double>::infinity();
      if (next < jobs.size()) t = jobs[next].submit_time.count();
      for (const auto& [id, end] : finish_at) t = std::min(t, end);
      t = std::min(t, fast.NextWakeup().count());
      if (std::isinf(t)) break;
      now = t;
      while (next < jobs.size() && jobs[next].submit_time.count() <= now) {
        ASSERT_TRUE(fast.Submit(jobs[next], Seconds{now}).ok());
        ASSERT_TRUE(plain.Submit(jobs[next++], Seconds{now}).ok());
      }
      // A drained server for a while: its idle GPUs count for nothing.
      if (!cordoned && next == jobs.size() / 3) {
        fast_cluster.SetCordoned(2, true);
        plain_cluster.SetCordoned(2, true);
        cordoned = true;
      } else if (cordoned && next == 2 * jobs.size() / 3) {
        fast_cluster.SetCordoned(2, false);
        plain_cluster.SetCordoned(2, false);
      }
      std::vector<JobId> done;
      for (const auto& [id, end] : finish_at) {
        if (end <= now) done.push_back(id);
      }
      for (JobId id : done) {
        ASSERT_TRUE(fast.Finish(id, Seconds{now}, fast_cluster).ok());
        ASSERT_TRUE(plain.Finish(id, Seconds{now}, plain_cluster).ok());
        finish_at.erase(id);
      }
      const Decisions a = fast.Schedule(Seconds{now}, fast_cluster);
      const Decisions b = plain.Schedule(Seconds{now}, plain_cluster);
      ++passes;
      ASSERT_EQ(a.preempted, b.preempted) << "at " << now;
      ASSERT_EQ(a.started.size(), b.started.size()) << "at " << now;
      for (size_t i = 0; i < a.started.size(); ++i) {
        ASSERT_EQ(a.started[i].job, b.started[i].job) << "at " << now;
        ASSERT_EQ(a.started[i].gpus, b.started[i].gpus) << "at " << now;
      }
      preemptions += static_cast<int>(a.preempted.size());
      for (JobId id : a.preempted) finish_at.erase(id);
      for (const StartDecision& s : a.started) {
        const Job& job = *fast.Find(s.job);
        finish_at[s.job] =
            now + std::max(0.0, job.spec().duration->count() -
                                    job.TotalExecuted(Seconds{now}).count());
      }
    }
    for (const Job& job : fast.jobs()) {
      ASSERT_TRUE(job.finished()) << "job " << job.id();
    }
    // The shortcuts had work to do.
    if (fast.policy().traits().preemptive) {
      EXPECT_GT(preemptions, 0);
    }
    EXPECT_GT(passes, 400);
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* policy :
       {"las", "srsf", "srtf", "smallest-first", "tiresias-l", "tiresias-g"}) {
    cases.push_back({policy, "consolidate"});
  }
  for (const char* placement : {"pack", "spread", "count", "profiled"}) {
    cases.push_back({"las", placement});
    cases.push_back({"tiresias-l", placement});
  }
  cases.push_back({"las", "consolidate", true});
  cases.push_back({"tiresias-l", "profiled", true});
  cases.push_back({"las", "consolidate", false, true});
  cases.push_back({"tiresias-l", "consolidate", false, true});
  cases.push_back({"srsf", "pack", false, true});
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Policies, WalkCountsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name =
                               info.param.policy + "_" + info.param.placement +
                               (info.param.exclusive ? "_exclusive" : "") +
                               (info.param.vcs ? "_vcs" : "");
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tiresias

// The event-driven Gandiva engine against a literal port of the original
// simulator's gandiva code (run_sim.py gandiva_sim_jobs, cluster.py
// gandiva_placement / gandiva_node_set_adjust / _expand / _shrink /
// time_slicing_execute): every 10 s step, every list operation as the
// Python does it, on clusters of equal servers. The engine skips steps and
// deals jobs in closed form; on random traces both must end every job at
// the same time, after the same number of suspensions. (The port itself was
// checked against the Python on the hand-computed traces of gandiva_test.cc and
// on Philly cuts.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "sim/engine.h"

namespace tiresias {
namespace {

class OriginalGandiva {
 public:
  struct Job {
    int gpus;
    int64_t submit, duration;
    int64_t executed = 0;
    int64_t end = -1;
  };

  OriginalGandiva(int nodes, int gpus_per_node, std::vector<Job> jobs)
      : gpn_(gpus_per_node),
        total_gpus_(nodes * gpus_per_node),
        free_nodes_(nodes),
        jobs_(std::move(jobs)) {
    for (int g : {16, 1, 2, 4, 24, 32, 8, 64, 12}) node_g_.push_back({g, {}});
  }

  std::vector<int64_t> Run() {
    int64_t cur = jobs_.front().submit, diff = 0;
    size_t next = 0;
    while (next < jobs_.size() || !pending_.empty() || running_ > 0) {
      Adjust();
      const bool release = Execute(cur, diff);
      while (next < jobs_.size() && jobs_[next].submit == cur) {
        const int j = static_cast<int>(next++);
        if (Place(j)) {
          ++running_;
        } else {
          pending_.push_back(j);
        }
      }
      if (release) {
        // for p_job in pending: ... pending.remove(p_job)
        for (size_t i = 0; i < pending_.size(); ++i) {
          if (!Place(pending_[i])) continue;
          ++running_;
          pending_.erase(pending_.begin() + static_cast<ptrdiff_t>(i));
        }
      }
      if (next >= jobs_.size()) {
        cur += 10;
        diff = 10;
      } else if (cur + 10 > jobs_[next].submit) {
        diff = jobs_[next].submit - cur;
        cur = jobs_[next].submit;
      } else {
        cur += 10;
        diff = 10;
      }
    }
    std::vector<int64_t> ends;
    for (const Job& j : jobs_) ends.push_back(j.end);
    return ends;
  }

  // Suspensions as the engine counts them: a job that ran in one step (was
  // credited time) and not in the next, unfinished.
  int64_t suspensions() const { return suspensions_; }

 private:
  struct NodeSet {
    int num_nodes, capacity;
    int64_t util;
    std::vector<int> jobs;
  };
  using List = std::vector<int>;  // node set ids

  List& ListOf(int gpus) {
    for (auto& [g, list] : node_g_) {
      if (g == gpus) return list;
    }
    ADD_FAILURE() << gpus << " GPUs";
    return node_g_[0].second;
  }
  void Sort(List* list) {
    std::stable_sort(list->begin(), list->end(), [this](int a, int b) {
      return sets_[a].util < sets_[b].util;
    });
  }
  int NumNodes(int gpus) const { return (gpus + gpn_ - 1) / gpn_; }
  int NewSet(int gpus, int64_t util) {
    const int n = NumNodes(gpus);
    sets_.push_back(NodeSet{n, n * gpn_ / gpus, util, {}});
    free_nodes_ -= n;
    return static_cast<int>(sets_.size()) - 1;
  }

  bool Place(int j) {
    const int g = jobs_[j].gpus;
    List& list = ListOf(g);
    if (!list.empty()) {
      const int ns = list.front();
      list.erase(list.begin());
      if (sets_[ns].util + 1 < sets_[ns].capacity) {
        sets_[ns].util += 1;
        sets_[ns].jobs.push_back(j);
        list.push_back(ns);
        Sort(&list);
        return true;
      }
      list.push_back(ns);
    }
    if (NumNodes(g) <= free_nodes_) {
      const int ns = NewSet(g, 1);
      sets_[ns].jobs.push_back(j);
      list.push_back(ns);
      Sort(&list);
      return true;
    }
    if (!list.empty()) {
      const int ns = list.front();
      list.erase(list.begin());
      sets_[ns].util += 1;
      sets_[ns].jobs.push_back(j);
      list.push_back(ns);
      Sort(&list);
      return true;
    }
    return false;
  }

  void Deal(const std::vector<int>& job_list, List* list) {
    for (int j : job_list) {
      NodeSet& ns = sets_[list->front()];
      ns.util += 1;
      ns.jobs.push_back(j);
      Sort(list);
    }
  }

  void Shrink(List* list, int64_t num_ns) {
    if (static_cast<int64_t>(list->size()) <= num_ns) {
      num_ns = static_cast<int64_t>(list->size()) - 1;
    }
    std::vector<int> job_list;
    int64_t i = 0;
    for (int64_t k = 1; k <= num_ns; ++k) {
      i = k;
      const int ns = list->front();
      list->erase(list->begin());
      job_list.insert(job_list.end(), sets_[ns].jobs.begin(),
                      sets_[ns].jobs.end());
      free_nodes_ += sets_[ns].num_nodes;
    }
    if (i > 0) Deal(job_list, list);
  }

  void Expand(int g, List* list, int64_t num_ns) {
    const int num_node = NumNodes(g);
    int64_t i = 0;
    for (int64_t k = 1; k <= num_ns; ++k) {
      i = k;
      if (num_node <= free_nodes_) {
        list->push_back(NewSet(g, 0));
        i = num_node - 1;  // the inner `for i in range(num_node)`
      }
    }
    if (i > 0) {
      std::vector<int> job_list;
      for (int ns : *list) {
        if (sets_[ns].jobs.empty()) continue;
        job_list.insert(job_list.end(), sets_[ns].jobs.begin(),
                        sets_[ns].jobs.end());
        sets_[ns].jobs.clear();
        sets_[ns].util = 0;
      }
      Deal(job_list, list);
    }
  }

  void Adjust() {
    int64_t total = 0;
    std::map<int, int64_t> demand, occupied;
    for (auto& [g, list] : node_g_) {
      int64_t jobs = 0, occ = 0;
      for (int ns : list) {
        jobs += static_cast<int64_t>(sets_[ns].jobs.size());
        occ += sets_[ns].num_nodes * gpn_;
      }
      demand[g] = jobs * g;
      occupied[g] = occ;
      total += jobs * g;
    }
    if (total == 0) return;
    for (auto& [g, list] : node_g_) {
      if (demand[g] == 0) continue;
      const int64_t plan = static_cast<int64_t>(
          std::floor(static_cast<double>(demand[g]) /
                     static_cast<double>(total) * total_gpus_));
      const int64_t target = plan < demand[g] ? plan : demand[g];
      const int64_t diff = target - occupied[g];
      if (diff > 0) {
        Expand(g, &list, (diff + g - 1) / g);
      } else if (diff < 0) {
        Shrink(&list, (-diff + g - 1) / g);
      }
    }
  }

  bool Execute(int64_t cur, int64_t diff) {
    bool release = false;
    std::vector<int> credited, ended;
    const bool switch_job = cur % 60 == 0;
    for (auto& [g, list] : node_g_) {
      List released;
      for (int id : list) {
        NodeSet& ns = sets_[id];
        int concurrency = 0;
        int64_t total_util = 0;
        for (size_t k = 0; k < ns.jobs.size(); ++k) {
          total_util += 1;
          if (total_util > ns.capacity) break;
          ++concurrency;
        }
        std::vector<int> end_list;
        int i = 0;
        for (int j : ns.jobs) {
          jobs_[j].executed += diff;
          credited.push_back(j);
          if (jobs_[j].executed >= jobs_[j].duration) end_list.push_back(j);
          if (++i >= concurrency) break;
        }
        if (switch_job && static_cast<int>(ns.jobs.size()) > concurrency) {
          std::rotate(ns.jobs.begin(), ns.jobs.begin() + concurrency,
                      ns.jobs.end());
        }
        for (int j : end_list) {
          ns.jobs.erase(std::find(ns.jobs.begin(), ns.jobs.end(), j));
          jobs_[j].end = cur;
          ended.push_back(j);
          --running_;
        }
        if (ns.jobs.empty()) {
          free_nodes_ += ns.num_nodes;
          released.push_back(id);
          release = true;
        }
      }
      for (int id : released) {
        list.erase(std::find(list.begin(), list.end(), id));
      }
    }
    if (diff > 0) {
      std::sort(credited.begin(), credited.end());
      for (int j : ran_) {
        if (!std::binary_search(credited.begin(), credited.end(), j)) {
          ++suspensions_;
        }
      }
      std::sort(ended.begin(), ended.end());
      ran_.clear();
      for (int j : credited) {
        if (!std::binary_search(ended.begin(), ended.end(), j)) {
          ran_.push_back(j);
        }
      }
    }
    return release;
  }

  const int gpn_, total_gpus_;
  int free_nodes_;
  std::vector<Job> jobs_;
  std::vector<NodeSet> sets_;
  std::vector<std::pair<int, List>> node_g_;
  std::vector<int> pending_;
  std::vector<int> ran_;  // credited in the last step, unfinished
  int64_t running_ = 0;
  int64_t suspensions_ = 0;
};

struct Case {
  int nodes, gpus_per_node;
  std::vector<OriginalGandiva::Job> jobs;
};

Case RandomCase(std::mt19937_64& gen) {
  static const int kSizes[] = {1, 1, 1, 1, 1, 2, 2, 4, 4, 8, 12, 16, 24, 32};
  Case c;
  c.nodes = 1 + static_cast<int>(gen() % 8);
  c.gpus_per_node = std::vector<int>{1, 2, 4, 8}[gen() % 4];
  const int total = c.nodes * c.gpus_per_node;
  const int n = 3 + static_cast<int>(gen() % 80);
  // Bursts (to oversubscribe) and gaps; some arrivals on multiples of 10 so
  // that slices switch.
  int64_t t = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t r = gen() % 10;
    t += r < 5   ? 0
         : r < 8 ? static_cast<int64_t>(gen() % 300)
                 : static_cast<int64_t>(gen() % 30) * 10;
    int gpus = kSizes[gen() % 14];
    while (gpus > total) gpus = kSizes[gen() % 5];
    if (gpus > total) gpus = 1;
    const int64_t duration = gen() % 4 == 0
                                 ? static_cast<int64_t>(gen() % 20000)
                                 : static_cast<int64_t>(gen() % 900);
    c.jobs.push_back({gpus, t, duration});
  }
  return c;
}

void ExpectSameEnds(const Case& c, int trial) {
  OriginalGandiva original(c.nodes, c.gpus_per_node, c.jobs);
  const std::vector<int64_t> expected = original.Run();
  std::vector<JobSpec> specs;
  for (size_t i = 0; i < c.jobs.size(); ++i) {
    specs.push_back(JobSpec{static_cast<JobId>(i), c.jobs[i].gpus,
                            Seconds(static_cast<double>(c.jobs[i].submit)),
                            Seconds(static_cast<double>(c.jobs[i].duration)),
                            "resnet50"});
  }
  SimConfig config;
  config.policy = "gandiva";
  config.placement_slowdown = false;
  absl::StatusOr<SimResult> r =
      Simulate(specs, Topology::Uniform(1, c.nodes, c.gpus_per_node), config);
  ASSERT_TRUE(r.ok()) << r.status();
  int mismatches = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (r->jobs[i].end != static_cast<double>(expected[i]) &&
        ++mismatches < 4) {
      ADD_FAILURE() << "trial " << trial << " (" << c.nodes << "x"
                    << c.gpus_per_node << ", " << specs.size() << " jobs): job "
                    << i << " ends at " << r->jobs[i].end
                    << ", the original at " << expected[i];
    }
  }
  EXPECT_EQ(r->preemptions, original.suspensions()) << "trial " << trial;
}

TEST(GandivaReferenceTest, SameEndTimesAsALiteralPortOfTheOriginal) {
  std::mt19937_64 gen(2019);
  for (int trial = 0; trial < 400; ++trial) {
    ExpectSameEnds(RandomCase(gen), trial);
  }
}

// A heavily oversubscribed cluster: many more jobs than GPUs, so every
// class is time-sliced, grown, shrunk and re-dealt at almost every step.
TEST(GandivaReferenceTest, SameEndTimesUnderOverload) {
  std::mt19937_64 gen(404);
  for (int trial = 0; trial < 40; ++trial) {
    Case c = RandomCase(gen);
    for (auto& job : c.jobs) job.submit /= 20;
    std::stable_sort(
        c.jobs.begin(), c.jobs.end(),
        [](const auto& a, const auto& b) { return a.submit < b.submit; });
    ExpectSameEnds(c, trial);
  }
}

}  // namespace
}  // namespace tiresias

// Micro-benchmarks of the scheduling core (src/sched/scheduler.h), without
// the simulator around it.
//
//   BM_Pass/<policy>: one event and the pass after it on a big, busy
//     cluster (1,000 servers x 8 GPUs, 10,000 jobs pending): submit a job,
//     finish a random running one, Schedule. The cost a master pays per event.
//     For tiresias-l and yarn-cs, and srsf as an example of a policy whose
//     running jobs' keys drift. The state drifts a little during a run
//     (yarn-cs blocks behind a job that does not fit while jobs finish); the
//     *_end counters say where it ended.
//   BM_PassMixed/<mix>: BM_Pass for tiresias-l on the same cluster with
//     half its servers "NVIDIA A100" and half "NVIDIA H200", where 10% of
//     the jobs ask for `--gpu-type a100` (mix "filtered") or `--exclusive`
//     (mix "exclusive"): such jobs place on a copy of the cluster with the
//     refused servers cordoned (core/shape.cc), the cost to watch at 1,000
//     servers. Compare with BM_Pass/tiresias-l of the same run. Mix
//     "cpu_only": every tenth job is CPU-only (1 to 4 CPUs; each server
//     keeps 8 spare), waiting in their own queue for spare CPUs.
//   BM_PassVcs/<flat|15vcs>: BM_Pass for tiresias-l on 40 x 8 GPUs (40
//     agents) with 5,000 jobs pending, without virtual clusters or with 15
//     whose quotas are the Philly tenants' shares of the trace's GPU time
//     (26% down to four with none), each job in a VC drawn by those shares.
//   BM_ChangeVcs/15vcs: the same 15 VCs set again on that cluster
//     (Scheduler::ChangeVcs: what the master does at every node change).
//   BM_SubmitSchedule/<policy>/<pending>: Submit one job and Schedule with
//     1k, 10k, 100k jobs pending on a full 64x8 cluster, then Remove the job
//     again so that the pending count stays put. Should grow ~log n in the
//     pending count, not n (see the Complexity lines).
//
// Job sizes are drawn from the Philly trace's GPU counts (data/philly.csv),
// models alternate between a consolidated (vgg16) and a spread (resnet50) one
// so that `profiled` placement takes both paths. Simulated time advances by
// 1 us per iteration, so no job crosses a queue bound during a run and the
// state stays close to the one set up.
//
// Not a test: registered with no ctest. Run from the build folder:
//   bench/scheduler_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
// and read the `_min` rows.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/cluster.h"
#include "core/node_filter.h"
#include "core/topology.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "sched/scheduler.h"

namespace tiresias {
namespace {

void Check(const absl::Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "scheduler_bench: %s\n",
                 std::string(status.message()).c_str());
    std::abort();
  }
}

// GPU counts of data/philly.csv and how many jobs asked for each.
struct SizeWeight {
  int gpus;
  double jobs;
};
constexpr SizeWeight kPhillySizes[] = {
    {1, 76627}, {2, 1818}, {4, 1870}, {8, 1643}, {12, 7}, {16, 199},
    {24, 7},    {32, 67},  {64, 6},   {128, 3},
};

// A scheduler, its cluster and the bookkeeping a host keeps (which jobs run),
// driven with synthetic jobs.
// Which jobs carry what (BM_PassMixed): every tenth job.
enum class Mix { kPlain, kFiltered, kExclusive, kCpuOnly };

// Half the servers A100s, half H200s, one rack.
Topology TwoModels(int servers, int gpus_per_server) {
  std::vector<ServerSpec> specs;
  for (int i = 0; i < servers; ++i) {
    specs.push_back({.rack = 0,
                     .num_gpus = gpus_per_server,
                     .gpu_model = i % 2 == 0 ? "NVIDIA A100" : "NVIDIA H200",
                     .spare_cpus = 8,
                     .spare_memory_mib = 8 << 10});
  }
  absl::StatusOr<Topology> topology = Topology::Create(std::move(specs));
  Check(topology.status());
  return *std::move(topology);
}

class TestBed {
 public:
  TestBed(const std::string& policy_name, int servers, int gpus_per_server,
          Mix mix = Mix::kPlain, std::vector<VcSpec> vcs = {},
          std::vector<double> vc_shares = {})
      : cluster_(TwoModels(servers, gpus_per_server)), mix_(mix), gen_(42) {
    absl::StatusOr<std::unique_ptr<Policy>> policy =
        MakePolicy(policy_name, {});
    Check(policy.status());
    absl::StatusOr<std::unique_ptr<Placer>> placer =
        MakePlacer((*policy)->traits().default_placement);
    Check(placer.status());
    std::vector<double> weights;
    for (const SizeWeight& s : kPhillySizes) {
      if (s.gpus <= cluster_.total_gpus()) weights.push_back(s.jobs);
    }
    size_dist_ = std::discrete_distribution<int>(weights.begin(),
                                                 weights.end());
    scheduler_ = std::make_unique<Scheduler>(
        std::move(*policy), std::move(*placer), SchedulerOptions{});
    for (const VcSpec& vc : vcs) vc_names_.push_back(vc.name);
    if (!vcs.empty()) {
      vc_dist_ =
          std::discrete_distribution<int>(vc_shares.begin(), vc_shares.end());
    }
    Check(scheduler_->SetVcs(std::move(vcs), cluster_.topology()));
  }

  Scheduler& scheduler() { return *scheduler_; }
  Cluster& cluster() { return cluster_; }
  double now() const { return now_; }
  void Advance() { now_ += 1e-6; }
  int64_t started() const { return started_; }
  int64_t preempted() const { return preempted_; }

  // Submits a new job at now(); returns its id.
  JobId SubmitOne() {
    JobSpec spec;
    spec.id = next_id_++;
    spec.num_gpus = kPhillySizes[size_dist_(gen_)].gpus;
    spec.submit_time = Seconds{now_};
    // Long enough that no oracle policy sees a job run out.
    spec.duration = Seconds{1e6 + static_cast<double>(gen_() % 100000)};
    spec.model = spec.id % 2 == 0 ? "vgg16" : "resnet50";
    if (!vc_names_.empty()) spec.vc = vc_names_[vc_dist_(gen_)];
    if (spec.id % 10 == 0 && mix_ == Mix::kFiltered) {
      static const auto* const kA100 = new std::shared_ptr<const NodeFilter>(
          std::make_shared<NodeFilter>(NodeFilter{.gpu_type = "a100"}));
      spec.filter = *kA100;
    }
    if (spec.id % 10 == 0 && mix_ == Mix::kExclusive) spec.exclusive = true;
    if (spec.id % 10 == 0 && mix_ == Mix::kCpuOnly) {
      spec.num_gpus = 0;
      spec.cpus = 1 + static_cast<int>(gen_() % 4);
    }
    Check(scheduler_->Submit(std::move(spec), Seconds{now_}));
    return next_id_ - 1;
  }

  // Finishes a running job chosen uniformly at random; false if none runs.
  bool FinishRandomRunning() {
    if (running_.empty()) return false;
    const size_t at = gen_() % running_.size();
    const JobId id = running_[at];
    Forget(id);
    Check(scheduler_->Finish(id, Seconds{now_}, cluster_));
    return true;
  }

  // Removes an unfinished job (waiting or running) at now().
  void Remove(JobId id) {
    if (position_.contains(id)) Forget(id);
    Check(scheduler_->Remove(id, Seconds{now_}, cluster_));
  }

  // One pass at now(); keeps track of which jobs run.
  void Schedule() {
    const Decisions decisions = scheduler_->Schedule(Seconds{now_}, cluster_);
    for (JobId id : decisions.preempted) Forget(id);
    for (const StartDecision& start : decisions.started) {
      position_[start.job] = running_.size();
      running_.push_back(start.job);
    }
    started_ += static_cast<int64_t>(decisions.started.size());
    preempted_ += static_cast<int64_t>(decisions.preempted.size());
  }

  // Submits and schedules until, after a pass, `pending` jobs wait and the
  // cluster takes no more.
  void FillTo(int pending) {
    while (true) {
      while (scheduler_->num_waiting() < pending) SubmitOne();
      const int before = scheduler_->num_running();
      Schedule();
      if (scheduler_->num_waiting() >= pending &&
          scheduler_->num_running() == before) {
        return;
      }
    }
  }

 private:
  void Forget(JobId id) {
    auto it = position_.find(id);
    const size_t at = it->second;
    position_.erase(it);
    running_[at] = running_.back();
    running_.pop_back();
    if (at < running_.size()) position_[running_[at]] = at;
  }

  Cluster cluster_;
  Mix mix_;
  std::unique_ptr<Scheduler> scheduler_;
  std::mt19937_64 gen_;
  std::discrete_distribution<int> size_dist_;
  std::vector<std::string> vc_names_;
  std::discrete_distribution<int> vc_dist_;
  JobId next_id_ = 0;
  double now_ = 0;
  std::vector<JobId> running_;
  absl::flat_hash_map<JobId, size_t> position_;
  int64_t started_ = 0, preempted_ = 0;
};

// Where the timed loop left the scheduler, and how many jobs it started and
// preempted per iteration (`started_before` and `preempted_before`: the
// counts when the loop began).
void ReportState(benchmark::State& state, TestBed& bed, int64_t started_before,
                 int64_t preempted_before) {
  const Scheduler& s = bed.scheduler();
  state.counters["pending_end"] = s.num_waiting();
  state.counters["running_end"] = s.num_running();
  state.counters["free_gpus_end"] = bed.cluster().free_gpus();
  state.counters["starts/iter"] = benchmark::Counter(
      static_cast<double>(bed.started() - started_before),
      benchmark::Counter::kAvgIterations);
  state.counters["preempts/iter"] = benchmark::Counter(
      static_cast<double>(bed.preempted() - preempted_before),
      benchmark::Counter::kAvgIterations);
}

// One event and its pass on 1,000 x 8 GPUs with 10,000 jobs pending.
// The timed loop of BM_Pass and BM_PassVcs: per iteration one event (a
// submission and a finish) and its pass.
void TimeEvents(benchmark::State& state, TestBed& bed) {
  const int64_t started_before = bed.started();
  const int64_t preempted_before = bed.preempted();
  state.counters["pending_start"] = bed.scheduler().num_waiting();
  state.counters["running_start"] = bed.scheduler().num_running();
  for (auto _ : state) {
    bed.Advance();
    bed.SubmitOne();
    bed.FinishRandomRunning();
    bed.Schedule();
  }
  ReportState(state, bed, started_before, preempted_before);
}

void BM_Pass(benchmark::State& state, const std::string& policy,
             Mix mix = Mix::kPlain) {
  TestBed bed(policy, 1000, 8, mix);
  bed.FillTo(10000);
  TimeEvents(state, bed);
}

// Philly's 15 tenants' shares of the trace's GPU time (simulate --vcs
// from-trace), and their quotas on 40 x 8 GPUs as its cells would be.
constexpr double kPhillyShares[] = {26.2, 16.9, 12.9, 9.9,  8.4,
                                    8.3,  7.9,  4.4,  2.9,  1.4,
                                    0.9,  0.01, 0.01, 0.01, 0.01};
std::vector<VcSpec> PhillyVcs(int gpus) {
  std::vector<VcSpec> vcs;
  int left = gpus;
  for (size_t i = 0; i < std::size(kPhillyShares); ++i) {
    int quota =
        std::min(left, static_cast<int>(gpus * kPhillyShares[i] / 100 + 0.5));
    if (i + 1 == std::size(kPhillyShares) - 4) quota = left;  // the rest
    left -= quota;
    VcSpec vc;
    vc.name = "vc" + std::to_string(i);
    for (int size = 8; size >= 1; size /= 2) {
      while (quota >= size) {
        vc.cells.push_back(size);
        quota -= size;
      }
    }
    vcs.push_back(std::move(vc));
  }
  return vcs;
}

// One event and its pass on 40 x 8 GPUs with 5,000 jobs pending, without
// VCs or with Philly's 15.
void BM_PassVcs(benchmark::State& state, bool vcs) {
  std::vector<double> shares(std::begin(kPhillyShares),
                             std::end(kPhillyShares));
  TestBed bed("tiresias-l", 40, 8, Mix::kPlain,
              vcs ? PhillyVcs(320) : std::vector<VcSpec>{}, shares);
  bed.FillTo(5000);
  TimeEvents(state, bed);
  if (vcs) {
    state.counters["reclaims"] = bed.scheduler().reclaims();
  }
}

// The same 15 VCs set again (what the master does at every node change
// and `admin vc set`: Scheduler::ChangeVcs, every unfinished job re-queued
// and every running one adopted where it runs) on BM_PassVcs/15vcs's
// cluster: 40 x 8 GPUs busy, 5,000 jobs waiting.
void BM_ChangeVcs(benchmark::State& state) {
  std::vector<double> shares(std::begin(kPhillyShares),
                             std::end(kPhillyShares));
  TestBed bed("tiresias-l", 40, 8, Mix::kPlain, PhillyVcs(320), shares);
  bed.FillTo(5000);
  state.counters["pending"] = bed.scheduler().num_waiting();
  state.counters["running"] = bed.scheduler().num_running();
  for (auto _ : state) {
    bed.Advance();
    Check(bed.scheduler().ChangeVcs(PhillyVcs(320), bed.cluster().topology(),
                                    Seconds{bed.now()}));
  }
  state.counters["bind_failures"] = bed.scheduler().bind_failures();
}

// Submit + Schedule (+ Remove, to hold the pending count) with state.range(0)
// jobs pending on a full 64 x 8 cluster.
void BM_SubmitSchedule(benchmark::State& state, const std::string& policy) {
  const int pending = static_cast<int>(state.range(0));
  TestBed bed(policy, 64, 8);
  bed.FillTo(pending);
  const int64_t started_before = bed.started();
  const int64_t preempted_before = bed.preempted();
  for (auto _ : state) {
    bed.Advance();
    const JobId id = bed.SubmitOne();
    bed.Schedule();
    bed.Remove(id);
  }
  state.SetComplexityN(pending);
  ReportState(state, bed, started_before, preempted_before);
}

// The least disturbed of the repetitions (--benchmark_repetitions): on a
// shared machine noise only ever adds time.
double Min(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}

void RegisterAll() {
  // srsf: a policy whose running jobs' keys drift, so every pass re-sorts
  // the running jobs.
  for (const char* policy : {"tiresias-l", "yarn-cs", "srsf"}) {
    benchmark::RegisterBenchmark(
        (std::string("BM_Pass/") + policy).c_str(),
        [policy](benchmark::State& state) { BM_Pass(state, policy); })
        ->ComputeStatistics("min", Min)
        ->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [name, mix] :
       {std::pair<const char*, Mix>{"filtered", Mix::kFiltered},
        {"exclusive", Mix::kExclusive},
        {"cpu_only", Mix::kCpuOnly}}) {
    benchmark::RegisterBenchmark(
        (std::string("BM_PassMixed/") + name).c_str(),
        [mix](benchmark::State& state) { BM_Pass(state, "tiresias-l", mix); })
        ->ComputeStatistics("min", Min)
        ->Unit(benchmark::kMicrosecond);
  }
  for (bool vcs : {false, true}) {
    benchmark::RegisterBenchmark(
        vcs ? "BM_PassVcs/15vcs" : "BM_PassVcs/flat",
        [vcs](benchmark::State& state) { BM_PassVcs(state, vcs); })
        ->ComputeStatistics("min", Min)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("BM_ChangeVcs/15vcs", BM_ChangeVcs)
      ->ComputeStatistics("min", Min)
      ->Unit(benchmark::kMicrosecond);
  for (const char* policy : {"tiresias-l", "yarn-cs"}) {
    benchmark::RegisterBenchmark(
        (std::string("BM_SubmitSchedule/") + policy).c_str(),
        [policy](benchmark::State& state) {
          BM_SubmitSchedule(state, policy);
        })
        ->Arg(1000)
        ->Arg(10000)
        ->Arg(100000)
        ->Complexity()
        ->ComputeStatistics("min", Min)
        ->Unit(benchmark::kNanosecond);
  }
}

}  // namespace
}  // namespace tiresias

int main(int argc, char** argv) {
  tiresias::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

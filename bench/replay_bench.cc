// End-to-end replay benchmark: how long one policy takes to replay a whole
// trace, single-threaded, the way `tiresias simulate` does it (parse the
// trace, drop jobs that cannot fit, draw models, simulate).
//
//   tiresias_replay_bench --trace data/philly.csv --cluster 64x8
//       --policy all --repeat 5
//
// Every step is repeated --repeat times and the minimum is reported: the
// machines we run on are shared, and the minimum is the least disturbed
// measurement. The counters (events, passes, preemptions) must be the same in
// every repeat (the simulator is deterministic); the bench fails if not.
// The mean JCT is printed to full precision so that a speed-up can be checked
// to leave the simulation's results unchanged.
//
// Output: one row per policy, then a CSV copy of the same rows on lines
// starting with "csv," for scripts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_split.h"
#include "sched/policy.h"
#include "sched/scheduler.h"
#include "sim/engine.h"
#include "trace/cluster_spec.h"
#include "trace/trace_reader.h"

namespace tiresias {
namespace {

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start)
      .count();
}

struct Flags {
  std::string trace = "data/philly.csv";
  std::string cluster = "64x8";
  std::string policies = "all";
  int repeat = 3;
  QueueOrder queue_order = QueueOrder::kStable;
};

// One policy's measurements; times in milliseconds, minimum over repeats.
struct Row {
  std::string policy;
  int64_t jobs = 0;
  int64_t events = 0;
  int64_t passes = 0;
  int64_t preemptions = 0;
  double mean_jct_seconds = 0;
  double parse_ms = 1e300;
  double prepare_ms = 1e300;  // ParseClusterSpec, RemoveUnfittable, models
  double simulate_ms = 1e300;
  std::vector<double> simulate_samples_ms;
  double total_ms = 1e300;  // one repeat's parse + prepare + simulate
  double median_simulate_ms() const {
    std::vector<double> s = simulate_samples_ms;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
};

[[noreturn]] void Fail(const std::string& message) {
  std::fprintf(stderr, "tiresias_replay_bench: %s\n", message.c_str());
  std::exit(2);
}

void Usage() {
  std::fprintf(stderr,
               "usage: tiresias_replay_bench [--trace FILE] [--cluster SPEC] "
               "[--policy all|NAME,...] [--repeat N] "
               "[--queue-order stable|start-time]\n"
               "defaults: --trace data/philly.csv --cluster 64x8 "
               "--policy all --repeat 3\n");
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      Usage();
      std::exit(0);
    }
    if (i + 1 >= argc) {
      Usage();
      Fail(std::string(arg) + ": expected a value after it");
    }
    const std::string value = argv[++i];
    if (arg == "--trace") {
      f.trace = value;
    } else if (arg == "--cluster") {
      f.cluster = value;
    } else if (arg == "--policy") {
      f.policies = value;
    } else if (arg == "--queue-order") {
      absl::StatusOr<QueueOrder> order = ParseQueueOrder(value);
      if (!order.ok()) Fail(std::string(order.status().message()));
      f.queue_order = *order;
    } else if (arg == "--repeat") {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (end == value.c_str() || *end != '\0' || n < 1 || n > 1000) {
        Fail("--repeat: expected an integer from 1 to 1000, got \"" + value +
             "\"");
      }
      f.repeat = static_cast<int>(n);
    } else {
      Usage();
      Fail("unknown flag " + std::string(arg));
    }
  }
  return f;
}

std::vector<std::string> PoliciesToRun(const std::string& list) {
  if (list == "all") return SimulatorPolicyNames();
  std::vector<std::string> names = absl::StrSplit(list, ',');
  for (const std::string& name : names) {
    absl::Status known = CheckSimulatorPolicy(name);
    if (!known.ok()) Fail(std::string(known.message()));
  }
  return names;
}

double MeanJctSeconds(const SimResult& result) {
  double sum = 0;
  for (const JobResult& job : result.jobs) sum += job.jct();
  return result.jobs.empty() ? 0 : sum / static_cast<double>(result.jobs.size());
}

// One repeat: parse, prepare and simulate, each timed, into `row`.
void MeasureOnce(const Flags& flags, const std::string& policy, Row* row,
                 bool first) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<std::vector<JobSpec>> jobs = ReadTrace(flags.trace);
  if (!jobs.ok()) Fail(std::string(jobs.status().message()));
  const double parse_ms = MillisecondsSince(start);

  const Clock::time_point prepare_start = Clock::now();
  absl::StatusOr<Topology> topology = ParseClusterSpec(flags.cluster);
  if (!topology.ok()) Fail(std::string(topology.status().message()));
  RemoveUnfittable(&*jobs, *topology);
  SimConfig config;
  config.policy = policy;
  config.scheduler.queue_order = flags.queue_order;
  config.record_timeseries = false;
  AssignModels(&*jobs, config.models, /*seed=*/1);
  const double prepare_ms = MillisecondsSince(prepare_start);

  const Clock::time_point simulate_start = Clock::now();
  absl::StatusOr<SimResult> result = Simulate(*jobs, *topology, config);
  const double simulate_ms = MillisecondsSince(simulate_start);
  if (!result.ok()) Fail(policy + ": " + std::string(result.status().message()));

  if (first) {
    row->jobs = static_cast<int64_t>(result->jobs.size());
    row->events = result->events;
    row->passes = result->passes;
    row->preemptions = result->preemptions;
    row->mean_jct_seconds = MeanJctSeconds(*result);
  } else if (row->events != result->events || row->passes != result->passes ||
             row->preemptions != result->preemptions ||
             row->mean_jct_seconds != MeanJctSeconds(*result)) {
    Fail(policy + ": counters or mean JCT differ between repeats; the "
                  "simulator is not deterministic");
  }
  row->parse_ms = std::min(row->parse_ms, parse_ms);
  row->prepare_ms = std::min(row->prepare_ms, prepare_ms);
  row->simulate_ms = std::min(row->simulate_ms, simulate_ms);
  row->simulate_samples_ms.push_back(simulate_ms);
  row->total_ms = std::min(row->total_ms, parse_ms + prepare_ms + simulate_ms);
}

void PrintHeader() {
  std::printf("%-15s %7s %8s %8s %8s %9s %11s %11s %10s %12s\n", "policy",
              "jobs", "events", "passes", "preempt", "parse ms", "sim ms min",
              "sim ms med", "total ms", "events/s");
}

void PrintRow(const Row& r) {
  const double events_per_second = r.events / (r.simulate_ms / 1000.0);
  std::printf("%-15s %7lld %8lld %8lld %8lld %9.1f %11.1f %11.1f %10.1f %12.0f\n",
              r.policy.c_str(), static_cast<long long>(r.jobs),
              static_cast<long long>(r.events),
              static_cast<long long>(r.passes),
              static_cast<long long>(r.preemptions), r.parse_ms,
              r.simulate_ms, r.median_simulate_ms(), r.total_ms,
              events_per_second);
  std::fflush(stdout);
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv);
  const std::vector<std::string> policies = PoliciesToRun(flags.policies);
  // Fail on bad inputs before printing a table header.
  absl::Status cluster_ok = ParseClusterSpec(flags.cluster).status();
  if (!cluster_ok.ok()) Fail(std::string(cluster_ok.message()));
  absl::Status trace_ok = ReadTrace(flags.trace).status();
  if (!trace_ok.ok()) Fail(std::string(trace_ok.message()));
  std::printf("trace %s, cluster %s, %d repeat(s), min over repeats\n",
              flags.trace.c_str(), flags.cluster.c_str(), flags.repeat);
  PrintHeader();
  std::vector<Row> rows;
  for (const std::string& policy : policies) {
    Row row;
    row.policy = policy;
    for (int i = 0; i < flags.repeat; ++i) {
      MeasureOnce(flags, policy, &row, i == 0);
    }
    PrintRow(row);
    rows.push_back(std::move(row));
  }
  std::printf(
      "csv,policy,jobs,events,passes,preemptions,parse_ms,prepare_ms,"
      "simulate_ms_min,simulate_ms_median,total_ms,mean_jct_seconds\n");
  for (const Row& r : rows) {
    std::printf("csv,%s,%lld,%lld,%lld,%lld,%.2f,%.2f,%.2f,%.2f,%.2f,%.17g\n",
                r.policy.c_str(), static_cast<long long>(r.jobs),
                static_cast<long long>(r.events),
                static_cast<long long>(r.passes),
                static_cast<long long>(r.preemptions), r.parse_ms,
                r.prepare_ms, r.simulate_ms, r.median_simulate_ms(),
                r.total_ms, r.mean_jct_seconds);
  }
  return 0;
}

}  // namespace
}  // namespace tiresias

int main(int argc, char** argv) { return tiresias::Main(argc, argv); }

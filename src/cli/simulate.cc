#include "cli/simulate.h"

#include <sys/stat.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/progress.h"
#include "cli/shell_help.h"
#include "cli/simulate_inputs.h"
#include "cli/simulate_vcs.h"
#include "cli/sweep.h"
#include "core/status_macros.h"
#include "report/files.h"
#include "report/html_format.h"
#include "report/html_report.h"
#include "report/summary_output.h"
#include "report/sweep_report.h"
#include "sim/engine.h"
#include "sim/metrics.h"
#include "sim/slowdown_file.h"
#include "trace/cluster_spec.h"
#include "trace/samples_reader.h"
#include "trace/trace_reader.h"

#ifndef TIRESIAS_VERSION
#define TIRESIAS_VERSION "dev"
#endif

namespace tiresias {
namespace {

using simulate::Flags;
using simulate::Inputs;
using simulate::LoadInputs;
using simulate::Parameters;

// The jobs and cluster of runs with one (cluster, seed, arrival scale):
// the trace's jobs that fit, with models drawn for those without one.
struct Prepared {
  Topology topology;
  std::vector<JobSpec> jobs;
  int64_t excluded = 0;  // jobs larger than the cluster
};

// One simulation of the grid: a policy under one combination of settings.
struct Run {
  GridPoint point;
  SimConfig config;
  const Prepared* prepared = nullptr;
  // A run with the same policy and the same value of every swept key that
  // matters to it (KeyMatters): not run, its result is that run's.
  int same_as = -1;
  std::set<std::string> ignored_keys;  // swept keys that do not matter

  absl::StatusOr<SimResult> result = absl::UnknownError("not run");
  std::atomic<double> fraction{0};
};

// The trace's jobs on one cluster with one seed and arrival scale.
absl::StatusOr<std::unique_ptr<Prepared>> Prepare(const Inputs& in,
                                                  const RunInputs& r) {
  ASSIGN_OR_RETURN(Topology topology, ParseClusterSpec(r.cluster));
  auto p = std::make_unique<Prepared>(Prepared{std::move(topology), in.jobs});
  p->excluded = static_cast<int64_t>(
      RemoveUnfittable(&p->jobs, p->topology).size());
  AssignModels(&p->jobs, in.base.models, r.seed);
  RETURN_IF_ERROR(ScaleArrivals(&p->jobs, r.arrival_scale));
  return p;
}

// Runs every run on `threads` threads, with a progress line on a terminal.
void RunAll(std::vector<std::unique_ptr<Run>>& runs, int threads) {
  std::atomic<size_t> next{0};
  std::atomic<int> done{0};
  auto started = std::chrono::steady_clock::now();
  ProgressLine line([&] {
    double total = 0;
    for (const auto& r : runs) total += r->fraction.load();
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - started)
                         .count();
    const double fraction = total / runs.size();
    const std::string eta =
        fraction > 0.02 ? absl::StrFormat(", about %.0f s left",
                                          elapsed * (1 - fraction) / fraction)
                        : "";
    return absl::StrFormat("simulating: %d of %d runs done, %.0f%%, %.1f s%s",
                           done.load(), runs.size(), 100 * fraction, elapsed,
                           eta);
  });
  auto worker = [&] {
    for (size_t i = next++; i < runs.size(); i = next++) {
      Run& run = *runs[i];
      if (run.same_as >= 0) {
        run.fraction = 1;
        ++done;
        continue;
      }
      const auto& jobs = run.prepared->jobs;
      const double first = jobs.empty() ? 0 : jobs.front().submit_time.count();
      const double span =
          jobs.empty() ? 1
                       : std::max(1.0, jobs.back().submit_time.count() - first);
      ProgressFn progress = [&run, first, span](double t, int64_t) {
        run.fraction = std::min(0.99, (t - first) / span);
      };
      run.result = Simulate(jobs, run.prepared->topology, run.config, progress);
      run.fraction = 1;
      ++done;
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::string SafeName(std::string name) {
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      c = '_';
    }
  }
  return name;
}

absl::Status WriteOutputs(const std::string& dir, const RunInfo& info,
                          const std::vector<Summary>& summaries,
                          const std::vector<const SimResult*>& results) {
  RETURN_IF_ERROR(EnsureFolder(dir));
  for (const SimResult* r : results) {
    const std::string base = absl::StrCat(dir, "/", SafeName(r->policy));
    RETURN_IF_ERROR(WriteFileAtomically(base + "_jobs.csv", JobsCsv(*r)));
    RETURN_IF_ERROR(
        WriteFileAtomically(base + "_timeseries.csv", TimeseriesCsv(*r)));
  }
  RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/summary.json", SummaryJson(info, summaries).dump(2) + "\n"));
  RETURN_IF_ERROR(
      WriteFileAtomically(dir + "/summary.csv", SummaryCsv(summaries)));
  return WriteHtmlReport(ReportJson(info, summaries, results),
                         dir + "/report.html");
}

// The runs of the grid, each with its prepared inputs (shared by the runs
// with the same cluster, seed and arrival scale) and, when an earlier run
// has the same policy and every swept key that matters to it, same_as.
absl::Status PlanRuns(const Flags& f, const Inputs& in,
                      const std::vector<GridPoint>& grid,
                      std::map<std::string, std::unique_ptr<Prepared>>* prepared,
                      std::vector<std::unique_ptr<Run>>* runs) {
  std::map<std::string, int> first_run;
  for (const GridPoint& point : grid) {
    for (const std::string& policy : in.policies) {
      auto run = std::make_unique<Run>();
      run->point = point;
      run->config = in.base;
      run->config.policy = policy;
      RunInputs inputs{f.arrival_scale, f.seed, f.cluster};
      for (const Setting& s : point) {
        RETURN_IF_ERROR(ApplySetting(s, &run->config, &inputs));
      }
      const std::string key = absl::StrCat(inputs.cluster, "|", inputs.seed,
                                           "|", inputs.arrival_scale);
      std::unique_ptr<Prepared>& slot = (*prepared)[key];
      if (!slot) {
        ASSIGN_OR_RETURN(slot, Prepare(in, inputs));
      }
      run->prepared = slot.get();
      std::string identity = policy;
      for (const Setting& s : point) {
        if (KeyMatters(s.first, policy, run->config)) {
          absl::StrAppend(&identity, "|", s.first, "=", s.second);
        } else {
          run->ignored_keys.insert(s.first);
        }
      }
      auto [it, fresh] = first_run.try_emplace(identity, runs->size());
      if (!fresh) run->same_as = it->second;
      runs->push_back(std::move(run));
    }
  }
  return absl::OkStatus();
}

absl::Status SimulateWithVcs(const Flags& f, Inputs in) {
  if (!f.sweeps.empty()) {
    return absl::InvalidArgumentError("--vcs runs without --sweep");
  }
  RunInputs inputs{f.arrival_scale, f.seed, f.cluster};
  ASSIGN_OR_RETURN(std::unique_ptr<Prepared> p, Prepare(in, inputs));
  if (p->excluded > 0) {
    std::fprintf(stderr,
                 "tiresias: %lld jobs need more GPUs than the cluster's %d "
                 "and are excluded\n",
                 static_cast<long long>(p->excluded), p->topology.total_gpus());
  }
  VcSimulation sim{f.trace,
                   f.vcs,
                   std::move(p->jobs),
                   p->topology,
                   in.base,
                   in.policies,
                   f.json,
                   f.out,
                   0,
                   BinOptions{.short_max_seconds = f.short_threshold},
                   f.warmup_hours * 3600};
  sim.threads =
      f.threads > 0
          ? f.threads
          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return SimulateVcs(std::move(sim));
}

absl::Status Simulate(const Flags& f, const std::string& command_line) {
  ASSIGN_OR_RETURN(Inputs in, LoadInputs(f));
  if (!f.vcs.empty()) return SimulateWithVcs(f, std::move(in));
  ASSIGN_OR_RETURN(std::vector<GridPoint> grid, ParseSweeps(f.sweeps));
  std::map<std::string, std::unique_ptr<Prepared>> prepared;
  std::vector<std::unique_ptr<Run>> runs;
  RETURN_IF_ERROR(PlanRuns(f, in, grid, &prepared, &runs));
  for (const std::string& note : in.trace_notes) {
    std::fprintf(stderr, "tiresias: %s\n", note.c_str());
  }
  std::set<std::string> told;  // clusters whose exclusions were reported
  for (const auto& run : runs) {
    const Prepared& p = *run->prepared;
    if (p.excluded > 0 && told.insert(p.topology.Describe()).second) {
      std::fprintf(stderr,
                   "tiresias: %lld jobs need more GPUs than the cluster's %d "
                   "and are excluded\n",
                   static_cast<long long>(p.excluded),
                   p.topology.total_gpus());
    }
  }
  int to_run = 0;
  for (const auto& run : runs) to_run += run->same_as < 0;
  const int threads =
      f.threads > 0 ? f.threads
                    : std::max(1u, std::thread::hardware_concurrency());
  RunAll(runs, std::max(1, std::min(threads, to_run)));

  std::vector<Summary> summaries;
  std::vector<const SimResult*> results;
  const BinOptions bins{.short_max_seconds = f.short_threshold};
  for (const auto& run : runs) {
    if (run->same_as >= 0) {
      summaries.push_back(summaries[run->same_as]);
      results.push_back(results[run->same_as]);
      continue;
    }
    if (!run->result.ok()) return run->result.status();
    summaries.push_back(
        Summarize(*run->result, bins, f.warmup_hours * 3600));
    results.push_back(&*run->result);
  }
  RunInfo info{command_line,
               TIRESIAS_VERSION,
               f.trace,
               in.topology.Describe(),
               in.topology.num_servers(),
               in.topology.total_gpus(),
               f.seed,
               f.baseline,
               runs.front()->prepared->excluded,
               Parameters(f, in.base),
               f.warmup_hours * 3600};
  if (!f.sweeps.empty()) {
    std::vector<SweepRun> sweep;
    for (size_t i = 0; i < runs.size(); ++i) {
      SweepRun& r = sweep.emplace_back();
      r.settings = runs[i]->point;
      r.summary = summaries[i];
      r.same_as = runs[i]->same_as;
      r.excluded_jobs = runs[i]->prepared->excluded;
      r.ignored_keys = runs[i]->ignored_keys;
    }
    const nlohmann::json doc = SweepJson(info, sweep);
    if (!f.out.empty()) {
      RETURN_IF_ERROR(EnsureFolder(f.out));
      RETURN_IF_ERROR(
          WriteFileAtomically(f.out + "/sweep.json", doc.dump(2) + "\n"));
      RETURN_IF_ERROR(WriteFileAtomically(f.out + "/sweep.csv", SweepCsv(sweep)));
      RETURN_IF_ERROR(WriteSweepReport(doc, f.out + "/sweep.html"));
    }
    std::fputs(f.json ? (doc.dump(2) + "\n").c_str()
                      : FormatSweepTable(sweep, f.baseline).c_str(),
               stdout);
    if (!f.out.empty() && !f.json) {
      std::printf("\nwrote %s/sweep.html\n", f.out.c_str());
    }
    return absl::OkStatus();
  }
  if (!f.out.empty()) {
    RETURN_IF_ERROR(WriteOutputs(f.out, info, summaries, results));
  }
  if (f.json) {
    std::fputs((SummaryJson(info, summaries).dump(2) + "\n").c_str(), stdout);
    return absl::OkStatus();
  }
  std::printf("trace %s: %s jobs; cluster %s; seed %llu\n\n", f.trace.c_str(),
              FormatCount(runs.front()->prepared->jobs.size()).c_str(),
              info.cluster_description.c_str(),
              static_cast<unsigned long long>(f.seed));
  std::fputs(FormatSummaryTable(summaries, f.baseline).c_str(), stdout);
  std::printf("\n");
  std::fputs(FormatFairnessTable(summaries).c_str(), stdout);
  if (!f.out.empty()) std::printf("\nwrote %s/report.html\n", f.out.c_str());
  return absl::OkStatus();
}

}  // namespace

void AddSimulateCommand(CLI::App& app, const std::string& command_line,
                        int* exit_code) {
  auto flags = std::make_shared<Flags>();
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Replay a job trace under scheduling policies and compare them.\n"
      "Policies: " + absl::StrJoin(SimulatorPolicyNames(), ", ") +
          " (gandiva: the original Tiresias simulator's Gandiva, time "
          "slicing on node sets; it ignores --placement)" +
          ".\nPlacements: " + absl::StrJoin(PlacerNames(), ", ") + ".");
  Flags& f = *flags;
  cmd->add_option("--trace", f.trace,
                  "Trace: Tiresias or Philly CSV, Gavel .trace, Helios "
                  "cluster_log.csv, PAI 2020 pai_job_table.csv (its "
                  "pai_task_table.csv beside it) or their folder")
      ->required();
  cmd->add_option("--trace-format,--format", f.format,
                  "auto (from the header or the first line), tiresias, "
                  "philly, gavel, helios or pai")
      ->capture_default_str();
  cmd->add_option("--cluster", f.cluster,
                  "NxG, RxNxG, a Tiresias cluster spec CSV or the Philly "
                  "machine list")->required();
  cmd->add_option("--policy", f.policies, "Comma-separated policies")
      ->capture_default_str()
      ->check(cli::ChoicesHint([] {
        std::vector<std::string> names = PolicyNames();
        names.push_back("gandiva");
        return names;
      }()));
  cmd->add_option("--placement", f.placement,
                  "Placement for every policy (default: each policy's own)")
      ->check(cli::ChoicesHint(PlacerNames()));
  cmd->add_option("--baseline", f.baseline,
                  "Policy the normalized columns divide by")
      ->capture_default_str();
  cmd->add_option("--thresholds", f.thresholds,
                  "Queue bounds in GPU-seconds: 3600 (K=2) or 3250:7200 "
                  "(K=3); default 3600");
  cmd->add_flag("--original-simulator", f.original_simulator,
                "The original Tiresias simulator's settings: thresholds "
                "3250:7200, count placement, no preemption cost or "
                "placement slowdown, and its demotion timing");
  cmd->add_option("--promote-knob", f.promote_knob,
                  "PROMOTEKNOB: a number, or inf to turn promotion off")
      ->capture_default_str();
  cmd->add_option("--queue-order", f.queue_order, kQueueOrderHelp)
      ->capture_default_str();
  cmd->add_option("--gittins-samples", f.gittins_samples,
                  "Job sizes (GPU-seconds) for tiresias-g, e.g. "
                  "data/yarn-gput1000.csv; default: learn from finished jobs");
  cmd->add_option("--gittins-index", f.gittins_index,
                  "tiresias-g's index: paper, or original (the released "
                  "simulator's index and order, to reproduce its figures; "
                  "needs --gittins-samples)")
      ->check(CLI::IsMember({"paper", "original"}))
      ->capture_default_str();
  cmd->add_option("--arrival-scale", f.arrival_scale,
                  "Multiply every inter-arrival gap (< 1 raises the load)")
      ->capture_default_str();
  cmd->add_option("--seed", f.seed, "Seed for model draws and random "
                                    "placement")->capture_default_str();
  cmd->add_option("--out", f.out,
                  "Write per-job CSVs, time series, summary.json and "
                  "report.html into this folder");
  cmd->add_flag("--json", f.json, "Print the JSON summary instead of a table");
  cmd->add_flag("--no-preemption-cost", f.no_preemption_cost,
                "Preemption is free (as in the original simulator)");
  cmd->add_flag("--no-placement-slowdown", f.no_placement_slowdown,
                "Spread jobs run at full speed");
  cmd->add_option("--slowdown-file", f.slowdown_file,
                  "CSV model,spread_slowdown,source of measured spread "
                  "slowdowns replacing the built-in ones (which are the "
                  "paper's, not measured here), e.g. "
                  "data/spread_slowdown_testbed.csv: VGG16 and ResNet50 "
                  "measured on the emulated testbed (BENCHMARKS.md)");
  cmd->add_option("--pack-limit", f.pack_limit,
                  "PACKLIMIT: skew above which `profiled` consolidates "
                  "(with --learn-pack-limit, its starting value)")
      ->capture_default_str();
  cmd->add_flag("--learn-pack-limit", f.learn_pack_limit,
                "Runs under `profiled` placement learn PACKLIMIT from "
                "finished jobs (a logistic regression on skew; see "
                "docs/ARCHITECTURE.md)");
  cmd->add_option("--pack-limit-refresh", f.pack_limit_refresh,
                  "With --learn-pack-limit: refit every N finished jobs "
                  "(of models with a known skew)")
      ->capture_default_str();
  cmd->add_option("--pack-limit-cost", f.pack_limit_cost,
                  "With --learn-pack-limit: a job is sensitive when "
                  "spreading makes it more than this fraction slower")
      ->capture_default_str();
  cmd->add_option("--short-threshold", f.short_threshold,
                  "Seconds below which a job is short in the per-bin table")
      ->capture_default_str();
  cmd->add_option("--warmup", f.warmup_hours,
                  "Hours: jobs submitted in the trace's first H hours still "
                  "run but are left out of every job metric (JCT, queueing, "
                  "bins, fairness, the CDFs)")
      ->capture_default_str();
  cmd->add_option("--sweep", f.sweeps,
                  "KEY=V1,V2: run the grid of every combination; keys: "
                  "seed, cluster (88x8), arrival-scale, placement, "
                  "pack-limit, thresholds (3600 or 3250:7200), promote-knob "
                  "(or knob), queue-order. Repeatable. A policy runs once "
                  "per value of the keys that matter to it. With --out: "
                  "sweep.json, sweep.csv and sweep.html (a plot per metric, "
                  "min-max band over seeds)");
  cmd->add_option("--vcs", f.vcs,
                  "Virtual clusters: a VC file (one per line: NAME "
                  "quota=2x8,4x1 [weight=W] [borrow=N] [lend=N]) or "
                  "from-trace (one per tenant, the Philly trace's `cluster` "
                  "column, quota from its share of the GPU time). Runs each "
                  "policy without VCs, shared by the VCs, and each VC alone "
                  "on its quota, and compares every VC's queueing delay "
                  "shared against alone (the sharing anomaly)");
  cmd->add_option("--threads", f.threads,
                  "Runs in parallel (default: one per core)");
  cmd->callback([flags, command_line, exit_code] {
    absl::Status status = Simulate(*flags, command_line);
    if (!status.ok()) {
      std::fprintf(stderr, "tiresias: %s\n",
                   std::string(status.message()).c_str());
      *exit_code = 1;
    }
  });
}

}  // namespace tiresias

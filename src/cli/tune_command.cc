// `tiresias tune`: the scheduling settings (K queues and their bounds,
// PROMOTEKNOB, queue order, placement) that would have served a window of
// jobs best, from a trace file or from a running master's own jobs, and
// with --apply / --auto the master's live settings changed to them when
// the gain predicted on held-out recent jobs is large enough (tune/tune.h).
#include "cli/tune_command.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cluster_client.h"
#include "cli/sweep.h"
#include "cli/tune_round.h"
#include "cli/tune_window.h"
#include "trace/cluster_spec.h"
#include "trace/trace_reader.h"
#include "tune/tune.h"

namespace tiresias {
namespace {

using tune_cli::Judge;
using tune_cli::MakeOptions;
using tune_cli::ParseSpan;
using tune_cli::PrintRound;
using tune_cli::Round;
using tune_cli::TuneFlags;
using tune_cli::TuneMaster;
using tune_cli::TuneOnce;

int TuneTrace(const TuneFlags& f) {
  absl::StatusOr<TraceFormat> format = ParseTraceFormat(f.format);
  if (!format.ok()) return cli::Fail(std::string(format.status().message()));
  std::vector<std::string> notes;
  absl::StatusOr<std::vector<JobSpec>> jobs =
      ReadTrace(f.trace, *format, &notes);
  if (!jobs.ok()) return cli::Fail(std::string(jobs.status().message()));
  absl::StatusOr<Topology> topology = ParseClusterSpec(f.cluster);
  if (!topology.ok())
    return cli::Fail(std::string(topology.status().message()));
  absl::StatusOr<double> window = ParseSpan("--window", f.window);
  if (!window.ok()) return cli::Fail(std::string(window.status().message()));
  absl::StatusOr<TuneOptions> options = MakeOptions(f);
  if (!options.ok()) return cli::Fail(std::string(options.status().message()));
  TuneSettings current;
  absl::StatusOr<QueueConfig> queues = QueueConfig::Parse(f.thresholds);
  if (!queues.ok()) {
    return cli::Fail(absl::StrCat("--thresholds: ", queues.status().message()));
  }
  current.queues = *queues;
  absl::StatusOr<double> knob = ParseKnob(f.promote_knob);
  if (!knob.ok()) return cli::Fail(std::string(knob.status().message()));
  current.promote_knob = *knob;
  absl::StatusOr<QueueOrder> order = ParseQueueOrderFlag(f.queue_order);
  if (!order.ok()) return cli::Fail(std::string(order.status().message()));
  current.queue_order = *order;
  current.placement = f.placement;
  if (jobs->empty()) return cli::Fail(absl::StrCat(f.trace, ": no jobs"));
  double first = jobs->front().submit_time.count(), last = first;
  for (const JobSpec& j : *jobs) {
    first = std::min(first, j.submit_time.count());
    last = std::max(last, j.submit_time.count());
  }
  const double end = f.end_hours >= 0 ? first + f.end_hours * 3600 : last;
  TuneWindow w = CutWindow(std::move(*jobs), end, *window, *topology);
  absl::StatusOr<Round> r =
      TuneOnce(f, current, std::move(w), *topology, *options);
  if (!r.ok()) return cli::Fail(absl::StrCat("tune: ", r.status().message()));
  Judge(f, &*r);
  if (r->would_apply) {
    r->why =
        "A trace has no master to apply to: run the master with the "
        "flags above.";
    r->would_apply = false;
  }
  PrintRound(f, *r,
             absl::StrFormat("%s (hours %.1f to %.1f)", f.trace,
                             std::max(0.0, end - *window - first) / 3600,
                             (end - first) / 3600),
             f.cluster);
  return 0;
}

}  // namespace

void AddTuneCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<TuneFlags>();
  CLI::App* cmd = app.add_subcommand(
      "tune",
      "Find the scheduling settings (K queues and their bounds, PROMOTEKNOB, "
      "queue order, placement) that would have served a window of jobs best: "
      "a running master's own jobs (default) or a trace's. Each candidate "
      "replays the window's earlier jobs in the simulator; the best average "
      "JCT that keeps the fairness floors is chosen and judged on the most "
      "recent jobs, held out. --apply changes the master's settings when "
      "the predicted gain reaches --min-gain; --auto does so periodically "
      "and on drift");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("--trace", f->trace,
                  "Tune on a trace file instead of the master's jobs (with "
                  "--cluster)");
  cmd->add_option("--format", f->format, "The trace's format (as simulate's)")
      ->capture_default_str();
  cmd->add_option("--cluster", f->cluster,
                  "With --trace: NxG, RxNxG or a cluster spec CSV");
  cmd->add_option("--window", f->window,
                  "How far back the window reaches: 14d, 36h, 90m, 45s")
      ->capture_default_str();
  cmd->add_option("--end-hours", f->end_hours,
                  "With --trace: the window ends this many hours after the "
                  "trace's first job (default: at its last)");
  cmd->add_option("--policy", f->policy,
                  "With --trace: tiresias-l or tiresias-g (a master: its own)")
      ->capture_default_str();
  cmd->add_option("--thresholds", f->thresholds,
                  "With --trace: the current queue bounds (a master: its own)")
      ->capture_default_str();
  cmd->add_option("--promote-knob", f->promote_knob,
                  "With --trace: the current PROMOTEKNOB")
      ->capture_default_str();
  cmd->add_option("--queue-order", f->queue_order,
                  "With --trace: the current queue order")
      ->capture_default_str();
  cmd->add_option("--placement", f->placement,
                  "With --trace: the current placement (default: the "
                  "policy's)");
  cmd->add_option("--search-thresholds", f->search_thresholds,
                  "Queue bounds to try, comma-separated, colons within one "
                  "(900,3600,1800:7200); default: K = 2 with 900 to 28800 "
                  "GPU-seconds (doubling) and K = 3 with every pair of those");
  cmd->add_option("--search-knobs", f->search_knobs,
                  "PROMOTEKNOB values to try (inf: off)")
      ->capture_default_str();
  cmd->add_option("--search-orders", f->search_orders, "Queue orders to try")
      ->capture_default_str();
  cmd->add_option("--search-placements", f->search_placements,
                  "Placements to try (default: only the current one)");
  cmd->add_option("--search", f->search,
                  "halving (successive halving over growing parts of the "
                  "window) or grid (every candidate on every job)")
      ->capture_default_str();
  cmd->add_option("--holdout", f->holdout,
                  "The most recent part of the window (a fraction of its "
                  "jobs) held out of the search, to judge the choice on")
      ->capture_default_str();
  cmd->add_option("--objective", f->objective, "avg or p95 JCT")
      ->capture_default_str();
  cmd->add_option("--slowdown-margin", f->slowdown_margin,
                  "Fairness floor: the largest slowdown may be at most this "
                  "fraction worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--wait-margin", f->wait_margin,
                  "Fairness floor: the longest wait may be at most this "
                  "fraction worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--p95-margin", f->p95_margin,
                  "Fairness floor: the p95 JCT may be at most this fraction "
                  "worse than the current settings'")
      ->capture_default_str();
  cmd->add_option("--finalists", f->finalists,
                  "The search's best this many are judged on the held-out "
                  "jobs, the best of them there chosen")
      ->capture_default_str();
  cmd->add_option("--threads", f->threads,
                  "Runs in parallel (default: one per core)");
  cmd->add_option("--seed", f->seed,
                  "Seed for drawn models and censored durations")
      ->capture_default_str();
  cmd->add_option("--top", f->top, "Rows shown (the current and chosen always)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "Print the result as JSON");
  cmd->add_flag("--apply", f->apply,
                "Change the master's settings to the chosen ones (an admin), "
                "when the predicted gain on held-out jobs is at least "
                "--min-gain and they keep the floors there");
  cmd->add_option("--min-gain", f->min_gain,
                  "Least predicted gain in the objective to apply, a fraction")
      ->capture_default_str();
  cmd->add_option("--auto", f->auto_interval,
                  "Tune and apply every INTERVAL (1d, 6h, ...), and at once "
                  "when the master reports drift; runs until interrupted");
  cmd->callback([f, exit_code] {
    if (!f->trace.empty()) {
      if (f->apply || !f->auto_interval.empty()) {
        *exit_code = cli::Fail(
            "tune --apply/--auto change a master's settings: leave out "
            "--trace");
        return;
      }
      if (f->cluster.empty()) {
        *exit_code = cli::Fail("tune --trace needs --cluster");
        return;
      }
      *exit_code = TuneTrace(*f);
      return;
    }
    *exit_code = TuneMaster(*f);
  });
}

}  // namespace tiresias

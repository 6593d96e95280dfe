#include "cli/simulate_inputs.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/sweep.h"
#include "core/status_macros.h"
#include "sim/slowdown_file.h"
#include "trace/cluster_spec.h"
#include "trace/samples_reader.h"
#include "trace/trace_reader.h"

namespace tiresias::simulate {

absl::StatusOr<Inputs> LoadInputs(const Flags& f) {
  ASSIGN_OR_RETURN(TraceFormat format, ParseTraceFormat(f.format));
  std::vector<std::string> trace_notes;
  ASSIGN_OR_RETURN(std::vector<JobSpec> jobs,
                   ReadTrace(f.trace, format, &trace_notes));
  ASSIGN_OR_RETURN(Topology topology, ParseClusterSpec(f.cluster));
  SimConfig base;
  if (f.original_simulator) {
    base.scheduler.queues = QueueConfig::OriginalSimulator();
    base.scheduler.original_demotion_timing = true;
    base.scheduler.original_promotion_wait = true;
    base.placement = "count";
    base.preemption_cost = false;
    base.placement_slowdown = false;
    base.count_moves = false;
  }
  if (!f.thresholds.empty()) {
    ASSIGN_OR_RETURN(base.scheduler.queues, QueueConfig::Parse(f.thresholds));
  }
  if (!f.placement.empty()) {
    RETURN_IF_ERROR(MakePlacer(f.placement).status());
    base.placement = f.placement;
  }
  ASSIGN_OR_RETURN(base.scheduler.promote_knob, ParseKnob(f.promote_knob));
  ASSIGN_OR_RETURN(base.scheduler.queue_order,
                   ParseQueueOrderFlag(f.queue_order));
  if (!f.gittins_samples.empty()) {
    ASSIGN_OR_RETURN(base.policy_options.gittins_samples,
                     ReadGpuTimeSamples(f.gittins_samples));
  }
  if (f.gittins_index == "original" && f.gittins_samples.empty()) {
    return absl::InvalidArgumentError(
        "--gittins-index original needs --gittins-samples (the released "
        "simulator learns nothing: it reads yarn-gput1000.csv)");
  }
  base.policy_options.gittins_original_index = f.gittins_index == "original";
  if (!(f.pack_limit >= 0 && f.pack_limit <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--pack-limit ", f.pack_limit, ": expected a skew between 0 and 1"));
  }
  base.placement_options.pack_limit = f.pack_limit;
  if (f.learn_pack_limit) {
    if (f.pack_limit_refresh < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--pack-limit-refresh ", f.pack_limit_refresh,
                       ": expected a positive number of finished jobs"));
    }
    if (!(f.pack_limit_cost >= 0 && f.pack_limit_cost <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--pack-limit-cost ", f.pack_limit_cost,
                       ": expected a fraction between 0 and 1"));
    }
    base.learn_pack_limit = true;
    base.pack_limit_refresh_jobs = f.pack_limit_refresh;
    base.pack_limit_learning.cost_threshold = f.pack_limit_cost;
  }
  if (f.no_preemption_cost) base.preemption_cost = false;
  if (f.no_placement_slowdown) base.placement_slowdown = false;
  if (!f.slowdown_file.empty()) {
    ASSIGN_OR_RETURN(base.models,
                     ApplySlowdownFile(base.models, f.slowdown_file));
  }
  base.scheduler.seed = f.seed;
  base.record_timeseries = !f.out.empty();
  RETURN_IF_ERROR(ValidateArrivalScale(f.arrival_scale));
  if (!(f.warmup_hours >= 0) || !std::isfinite(f.warmup_hours)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup ", f.warmup_hours,
                     ": expected a non-negative number of hours"));
  }

  std::vector<std::string> policies = absl::StrSplit(f.policies, ',');
  for (const std::string& p : policies) {
    RETURN_IF_ERROR(CheckSimulatorPolicy(p));
  }
  RETURN_IF_ERROR(CheckSimulatorPolicy(f.baseline));
  return Inputs{std::move(jobs), std::move(topology), std::move(base),
                std::move(policies), std::move(trace_notes)};
}

nlohmann::json Parameters(const Flags& f, const SimConfig& base) {
  nlohmann::json thresholds = base.scheduler.queues.thresholds();
  const double knob = base.scheduler.promote_knob;
  nlohmann::json params = {
      {"format", f.format},
      {"thresholds_gpu_s", thresholds},
      {"promote_knob",
       std::isinf(knob) ? nlohmann::json("inf") : nlohmann::json(knob)},
      {"queue_order", QueueOrderName(base.scheduler.queue_order)},
      {"placement", base.placement.empty() ? "policy default" : base.placement},
      {"pack_limit", base.placement_options.pack_limit},
      {"learn_pack_limit", base.learn_pack_limit},
      {"pack_limit_refresh_jobs", base.pack_limit_refresh_jobs},
      {"pack_limit_cost_threshold", base.pack_limit_learning.cost_threshold},
      {"pack_limit_min_samples", base.pack_limit_learning.min_samples},
      {"arrival_scale", f.arrival_scale},
      {"preemption_cost", base.preemption_cost},
      {"placement_slowdown", base.placement_slowdown},
      {"gittins_samples", f.gittins_samples},
      {"gittins_index", f.gittins_index},
      {"short_threshold_s", f.short_threshold},
      {"warmup_h", f.warmup_hours},
      {"sweeps", f.sweeps}};
  if (!f.slowdown_file.empty()) {
    // Only with a file, so that default outputs stay as they were.
    nlohmann::json factors = nlohmann::json::object();
    for (const ModelPerf& m : base.models.models()) {
      factors[m.name] = {{"spread_slowdown", m.spread_slowdown},
                         {"source", m.source}};
    }
    params["slowdown_file"] = f.slowdown_file;
    params["spread_slowdowns"] = factors;
  }
  return params;
}

}  // namespace tiresias::simulate

#include "cli/sweep.h"

#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "place/placement.h"
#include "sched/queues.h"
#include "trace/cluster_spec.h"

namespace tiresias {
namespace {

const std::set<std::string>& SweepKeys() {
  static const std::set<std::string> kKeys = {
      "seed",       "cluster",      "arrival-scale", "placement", "pack-limit",
      "thresholds", "promote-knob", "knob",          "queue-order"};
  return kKeys;
}

absl::StatusOr<double> ParsePositive(const std::string& key,
                                     const std::string& text) {
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(v > 0) || !std::isfinite(v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        key, " \"", text, "\": expected a positive number"));
  }
  return v;
}

}  // namespace

absl::StatusOr<QueueOrder> ParseQueueOrderFlag(const std::string& text) {
  absl::StatusOr<QueueOrder> order = ParseQueueOrder(text);
  if (!order.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--queue-order: ", order.status().message()));
  }
  return order;
}

absl::StatusOr<double> ParseKnob(const std::string& text) {
  if (text == "inf" || text == "infinity") return INFINITY;
  double v = 0;
  if (!absl::SimpleAtod(text, &v) || !(v > 0) || std::isnan(v)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "promote knob \"", text, "\": expected a positive number or inf"));
  }
  return v;
}

absl::StatusOr<std::vector<GridPoint>> ParseSweeps(
    const std::vector<std::string>& sweeps) {
  std::vector<GridPoint> grid = {GridPoint{}};
  std::set<std::string> seen;
  for (const std::string& sweep : sweeps) {
    std::vector<std::string> kv = absl::StrSplit(sweep, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[1].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep \"", sweep, "\": expected KEY=V1,V2,... e.g. knob=inf,2"));
    }
    const std::string key = kv[0] == "knob" ? "promote-knob" : kv[0];
    if (!SweepKeys().contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep \"", sweep, "\": unknown key \"", key,
          "\"; expected seed, cluster, arrival-scale, placement, pack-limit, "
          "thresholds, promote-knob or queue-order"));
    }
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("sweep key \"", key, "\" given twice"));
    }
    std::vector<GridPoint> next;
    for (const GridPoint& point : grid) {
      for (absl::string_view value : absl::StrSplit(kv[1], ',')) {
        GridPoint p = point;
        p.emplace_back(key, std::string(value));
        // Validate once here so a typo fails before any run starts.
        SimConfig scratch;
        RunInputs inputs;
        RETURN_IF_ERROR(ApplySetting(p.back(), &scratch, &inputs));
        next.push_back(std::move(p));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

absl::Status ApplySetting(const Setting& setting, SimConfig* config,
                          RunInputs* inputs) {
  const auto& [key, value] = setting;
  if (key == "thresholds") {
    ASSIGN_OR_RETURN(config->scheduler.queues, QueueConfig::Parse(value));
  } else if (key == "queue-order") {
    ASSIGN_OR_RETURN(config->scheduler.queue_order, ParseQueueOrder(value));
  } else if (key == "promote-knob" || key == "knob") {
    ASSIGN_OR_RETURN(config->scheduler.promote_knob, ParseKnob(value));
  } else if (key == "arrival-scale") {
    ASSIGN_OR_RETURN(inputs->arrival_scale, ParsePositive(key, value));
  } else if (key == "placement") {
    RETURN_IF_ERROR(MakePlacer(value).status());
    config->placement = value;
  } else if (key == "pack-limit") {
    ASSIGN_OR_RETURN(config->placement_options.pack_limit,
                     ParsePositive(key, value));
  } else if (key == "seed") {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(value, &seed)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "seed \"", value, "\": expected a non-negative integer"));
    }
    inputs->seed = seed;
    config->scheduler.seed = seed;
  } else if (key == "cluster") {
    absl::StatusOr<Topology> topology = ParseClusterSpec(value);
    if (!topology.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster \"", value, "\": ",
                       topology.status().message()));
    }
    inputs->cluster = value;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown setting ", key));
  }
  return absl::OkStatus();
}

bool KeyMatters(const std::string& key, const std::string& policy,
                const SimConfig& config) {
  if (key == "seed" || key == "cluster" || key == "arrival-scale") {
    return true;
  }
  if (policy == "gandiva") return false;  // its own engine: none of these
  absl::StatusOr<std::unique_ptr<Policy>> made = MakePolicy(policy, {});
  if (!made.ok()) return true;  // refused later, by the run itself
  const PolicyTraits& traits = (*made)->traits();
  if (key == "thresholds" || key == "promote-knob" || key == "queue-order") {
    return traits.multi_level_queues;
  }
  if (key == "placement") return true;
  if (key == "pack-limit") {
    const std::string placement = config.placement.empty()
                                      ? std::string(traits.default_placement)
                                      : config.placement;
    return placement == kProfiledPlacement;
  }
  return true;
}

}  // namespace tiresias

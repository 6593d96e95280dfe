#include "cli/sweep.h"

#include <cmath>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"
#include "sched/queues.h"

namespace tiresias {
namespace {

const std::set<std::string>& SweepKeys() {
  static const std::set<std::string> kKeys = {
      "thresholds", "knob", "arrival-scale", "placement", "pack-limit",
      "queue-order"};
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
    const std::string& key = kv[0];
    if (!SweepKeys().contains(key)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sweep \"", sweep, "\": unknown key \"", key,
          "\"; expected thresholds, knob, arrival-scale, placement, "
          "pack-limit or queue-order"));
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
        double scale = 1;
        RETURN_IF_ERROR(ApplySetting(p.back(), &scratch, &scale));
        next.push_back(std::move(p));
      }
    }
    grid = std::move(next);
  }
  return grid;
}

absl::Status ApplySetting(const Setting& setting, SimConfig* config,
                          double* arrival_scale) {
  const auto& [key, value] = setting;
  if (key == "thresholds") {
    ASSIGN_OR_RETURN(config->scheduler.queues,
                     QueueConfig::Parse(absl::StrReplaceAll(value, {{":", ","}})));
  } else if (key == "queue-order") {
    ASSIGN_OR_RETURN(config->scheduler.queue_order, ParseQueueOrder(value));
  } else if (key == "knob") {
    ASSIGN_OR_RETURN(config->scheduler.promote_knob, ParseKnob(value));
  } else if (key == "arrival-scale") {
    ASSIGN_OR_RETURN(*arrival_scale, ParsePositive(key, value));
  } else if (key == "placement") {
    RETURN_IF_ERROR(MakePlacer(value).status());
    config->placement = value;
  } else if (key == "pack-limit") {
    ASSIGN_OR_RETURN(config->placement_options.pack_limit,
                     ParsePositive(key, value));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown setting ", key));
  }
  return absl::OkStatus();
}

}  // namespace tiresias

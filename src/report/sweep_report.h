// The outputs of `tiresias simulate --sweep`: the JSON document (a
// contract, like summary.json), a CSV row per run, the printed table, and
// sweep.html, a self-contained page with a plot per metric against the
// swept value (one line per policy, a min-max band over seeds).
#ifndef TIRESIAS_REPORT_SWEEP_REPORT_H_
#define TIRESIAS_REPORT_SWEEP_REPORT_H_

#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "report/summary_output.h"
#include "sim/metrics.h"

namespace tiresias {

// One point of the grid under one policy.
struct SweepRun {
  std::vector<std::pair<std::string, std::string>> settings;  // key, value
  Summary summary;
  // The swept keys that cannot change this policy's result (they are shown
  // as "-"); such a run is the earlier run `same_as` (-1: it ran).
  std::set<std::string> ignored_keys;
  int same_as = -1;
  int64_t excluded_jobs = 0;  // jobs larger than its cluster
};

// SummaryJson's run information without "policies", plus "sweep": [{
// "settings": {key: value}, "summary": <a policy of SummaryJson>,
// "ignored_keys": [...], "same_as": index or null, "excluded_jobs"}], one
// entry per run in grid order.
nlohmann::json SweepJson(const RunInfo& info, const std::vector<SweepRun>& runs);

// Header: the swept keys, then policy, placement and the summary's scalar
// fields (SummaryCsv's, fairness included). One row per run that ran; an
// ignored key's value is "-".
std::string SweepCsv(const std::vector<SweepRun>& runs);

// The table `simulate --sweep` prints: one row per run that ran, avg JCT
// over the baseline's at the same point.
std::string FormatSweepTable(const std::vector<SweepRun>& runs,
                             const std::string& baseline);

// sweep.html from SweepJson's document. The x axis is the first swept key
// other than seed with more than one value (seed if it is the only one);
// a line per policy and value of the other keys, at the mean over seeds,
// with a band from min to max when seeds are swept.
std::string RenderSweepReport(const nlohmann::json& doc);
absl::Status WriteSweepReport(const nlohmann::json& doc,
                              const std::string& path);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_SWEEP_REPORT_H_

// Simulation results as a user reads them: the comparison table, the JSON
// summary other tools read (field names are a contract), per-job and
// time-series CSV files, and the data behind report.html.
#ifndef TIRESIAS_REPORT_SUMMARY_OUTPUT_H_
#define TIRESIAS_REPORT_SUMMARY_OUTPUT_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine.h"
#include "sim/metrics.h"

namespace tiresias {

// What made a run: recorded in every output so results can be reproduced.
struct RunInfo {
  std::string command;
  std::string version;
  std::string trace;
  std::string cluster_description;
  int servers = 0;
  int gpus = 0;
  uint64_t seed = 0;
  std::string baseline;  // policy the normalized columns divide by
  int64_t excluded_jobs = 0;  // jobs larger than the cluster
  nlohmann::json parameters = nlohmann::json::object();
  // Jobs submitted in the first warmup_s seconds are left out of the
  // metrics (Summarize's warmup_s); the CDFs follow.
  double warmup_s = 0;
};

// {"trace", "cluster": {"servers", "gpus", "description"}, "seed",
//  "command", "version", "baseline", "excluded_jobs", "warmup_s",
//  "parameters",
//  "policies": [{"name", "placement", "jobs", "avg_jct_s", "median_jct_s",
//  "p95_jct_s", "max_jct_s", "avg_queueing_s", "makespan_s", "preemptions",
//  "preemption_overhead_s", "gpu_utilization", "bins": {"SS": {"jobs",
//  "avg_jct_s", "p95_jct_s", "avg_queueing_s"}, "SL", "LS", "LL"},
//  "fairness": {"avg_slowdown", "max_slowdown", "p95_slowdown", "ftf_max",
//  "ftf_over_1_share", "jain_slowdown", "longest_wait_s",
//  "jobs_without_duration"} (sim/fairness.h), and with a learnt PACKLIMIT
//  "pack_limit": {"learnt", "samples", "fit", "updates"}}]}
nlohmann::json SummaryJson(const RunInfo& info,
                           const std::vector<Summary>& summaries);

// SummaryJson plus, per policy, the downsampled JCT and queueing CDFs (of
// the jobs counted) and their tails (Tail, 20 points a decade), busy GPUs and waiting jobs over time, and the CDF of
// each job's JCT over its JCT under the baseline ("jct_ratio_cdf", when the
// baseline is among the results): the input of RenderHtmlReport.
nlohmann::json ReportJson(const RunInfo& info,
                          const std::vector<Summary>& summaries,
                          const std::vector<const SimResult*>& results);

// One policy's summary as the JSON summary's `policies` entries hold it:
// name, placement, the JCT and queueing figures, bins and fairness.
nlohmann::json PolicyJson(const Summary& summary);

// The comparison table, one row per policy, with avg and p95 JCT divided by
// the baseline's (when the baseline is among them).
std::string FormatSummaryTable(const std::vector<Summary>& summaries,
                               const std::string& baseline);

// The fairness table (sim/fairness.h), one row per policy: average, p95 and
// max slowdown, the largest finish-time fairness and the share of jobs
// above 1, Jain's index over slowdowns, the longest wait.
std::string FormatFairnessTable(const std::vector<Summary>& summaries);

// One row per policy: the summary's scalar fields, fairness included.
std::string SummaryCsv(const std::vector<Summary>& summaries);
// Its header (without a newline) and one row (without a newline).
std::string SummaryCsvColumns();
std::string SummaryCsvRow(const Summary& summary);

// id,gpus,model,submit_s,first_start_s,end_s,jct_s,queueing_s,executed_s,
// overhead_s,preemptions,promotions,final_queue,slowdown,ftf,active_jobs
// (slowdown and ftf empty for a job of duration 0).
std::string JobsCsv(const SimResult& result);
// time_s,busy_gpus,pending_jobs,running_jobs
std::string TimeseriesCsv(const SimResult& result);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_SUMMARY_OUTPUT_H_

#include "report/summary_output.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/html_format.h"

namespace tiresias {
namespace {

nlohmann::json BinsJson(const Summary& s) {
  nlohmann::json bins = nlohmann::json::object();
  for (const auto& [name, b] : s.bins) {
    bins[name] = {{"jobs", b.jobs},
                  {"avg_jct_s", b.avg_jct_s},
                  {"p95_jct_s", b.p95_jct_s},
                  {"avg_queueing_s", b.avg_queueing_s}};
  }
  return bins;
}

nlohmann::json FairnessJson(const FairnessSummary& f) {
  return {{"avg_slowdown", f.avg_slowdown},
          {"max_slowdown", f.max_slowdown},
          {"p95_slowdown", f.p95_slowdown},
          {"ftf_max", f.ftf_max},
          {"ftf_over_1_share", f.ftf_over_1_share},
          {"jain_slowdown", f.jain_slowdown},
          {"longest_wait_s", f.longest_wait_s},
          {"jobs_without_duration", f.jobs_without_duration}};
}

nlohmann::json PairsJson(const std::vector<std::pair<double, double>>& v) {
  nlohmann::json out = nlohmann::json::array();
  for (auto [x, y] : v) out.push_back({x, y});
  return out;
}

}  // namespace

nlohmann::json PolicyJson(const Summary& s) {
  nlohmann::json out = {{"name", s.policy},
          {"placement", s.placement},
          {"jobs", s.jobs},
          {"avg_jct_s", s.avg_jct_s},
          {"median_jct_s", s.median_jct_s},
          {"p95_jct_s", s.p95_jct_s},
          {"max_jct_s", s.max_jct_s},
          {"avg_queueing_s", s.avg_queueing_s},
          {"makespan_s", s.makespan_s},
          {"preemptions", s.preemptions},
          {"preemption_overhead_s", s.preemption_overhead_s},
          {"gpu_utilization", s.gpu_utilization},
          {"bins", BinsJson(s)},
          {"fairness", FairnessJson(s.fairness)}};
  if (s.learnt_pack_limit) {
    out["pack_limit"] = {{"learnt", *s.learnt_pack_limit},
                         {"samples", s.pack_limit_samples},
                         {"fit", s.pack_limit_fit},
                         {"updates", s.pack_limit_updates}};
  }
  return out;
}

nlohmann::json SummaryJson(const RunInfo& info,
                           const std::vector<Summary>& summaries) {
  nlohmann::json policies = nlohmann::json::array();
  for (const Summary& s : summaries) policies.push_back(PolicyJson(s));
  return {{"trace", info.trace},
          {"cluster",
           {{"servers", info.servers},
            {"gpus", info.gpus},
            {"description", info.cluster_description}}},
          {"seed", info.seed},
          {"command", info.command},
          {"version", info.version},
          {"baseline", info.baseline},
          {"excluded_jobs", info.excluded_jobs},
          {"warmup_s", info.warmup_s},
          {"parameters", info.parameters},
          {"policies", policies}};
}

nlohmann::json ReportJson(const RunInfo& info,
                          const std::vector<Summary>& summaries,
                          const std::vector<const SimResult*>& results) {
  nlohmann::json data = SummaryJson(info, summaries);
  data["title"] = "Tiresias simulation";
  // The baseline's JCT by job id, for the per-job ratios.
  std::map<JobId, double> base_jct;
  for (const SimResult* r : results) {
    if (r->policy != info.baseline) continue;
    for (const JobResult& j : r->jobs) base_jct[j.id] = j.jct();
  }
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<double> jct, queueing, ratio;
    for (const JobResult& j : results[i]->jobs) {
      if (!CountsInMetrics(*results[i], j, info.warmup_s)) continue;
      jct.push_back(j.jct());
      queueing.push_back(j.queueing());
      auto base = base_jct.find(j.id);
      if (base != base_jct.end() && base->second > 0) {
        ratio.push_back(j.jct() / base->second);
      }
    }
    nlohmann::json& p = data["policies"][i];
    p["jct_tail"] = PairsJson(Tail(jct, 20));
    p["queueing_tail"] = PairsJson(Tail(queueing, 20));
    p["jct_cdf"] = PairsJson(Cdf(std::move(jct), 400));
    p["queueing_cdf"] = PairsJson(Cdf(std::move(queueing), 400));
    p["utilization"] = PairsJson(UtilizationSeries(*results[i], 800));
    p["waiting"] = PairsJson(WaitingSeries(*results[i], 800));
    if (!base_jct.empty()) {
      p["jct_ratio_cdf"] = PairsJson(Cdf(std::move(ratio), 400));
    }
  }
  return data;
}

std::string FormatSummaryTable(const std::vector<Summary>& summaries,
                               const std::string& baseline) {
  const Summary* base = nullptr;
  for (const Summary& s : summaries) {
    if (s.policy == baseline) base = &s;
  }
  auto ratio = [](double a, double b) {
    return b > 0 ? absl::StrFormat("%.2f", a / b) : std::string(kNoValue);
  };
  int width = 15;  // the policy column, wider for a longer name
  for (const Summary& s : summaries) {
    width = std::max(width, static_cast<int>(s.policy.size()));
  }
  std::string out = absl::StrFormat(
      "%-*s %-12s %8s %9s %9s %9s %9s %9s %9s %8s %6s", width, "policy",
      "placement", "jobs", "avg JCT", "med JCT", "p95 JCT", "max JCT",
      "avg wait", "makespan", "preempt", "util");
  if (base) {
    absl::StrAppend(&out, absl::StrFormat(" %12s %12s",
                                          "avg/" + baseline, "p95/" + baseline));
  }
  out += "\n";
  for (const Summary& s : summaries) {
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%-*s %-12s %8s %9s %9s %9s %9s %9s %9s %8s %6s", width, s.policy,
            s.placement, FormatCount(s.jobs), FormatDuration(s.avg_jct_s),
            FormatDuration(s.median_jct_s), FormatDuration(s.p95_jct_s),
            FormatDuration(s.max_jct_s), FormatDuration(s.avg_queueing_s),
            FormatDuration(s.makespan_s), FormatCount(s.preemptions),
            FormatPercent(s.gpu_utilization)));
    if (base) {
      absl::StrAppend(&out,
                      absl::StrFormat(" %12s %12s",
                                      ratio(s.avg_jct_s, base->avg_jct_s),
                                      ratio(s.p95_jct_s, base->p95_jct_s)));
    }
    out += "\n";
  }
  // Footer: the PACKLIMIT each learning run ended with.
  for (const Summary& s : summaries) {
    if (!s.learnt_pack_limit) continue;
    absl::StrAppend(
        &out, absl::StrFormat("\n%s: learnt PACKLIMIT %.3f from %d samples "
                              "(%s, %d placer changes)",
                              s.policy, *s.learnt_pack_limit,
                              s.pack_limit_samples, s.pack_limit_fit,
                              s.pack_limit_updates));
  }
  if (std::any_of(summaries.begin(), summaries.end(), [](const Summary& s) {
        return s.learnt_pack_limit.has_value();
      })) {
    out += "\n";
  }
  return out;
}

std::string FormatFairnessTable(const std::vector<Summary>& summaries) {
  std::string out = absl::StrFormat(
      "%-15s %-12s %9s %9s %9s %8s %8s %6s %12s\n", "fairness", "placement",
      "avg slow", "p95 slow", "max slow", "FTF max", "FTF>1", "Jain",
      "longest wait");
  for (const Summary& s : summaries) {
    const FairnessSummary& f = s.fairness;
    absl::StrAppend(
        &out, absl::StrFormat("%-15s %-12s %9.2f %9.2f %9.1f %8.2f %8s %6.3f "
                              "%12s\n",
                              s.policy, s.placement, f.avg_slowdown,
                              f.p95_slowdown, f.max_slowdown, f.ftf_max,
                              FormatPercent(f.ftf_over_1_share),
                              f.jain_slowdown,
                              FormatDuration(f.longest_wait_s)));
  }
  return out;
}

std::string SummaryCsvColumns() {
  return "policy,placement,jobs,avg_jct_s,median_jct_s,p95_jct_s,max_jct_s,"
         "avg_queueing_s,makespan_s,preemptions,preemption_overhead_s,"
         "gpu_utilization,avg_slowdown,p95_slowdown,max_slowdown,ftf_max,"
         "ftf_over_1_share,jain_slowdown,longest_wait_s";
}

std::string SummaryCsvRow(const Summary& s) {
  const FairnessSummary& f = s.fairness;
  return absl::StrFormat(
      "%s,%s,%d,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%d,%.10g,%.6g,%.6g,%.6g,"
      "%.6g,%.6g,%.6g,%.6g,%.10g",
      s.policy, s.placement, s.jobs, s.avg_jct_s, s.median_jct_s, s.p95_jct_s,
      s.max_jct_s, s.avg_queueing_s, s.makespan_s, s.preemptions,
      s.preemption_overhead_s, s.gpu_utilization, f.avg_slowdown,
      f.p95_slowdown, f.max_slowdown, f.ftf_max, f.ftf_over_1_share,
      f.jain_slowdown, f.longest_wait_s);
}

std::string SummaryCsv(const std::vector<Summary>& summaries) {
  std::string out = SummaryCsvColumns() + "\n";
  for (const Summary& s : summaries) {
    absl::StrAppend(&out, SummaryCsvRow(s), "\n");
  }
  return out;
}

std::string JobsCsv(const SimResult& result) {
  std::string out =
      "id,gpus,model,submit_s,first_start_s,end_s,jct_s,queueing_s,"
      "executed_s,overhead_s,preemptions,promotions,final_queue,slowdown,"
      "ftf,active_jobs\n";
  const std::vector<JobFairness> fairness = PerJobFairness(result.jobs);
  auto optional = [](const std::optional<double>& v) {
    return v ? absl::StrFormat("%.6g", *v) : std::string();
  };
  for (size_t i = 0; i < result.jobs.size(); ++i) {
    const JobResult& j = result.jobs[i];
    const JobFairness& f = fairness[i];
    absl::StrAppend(
        &out,
        absl::StrFormat(
            "%d,%d,%s,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.6g,%d,%d,%d,%s,"
            "%s,%.6g\n",
            j.id, j.gpus, j.model, j.submit, j.first_start, j.end, j.jct(),
            j.queueing(), j.executed, j.overhead, j.preemptions, j.promotions,
            j.final_queue, optional(f.slowdown), optional(f.ftf),
            f.active_jobs));
  }
  return out;
}

std::string TimeseriesCsv(const SimResult& result) {
  std::string out = "time_s,busy_gpus,pending_jobs,running_jobs\n";
  for (const TimePoint& p : result.timeseries) {
    absl::StrAppend(&out, absl::StrFormat("%.10g,%d,%d,%d\n", p.time,
                                          p.busy_gpus, p.pending_jobs,
                                          p.running_jobs));
  }
  return out;
}

}  // namespace tiresias

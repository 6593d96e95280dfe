#include "report/html_report.h"

#include "report/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/embedded_assets.h"
#include "report/html_format.h"

namespace tiresias {
namespace {

using nlohmann::json;

struct BinInfo {
  const char* key;
  const char* label;
};
// First letter: small/large GPU count; second: short/long duration.
constexpr std::array<BinInfo, 4> kBins = {{{"SS", "Small &amp; short"},
                                           {"SL", "Small &amp; long"},
                                           {"LS", "Large &amp; short"},
                                           {"LL", "Large &amp; long"}}};

// object[key] if it is a finite number.
std::optional<double> Number(const json& object, const char* key) {
  if (!object.is_object()) return std::nullopt;
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  if (!std::isfinite(value)) return std::nullopt;
  return value;
}

// object[key] as display text (unescaped); empty if absent or not a scalar.
std::string Text(const json& object, const char* key) {
  if (!object.is_object()) return "";
  auto it = object.find(key);
  if (it == object.end()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number() || it->is_boolean()) return it->dump();
  return "";
}

const json& Member(const json& object, const char* key) {
  static const json* const kNull = new json();
  if (!object.is_object()) return *kNull;
  auto it = object.find(key);
  return it == object.end() ? *kNull : *it;
}

const json& Policies(const json& data) {
  static const json* const kEmpty = new json(json::array());
  const json& policies = Member(data, "policies");
  return policies.is_array() ? policies : *kEmpty;
}

std::string PolicyName(const json& policy, size_t index) {
  std::string name = Text(policy, "name");
  return name.empty() ? absl::StrCat("policy ", index + 1) : name;
}

// A right-aligned cell. `shown` is escaped; `tooltip`, if not empty, goes
// in the title attribute (escaped too).
std::string NumCell(std::string_view shown, std::string_view tooltip = "",
                    std::string_view extra_class = "") {
  std::string cell = "<td class=\"num";
  if (!extra_class.empty()) {
    cell += ' ';
    cell += extra_class;
  }
  cell += "\"";
  if (!tooltip.empty()) {
    absl::StrAppend(&cell, " title=\"", EscapeHtml(tooltip), "\"");
  }
  absl::StrAppend(&cell, ">", EscapeHtml(shown), "</td>");
  return cell;
}

// A duration cell: friendly text; exact seconds, then `more`, on hover.
std::string DurationCell(std::optional<double> seconds,
                         std::string_view extra_class = "",
                         const std::string& more = "") {
  if (!seconds) return NumCell(kNoValue, "", extra_class);
  std::string tooltip = absl::StrFormat("%.1f s", *seconds);
  if (!more.empty()) absl::StrAppend(&tooltip, "; ", more);
  return NumCell(FormatDuration(*seconds), tooltip, extra_class);
}

std::string CountCell(std::optional<double> count,
                      std::string_view tooltip = "",
                      std::string_view extra_class = "") {
  return NumCell(count ? FormatCount(*count) : std::string(kNoValue), tooltip,
                 extra_class);
}

std::string RenderMeta(const json& data) {
  std::vector<std::pair<std::string, std::string>> rows;  // label, html
  auto add_text = [&](const char* label, const std::string& text, bool code) {
    if (text.empty()) return;
    rows.emplace_back(label, code ? "<code>" + EscapeHtml(text) + "</code>"
                                  : EscapeHtml(text));
  };
  add_text("Command", Text(data, "command"), true);
  add_text("Trace", Text(data, "trace"), true);
  const json& cluster = Member(data, "cluster");
  std::string cluster_text = Text(cluster, "description");
  std::vector<std::string> sizes;
  if (auto servers = Number(cluster, "servers")) {
    sizes.push_back(FormatCount(*servers) + " servers");
  }
  if (auto gpus = Number(cluster, "gpus")) {
    sizes.push_back(FormatCount(*gpus) + " GPUs");
  }
  if (!sizes.empty()) {
    std::string joined = absl::StrJoin(sizes, ", ");
    cluster_text = cluster_text.empty()
                       ? joined
                       : absl::StrCat(cluster_text, " (", joined, ")");
  }
  add_text("Cluster", cluster_text, false);
  add_text("Seed", Text(data, "seed"), false);
  add_text("Baseline", Text(data, "baseline"), false);
  if (auto warmup = Number(data, "warmup_s"); warmup && *warmup > 0) {
    add_text("Warm-up",
             absl::StrCat("jobs submitted in the first ",
                          FormatDuration(*warmup),
                          " ran but are left out of the metrics"),
             false);
  }
  add_text("Version", Text(data, "version"), false);
  if (rows.empty()) return "";
  std::string html = "<dl class=\"meta\">\n";
  for (const auto& [label, value] : rows) {
    absl::StrAppend(&html, "<dt>", label, "</dt><dd>", value, "</dd>\n");
  }
  html += "</dl>\n";
  return html;
}

// One row of the summary table. `ratio` is the avg JCT normalized to the
// baseline; the column exists only if `with_ratio`.
std::string SummaryRow(const json& policy, const std::string& name,
                       bool is_baseline, bool with_ratio,
                       std::optional<double> ratio) {
  std::string html = absl::StrCat(
      "<tr data-policy=\"", EscapeHtml(name), "\"",
      is_baseline ? " class=\"baseline\"" : "", "><td><span class=\"policy\">",
      EscapeHtml(name), "</span>",
      is_baseline ? " <span class=\"tag\">baseline</span>" : "", "</td>");
  html += CountCell(Number(policy, "jobs"));
  html += DurationCell(Number(policy, "avg_jct_s"));
  html += DurationCell(Number(policy, "median_jct_s"));
  std::optional<double> max_jct = Number(policy, "max_jct_s");
  html += DurationCell(Number(policy, "p95_jct_s"));
  html += DurationCell(max_jct);
  html += DurationCell(Number(policy, "avg_queueing_s"));
  html += DurationCell(Number(policy, "makespan_s"));
  std::optional<double> overhead = Number(policy, "preemption_overhead_s");
  html += CountCell(Number(policy, "preemptions"));
  html += DurationCell(overhead);
  std::optional<double> utilization = Number(policy, "gpu_utilization");
  html += NumCell(utilization ? FormatPercent(*utilization)
                              : std::string(kNoValue));
  if (with_ratio && ratio) {
    absl::StrAppend(&html, "<td class=\"num\" data-normalized-jct=\"",
                    absl::StrFormat("%.4f", *ratio), "\">",
                    absl::StrFormat("%.2f\xc3\x97", *ratio), "</td>");
  } else if (with_ratio) {
    html += NumCell(kNoValue);
  }
  html += "</tr>\n";
  return html;
}

std::string RenderSummary(const json& data) {
  const json& policies = Policies(data);
  const std::string baseline = Text(data, "baseline");
  const std::vector<std::optional<double>> normalized = NormalizedAvgJcts(data);
  const bool has_baseline = !normalized.empty();

  std::string html =
      "<section id=\"summary\">\n<h2>Summary</h2>\n<div "
      "class=\"table-wrap\"><table>\n<thead><tr>"
      "<th>Policy</th><th class=\"num\">Jobs</th>"
      "<th class=\"num\">Avg JCT</th><th class=\"num\">Median JCT</th>"
      "<th class=\"num\">p95 JCT</th><th class=\"num\">Max JCT</th>"
      "<th class=\"num\">Avg queueing</th>"
      "<th class=\"num\">Makespan</th><th class=\"num\">Preemptions</th>"
      "<th class=\"num\">Preemption overhead</th>"
      "<th class=\"num\">GPU utilization</th>";
  if (has_baseline) {
    absl::StrAppend(&html, "<th class=\"num\">Avg JCT vs ",
                    EscapeHtml(baseline), "</th>");
  }
  html += "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string name = PolicyName(policies[i], i);
    html +=
        SummaryRow(policies[i], name, has_baseline && name == baseline,
                   has_baseline, has_baseline ? normalized[i] : std::nullopt);
  }
  html += "</tbody>\n</table></div>\n";
  if (policies.empty()) {
    html += "<p class=\"note\">No policies in the input.</p>\n";
  }
  // A PACKLIMIT learnt during a run (--learn-pack-limit), as the printed
  // table's footer says it.
  for (size_t i = 0; i < policies.size(); ++i) {
    const json& pack = Member(policies[i], "pack_limit");
    std::optional<double> learnt = Number(pack, "learnt");
    if (!learnt) continue;
    absl::StrAppend(
        &html, "<p class=\"note\" data-pack-limit>",
        EscapeHtml(PolicyName(policies[i], i)),
        absl::StrFormat(": learnt PACKLIMIT %.3f from %s samples (", *learnt,
                        Text(pack, "samples")),
        EscapeHtml(Text(pack, "fit")), ", ", EscapeHtml(Text(pack, "updates")),
        " placer changes)</p>\n");
  }
  if (!baseline.empty() && !has_baseline) {
    absl::StrAppend(&html, "<p class=\"note\">Baseline policy &ldquo;",
                    EscapeHtml(baseline),
                    "&rdquo; is not among the policies run.</p>\n");
  }
  html += "</section>\n";
  return html;
}

std::string RenderFigure(const char* id, const char* heading,
                         const std::string& caption) {
  return absl::StrCat("<figure>\n<h3>", heading,
                      "</h3>\n<div class=\"chart\"><canvas id=\"", id,
                      "\" role=\"img\" aria-label=\"", heading,
                      "\"></canvas></div>\n<figcaption>", caption,
                      "</figcaption>\n</figure>\n");
}

std::string RenderCharts(const json& data) {
  std::optional<double> gpus = Number(Member(data, "cluster"), "gpus");
  std::string html = "<section id=\"charts\">\n<h2>Charts</h2>\n";
  html += RenderFigure(
      "jct-cdf", "Job completion time (CDF)",
      "Fraction of jobs whose completion time (arrival to finish) is at most "
      "x. Logarithmic x axis; values under 1&nbsp;s are drawn at 1&nbsp;s.");
  html += RenderFigure(
      "queueing-cdf", "Queueing delay (CDF)",
      "Fraction of jobs whose total time waiting for GPUs is at most x. "
      "Logarithmic x axis: delays under 1&nbsp;s, including the many zero "
      "delays, are drawn at 1&nbsp;s.");
  html += RenderFigure(
      "jct-tail", "Job completion time, the tail (1 &minus; CDF)",
      "Fraction of jobs whose completion time exceeds x, both axes "
      "logarithmic: the slowest jobs, which a CDF squeezes into its top.");
  html += RenderFigure(
      "queueing-tail", "Queueing delay, the tail (1 &minus; CDF)",
      "Fraction of jobs that waited longer than x, both axes logarithmic.");
  html += RenderFigure(
      "jct-ratio", "Per-job JCT against the baseline (CDF)",
      "For each job, its completion time over its completion time under the "
      "baseline policy; left of 1, the job finished sooner. Logarithmic x "
      "axis.");
  html += RenderFigure(
      "utilization", "Busy GPUs and waiting jobs over time",
      absl::StrCat(
          gpus ? absl::StrCat("GPUs running a job, of ", FormatCount(*gpus),
                              " in the cluster (the dashed capacity line)")
               : std::string("GPUs running a job"),
          "; waiting jobs (dotted) on the right axis; x in hours since the "
          "start of the trace. With many policies only the first four (and "
          "the baseline) are drawn at first: click a name in the legend to "
          "show or hide its lines."));
  html += RenderFigure("bins-chart", "Average JCT per bin",
                       "The per-bin table below as bars (logarithmic axis).");
  html += "</section>\n";
  return html;
}

std::string RenderBins(const json& data) {
  const json& policies = Policies(data);
  std::string html =
      "<section id=\"bins\">\n<h2>Per-bin results</h2>\n<div "
      "class=\"table-wrap\"><table>\n<thead>\n"
      "<tr><th rowspan=\"2\">Policy</th>";
  for (const BinInfo& bin : kBins) {
    absl::StrAppend(&html, "<th class=\"group\" colspan=\"2\">", bin.key,
                    " &middot; ", bin.label, "</th>");
  }
  html += "</tr>\n<tr>";
  for (size_t b = 0; b < kBins.size(); ++b) {
    html +=
        "<th class=\"num first-of-group\">Jobs</th>"
        "<th class=\"num\">Avg JCT</th>";
  }
  html += "</tr>\n</thead>\n<tbody>\n";
  for (size_t i = 0; i < policies.size(); ++i) {
    const json& policy = policies[i];
    const std::string name = PolicyName(policy, i);
    absl::StrAppend(&html, "<tr data-policy=\"", EscapeHtml(name), "\"><td>",
                    EscapeHtml(name), "</td>");
    const json& bins = Member(policy, "bins");
    for (const BinInfo& bin : kBins) {
      const json& stats = Member(bins, bin.key);
      std::vector<std::string> details;
      if (auto p95 = Number(stats, "p95_jct_s")) {
        details.push_back("p95 JCT " + FormatDuration(*p95));
      }
      if (auto queueing = Number(stats, "avg_queueing_s")) {
        details.push_back("avg queueing " + FormatDuration(*queueing));
      }
      html += CountCell(Number(stats, "jobs"), "", "first-of-group");
      std::optional<double> avg = Number(stats, "avg_jct_s");
      html += NumCell(avg ? FormatDuration(*avg) : std::string(kNoValue),
                      absl::StrJoin(details, "; "));
    }
    html += "</tr>\n";
  }
  html +=
      "</tbody>\n</table></div>\n<p class=\"note\">Bins split jobs by GPU "
      "count "
      "(first letter: <b>S</b>mall or <b>L</b>arge) and by duration "
      "(second letter: <b>S</b>hort or <b>L</b>ong).";
  const std::string definition = Text(data, "bin_definition");
  if (!definition.empty()) absl::StrAppend(&html, " ", EscapeHtml(definition));
  html +=
      " Hover a cell for p95 JCT and average queueing delay.</p>\n"
      "</section>\n";
  return html;
}

// Fairness (sim/fairness.h), one row per policy.
std::string RenderFairness(const json& data) {
  const json& policies = Policies(data);
  std::string html =
      "<section id=\"fairness\">\n<h2>Fairness</h2>\n<div "
      "class=\"table-wrap\"><table>\n<thead><tr><th>Policy</th>"
      "<th class=\"num\">Avg slowdown</th>"
      "<th class=\"num\">p95 slowdown</th>"
      "<th class=\"num\">Max slowdown</th><th class=\"num\">Max FTF</th>"
      "<th class=\"num\">Jobs with FTF &gt; 1</th>"
      "<th class=\"num\">Jain (slowdown)</th>"
      "<th class=\"num\">Longest wait</th></tr></thead>\n<tbody>\n";
  auto fixed = [](std::optional<double> v, int digits) {
    return NumCell(v ? absl::StrFormat("%.*f", digits, *v)
                     : std::string(kNoValue));
  };
  for (size_t i = 0; i < policies.size(); ++i) {
    const std::string name = PolicyName(policies[i], i);
    const json& f = Member(policies[i], "fairness");
    absl::StrAppend(&html, "<tr data-policy=\"", EscapeHtml(name), "\"><td>",
                    EscapeHtml(name), "</td>");
    html += fixed(Number(f, "avg_slowdown"), 2);
    html += fixed(Number(f, "p95_slowdown"), 2);
    html += fixed(Number(f, "max_slowdown"), 1);
    html += fixed(Number(f, "ftf_max"), 2);
    std::optional<double> over = Number(f, "ftf_over_1_share");
    html += NumCell(over ? FormatPercent(*over) : std::string(kNoValue));
    html += fixed(Number(f, "jain_slowdown"), 3);
    html += DurationCell(Number(f, "longest_wait_s"));
    html += "</tr>\n";
  }
  html +=
      "</tbody>\n</table></div>\n<p class=\"note\">Slowdown: a job's "
      "completion time over its run time alone. FTF: finish-time fairness "
      "(Themis), completion time over the run time the job would have with "
      "1/N of the cluster, N the average number of active jobs over its "
      "life; above 1, the job did worse than an equal share. Jain's index "
      "over slowdowns is 1 when every job is slowed down alike.</p>\n"
      "</section>\n";
  return html;
}

}  // namespace

std::string ChartScripts(const json& data, std::string_view page_js) {
  std::string html = "<script type=\"application/json\" id=\"report-data\">";
  html += JsonForScriptBlock(data);
  html +=
      "</script>\n"
      "<script>window.addEventListener('error', function (e) {"
      " document.body.dataset.chartsError ="
      " String(e.message || 'script error'); });</script>\n"
      "<script>\n/* Chart.js, MIT License, vendored from npm in "
      "third_party/chartjs/ */\n";
  html += ChartJs();
  html += "\n</script>\n<script>\n";
  html += ReportFormatJs();
  html += "\n";
  html += page_js;
  html += "\n</script>\n";
  return html;
}

std::vector<std::optional<double>> NormalizedAvgJcts(const json& data) {
  const json& policies = Policies(data);
  const std::string baseline = Text(data, "baseline");
  if (baseline.empty()) return {};
  const json* base = nullptr;
  for (size_t i = 0; i < policies.size(); ++i) {
    if (PolicyName(policies[i], i) == baseline) {
      base = &policies[i];
      break;
    }
  }
  if (base == nullptr) return {};
  std::optional<double> base_jct = Number(*base, "avg_jct_s");
  std::vector<std::optional<double>> out;
  out.reserve(policies.size());
  for (const json& policy : policies) {
    std::optional<double> jct = Number(policy, "avg_jct_s");
    if (jct && base_jct && *base_jct > 0) {
      out.push_back(*jct / *base_jct);
    } else {
      out.push_back(std::nullopt);
    }
  }
  return out;
}

std::string RenderHtmlReport(const json& data) {
  std::string title = Text(data, "title");
  if (title.empty()) title = "Tiresias simulation";
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<title>",
      EscapeHtml(title), "</title>\n<style>\n");
  html += ReportPageCss();
  absl::StrAppend(&html, "</style>\n</head>\n<body>\n<header>\n<h1>",
                  EscapeHtml(title), "</h1>\n", RenderMeta(data),
                  "</header>\n<main>\n");
  html += RenderSummary(data);
  html += RenderCharts(data);
  html += RenderBins(data);
  html += RenderFairness(data);
  html +=
      "</main>\n<noscript><p class=\"note\">The charts need JavaScript "
      "(no network: it is all in this file).</p></noscript>\n";
  html += ChartScripts(data, ReportPageJs());
  html += "</body>\n</html>\n";
  return html;
}

absl::Status WriteHtmlReport(const json& data, const std::string& path) {
  if (!data.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("report data for ", path, ": expected a JSON object, got ",
                     data.type_name()));
  }
  if (data.contains("policies") && !data["policies"].is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "report data for ", path, ": field 'policies': expected an array, got ",
        data["policies"].type_name()));
  }
  const std::string html = RenderHtmlReport(data);

  return WriteFileAtomically(path, html);
}

}  // namespace tiresias

#include "report/sweep_report.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "report/embedded_assets.h"
#include "report/files.h"
#include "report/html_format.h"
#include "report/html_report.h"

namespace tiresias {
namespace {

using nlohmann::json;

// The value shown for `key` in run `r`: "-" when it does not matter to it.
std::string Shown(const SweepRun& r, const std::string& key,
                  const std::string& value) {
  return r.ignored_keys.contains(key) ? "-" : value;
}

// The metrics sweep.html plots: JSON path, title, and whether the value is
// a duration (seconds) or a plain number.
struct Metric {
  const char* group;  // "" or "fairness"
  const char* key;
  const char* title;
  bool seconds;
};
constexpr Metric kMetrics[] = {
    {"", "avg_jct_s", "Average JCT", true},
    {"", "p95_jct_s", "p95 JCT", true},
    {"", "avg_queueing_s", "Average queueing delay", true},
    {"", "makespan_s", "Makespan", true},
    {"", "preemptions", "Preemptions", false},
    {"", "gpu_utilization", "GPU utilization", false},
    {"fairness", "max_slowdown", "Max slowdown", false},
    {"fairness", "jain_slowdown", "Jain's index (slowdown)", false},
};

double MetricOf(const json& summary, const Metric& m) {
  const json& holder = m.group[0] ? summary.value(m.group, json::object())
                                  : summary;
  const auto it = holder.find(m.key);
  return it != holder.end() && it->is_number() ? it->get<double>() : 0;
}

// The plot data: {"x_key", "x": [labels], "seeds": n, "charts": [{"title",
// "seconds", "series": [{"label", "mean": [...], "min": [...], "max":
// [...]}]}]}. Values are null where a series has no run at that x.
json PlotData(const json& doc) {
  const json& sweep = doc.at("sweep");
  std::vector<std::string> keys;
  std::map<std::string, std::vector<std::string>> values;  // in grid order
  for (const json& entry : sweep) {
    for (const auto& [key, value] : entry.at("settings").items()) {
      if (!values.contains(key)) keys.push_back(key);
      std::vector<std::string>& seen = values[key];
      const std::string v = value.get<std::string>();
      if (std::find(seen.begin(), seen.end(), v) == seen.end()) {
        seen.push_back(v);
      }
    }
  }
  std::string x_key;
  for (const std::string& k : keys) {
    if (k != "seed" && values[k].size() > 1) {
      x_key = k;
      break;
    }
  }
  const bool seeds_swept = values.contains("seed") && values["seed"].size() > 1;
  if (x_key.empty()) x_key = keys.empty() ? "" : keys.front();
  const std::vector<std::string>& xs = values[x_key];
  // Series: the policy and every key but x and seed; cells: x -> values.
  std::map<std::string, std::map<std::string, std::vector<const json*>>> cells;
  std::vector<std::string> order;
  for (const json& entry : sweep) {
    const json& settings = entry.at("settings");
    const json& summary = entry.at("summary");
    std::vector<std::string> parts = {summary.value("name", "?")};
    std::set<std::string> ignored;
    for (const json& k : entry.value("ignored_keys", json::array())) {
      ignored.insert(k.get<std::string>());
    }
    for (const std::string& k : keys) {
      if (k == x_key || k == "seed" || ignored.contains(k)) continue;
      parts.push_back(absl::StrCat(k, "=", settings.value(k, "")));
    }
    const std::string label = absl::StrJoin(parts, ", ");
    if (!cells.contains(label)) order.push_back(label);
    cells[label][settings.value(x_key, "")].push_back(&summary);
  }
  json charts = json::array();
  for (const Metric& m : kMetrics) {
    json series = json::array();
    for (const std::string& label : order) {
      json mean = json::array(), lo = json::array(), hi = json::array();
      for (const std::string& x : xs) {
        auto it = cells[label].find(x);
        if (it == cells[label].end()) {
          mean.push_back(nullptr);
          lo.push_back(nullptr);
          hi.push_back(nullptr);
          continue;
        }
        double sum = 0, min = 0, max = 0;
        for (size_t i = 0; i < it->second.size(); ++i) {
          const double v = MetricOf(*it->second[i], m);
          sum += v;
          min = i == 0 ? v : std::min(min, v);
          max = i == 0 ? v : std::max(max, v);
        }
        mean.push_back(sum / it->second.size());
        lo.push_back(min);
        hi.push_back(max);
      }
      series.push_back(
          {{"label", label}, {"mean", mean}, {"min", lo}, {"max", hi}});
    }
    charts.push_back(
        {{"title", m.title}, {"seconds", m.seconds}, {"series", series}});
  }
  return {{"x_key", x_key},
          {"x", xs},
          {"seeds", seeds_swept ? values["seed"].size() : 1},
          {"charts", charts}};
}

}  // namespace

json SweepJson(const RunInfo& info, const std::vector<SweepRun>& runs) {
  json doc = SummaryJson(info, {});
  doc.erase("policies");
  json sweep = json::array();
  for (const SweepRun& r : runs) {
    json settings = json::object();
    for (const auto& [k, v] : r.settings) settings[k] = v;
    sweep.push_back(
        {{"settings", settings},
         {"summary", SummaryJson(info, {r.summary})["policies"][0]},
         {"ignored_keys", r.ignored_keys},
         {"same_as", r.same_as >= 0 ? json(r.same_as) : json(nullptr)},
         {"excluded_jobs", r.excluded_jobs}});
  }
  doc["sweep"] = sweep;
  return doc;
}

std::string SweepCsv(const std::vector<SweepRun>& runs) {
  std::string out;
  if (runs.empty()) return SummaryCsvColumns() + "\n";
  for (const auto& [key, value] : runs.front().settings) {
    absl::StrAppend(&out, key, ",");
  }
  absl::StrAppend(&out, SummaryCsvColumns(), "\n");
  for (const SweepRun& r : runs) {
    if (r.same_as >= 0) continue;
    for (const auto& [key, value] : r.settings) {
      absl::StrAppend(&out, Shown(r, key, value), ",");
    }
    absl::StrAppend(&out, SummaryCsvRow(r.summary), "\n");
  }
  return out;
}

std::string FormatSweepTable(const std::vector<SweepRun>& runs,
                             const std::string& baseline) {
  std::string out;
  if (runs.empty()) return out;
  for (const auto& [key, value] : runs.front().settings) {
    absl::StrAppend(&out, absl::StrFormat("%-14s", key));
  }
  absl::StrAppend(&out, absl::StrFormat("%-15s %9s %9s %9s %8s %6s %9s %12s\n",
                                        "policy", "avg JCT", "p95 JCT",
                                        "avg wait", "preempt", "util",
                                        "max slow", "avg/" + baseline));
  for (const SweepRun& r : runs) {
    if (r.same_as >= 0) continue;
    double base_avg = 0;
    for (const SweepRun& other : runs) {
      if (other.settings == r.settings && other.summary.policy == baseline) {
        base_avg = other.summary.avg_jct_s;
      }
    }
    for (const auto& [key, value] : r.settings) {
      absl::StrAppend(&out, absl::StrFormat("%-14s", Shown(r, key, value)));
    }
    const Summary& s = r.summary;
    absl::StrAppend(
        &out,
        absl::StrFormat("%-15s %9s %9s %9s %8s %6s %9.1f %12s\n", s.policy,
                        FormatDuration(s.avg_jct_s),
                        FormatDuration(s.p95_jct_s),
                        FormatDuration(s.avg_queueing_s),
                        FormatCount(s.preemptions),
                        FormatPercent(s.gpu_utilization),
                        s.fairness.max_slowdown,
                        base_avg > 0
                            ? absl::StrFormat("%.2f", s.avg_jct_s / base_avg)
                            : std::string(kNoValue)));
  }
  return out;
}

std::string RenderSweepReport(const json& doc) {
  json data = doc;
  data["plot"] = PlotData(doc);
  const json& plot = data["plot"];
  std::string html = absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, "
      "initial-scale=1\">\n<title>Tiresias sweep</title>\n<style>\n",
      std::string(ReportPageCss()),
      "</style>\n</head>\n<body>\n<header>\n<h1>Tiresias sweep</h1>\n"
      "<dl class=\"meta\">\n<dt>Trace</dt><dd>",
      EscapeHtml(doc.value("trace", "")), "</dd>\n<dt>Command</dt><dd><code>",
      EscapeHtml(doc.value("command", "")), "</code></dd>\n<dt>Swept</dt><dd>",
      EscapeHtml(plot.value("x_key", "")), " on the x axis",
      plot.value("seeds", 1) > 1
          ? absl::StrCat("; mean of ", plot.value("seeds", 1),
                         " seeds, the band from min to max")
          : std::string(),
      "</dd>\n</dl>\n</header>\n<main>\n<section id=\"sweep-charts\">\n");
  int index = 0;
  for (const json& chart : plot["charts"]) {
    absl::StrAppend(&html, "<figure>\n<h3>",
                    EscapeHtml(chart.value("title", "")),
                    "</h3>\n<div class=\"chart\"><canvas id=\"sweep-", index++,
                    "\" role=\"img\" aria-label=\"",
                    EscapeHtml(chart.value("title", "")),
                    "\"></canvas></div>\n</figure>\n");
  }
  html +=
      "</section>\n<p class=\"note\">sweep.csv and sweep.json beside this "
      "page hold every number. A policy that no swept key affects ran once "
      "per value of the others.</p>\n</main>\n";
  html += ChartScripts(data, SweepPageJs());
  html += "</body>\n</html>\n";
  return html;
}

absl::Status WriteSweepReport(const json& doc, const std::string& path) {
  if (!doc.is_object() || !doc.contains("sweep") || !doc["sweep"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sweep data for ", path, ": expected an object with a "
                     "'sweep' array"));
  }
  return WriteFileAtomically(path, RenderSweepReport(doc));
}

}  // namespace tiresias

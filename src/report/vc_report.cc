#include "report/vc_report.h"

#include <algorithm>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "report/html_format.h"

namespace tiresias {
namespace {

constexpr int kLabelWidth = 190;  // VC name and quota
constexpr int kBarSpace = 460;    // the longest bar
constexpr int kRowHeight = 30;    // two bars of 11 and a gap

double Hours(const nlohmann::json& row, std::string_view key) {
  return row.contains(key) ? row[std::string(key)].get<double>() / 3600 : 0;
}

std::string SummaryTable(const nlohmann::json& summaries) {
  std::string out =
      "<table><tr><th>run</th><th>jobs</th><th>avg JCT</th><th>p95 JCT</th>"
      "<th>avg wait</th><th>preemptions</th><th>GPU utilization</th></tr>";
  for (const nlohmann::json& s : summaries) {
    absl::StrAppend(
        &out, "<tr><td>", EscapeHtml(s["name"].get<std::string>()), "</td><td>",
        FormatCount(s["jobs"].get<double>()), "</td><td>",
        FormatDuration(s["avg_jct_s"].get<double>()), "</td><td>",
        FormatDuration(s["p95_jct_s"].get<double>()), "</td><td>",
        FormatDuration(s["avg_queueing_s"].get<double>()), "</td><td>",
        FormatCount(s["preemptions"].get<double>()), "</td><td>",
        FormatPercent(s["gpu_utilization"].get<double>()), "</td></tr>");
  }
  return out + "</table>";
}

// Per VC with a quota: its shared bar (over the jobs that fit its private
// cluster) above its private one, in hours on one linear scale.
std::string QueueingChart(const nlohmann::json& rows) {
  double longest = 0;
  int bars = 0;
  for (const nlohmann::json& r : rows) {
    if (!r.contains("private_avg_queueing_s")) continue;
    ++bars;
    longest = std::max({longest, Hours(r, "shared_same_avg_queueing_s"),
                        Hours(r, "private_avg_queueing_s")});
  }
  if (bars == 0) return "<p>No VC has a quota.</p>";
  const double scale = longest > 0 ? kBarSpace / longest : 0;
  const int height = bars * kRowHeight + 30;
  std::string svg = absl::StrFormat(
      "<svg class=\"vc-chart\" role=\"img\" width=\"%d\" height=\"%d\" "
      "viewBox=\"0 0 %d %d\"><title>Average queueing delay per VC, shared "
      "against alone on its quota (hours)</title>",
      kLabelWidth + kBarSpace + 110, height, kLabelWidth + kBarSpace + 110,
      height);
  int y = 4;
  for (const nlohmann::json& r : rows) {
    if (!r.contains("private_avg_queueing_s")) continue;
    const double shared = Hours(r, "shared_same_avg_queueing_s");
    const double alone = Hours(r, "private_avg_queueing_s");
    const bool anomaly = shared > alone;
    absl::StrAppendFormat(
        &svg,
        "<g class=\"vc%s\" data-vc=\"%s\"><text x=\"0\" y=\"%d\">%s "
        "(%s)</text>"
        "<rect class=\"shared\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
        "height=\"11\"/><text x=\"%.1f\" y=\"%d\">%.2f h shared%s</text>"
        "<rect class=\"alone\" x=\"%d\" y=\"%d\" width=\"%.1f\" "
        "height=\"11\"/><text x=\"%.1f\" y=\"%d\">%.2f h alone</text></g>",
        anomaly ? " anomaly" : "", EscapeHtml(r["name"].get<std::string>()),
        y + 16, EscapeHtml(r["name"].get<std::string>()),
        EscapeHtml(r["cells"].get<std::string>()), kLabelWidth, y,
        shared * scale, kLabelWidth + shared * scale + 4, y + 10, shared,
        anomaly ? " (anomaly)" : "", kLabelWidth, y + 13, alone * scale,
        kLabelWidth + alone * scale + 4, y + 23, alone);
    y += kRowHeight;
  }
  absl::StrAppendFormat(&svg,
                        "<text x=\"%d\" y=\"%d\" class=\"legend\">blue: "
                        "shared, grey: alone on its quota (same jobs)</text>",
                        kLabelWidth, y + 16);
  return svg + "</svg>";
}

}  // namespace

std::string VcReportHtml(const nlohmann::json& doc) {
  std::string html = absl::StrCat(
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<title>Tiresias: virtual clusters</title><style>"
      "body{font:14px system-ui,sans-serif;margin:24px;max-width:1100px}"
      "table{border-collapse:collapse;margin:8px 0 16px}"
      "td,th{padding:3px 10px;border-bottom:1px solid #ddd;"
      "text-align:right;white-space:nowrap}"
      "td:first-child,th:first-child{text-align:left}"
      ".vc-chart text{font-size:12px}.vc-chart .shared{fill:#2f6fb0}"
      ".vc-chart .alone{fill:#a0a0a0}.vc-chart .anomaly text{fill:#b00020;"
      "font-weight:bold}</style></head><body><h1>Virtual clusters</h1><p>",
      EscapeHtml(doc.value("trace", "")), " on ",
      EscapeHtml(doc.value("cluster", "")), "; ", doc["vcs"].size(),
      " virtual clusters (", EscapeHtml(doc.value("vcs_source", "")), ").</p>");
  for (const auto& [policy, entry] : doc["policies"].items()) {
    absl::StrAppend(
        &html, "<h2>", EscapeHtml(policy), "</h2>",
        SummaryTable(entry["summaries"]), QueueingChart(entry["vcs"]), "<p>",
        entry.value("vcs_with_anomaly", 0), " of ", entry["vcs"].size(),
        " VCs wait longer shared than alone on their quota.</p>");
  }
  return html + "</body></html>\n";
}

}  // namespace tiresias

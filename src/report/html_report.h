// The HTML report of `tiresias simulate`: one self-contained page
// (report.html) that opens from disk with no network. It shows the run's
// provenance, a summary table, a per-bin table, and three Chart.js charts
// (JCT CDF, queueing-delay CDF, busy GPUs over time), one line per policy.
// Chart.js and the page's script are inlined; the data is inlined as JSON.
//
// Input: a JSON object, produced by the simulator's metrics. Every field is
// optional; a missing or mistyped one shows as an em dash (tables) or is
// left out (charts), never an error. Durations are seconds.
//
//   { "title": "Tiresias simulation",          // page title
//     "command": "tiresias simulate ...",      // the exact command line
//     "version": "0.1.0", "trace": "data/philly.csv", "seed": 1,
//     "cluster": { "description": "64 servers x 8 GPUs", "servers": 64,
//                  "gpus": 512 },              // gpus: top of the GPU chart
//     "baseline": "yarn-cs",   // policy whose avg JCT the others are
//                              // normalized to (column shown if present)
//     "bin_definition": "small: < 8 GPUs; short: < 4 h",  // optional note
//     "policies": [ {
//         "name": "tiresias-l", "jobs": 82247,
//         "avg_jct_s": 1.0, "median_jct_s": 1.0, "p95_jct_s": 1.0,
//         "max_jct_s": 1.0, "avg_queueing_s": 1.0, "makespan_s": 1.0,
//         "preemptions": 3, "preemption_overhead_s": 1.0,
//         "gpu_utilization": 0.7,                 // fraction, 0..1
//         "bins": { "SS": { "jobs": 10, "avg_jct_s": 1.0, "p95_jct_s": 1.0,
//                           "avg_queueing_s": 1.0 },
//                   "SL": {...}, "LS": {...}, "LL": {...} },
//             // first letter: Small/Large GPU count,
//             // second: Short/Long duration
//         "jct_cdf": [[jct_s, fraction], ...],        // <= ~500 points
//         "queueing_cdf": [[delay_s, fraction], ...], // <= ~500 points
//         "utilization": [[time_s, busy_gpus], ...]   // <= ~1000 points
//     } ] }
//
// The callers downsample the series; the page draws what it is given.
// Both CDFs use a logarithmic x axis, where values below 1 s (zero
// queueing delays, in particular) are drawn at 1 s and the caption says so.
//
// Page contract, relied on by tests and tooling: the canvases have ids
// "jct-cdf", "queueing-cdf" and "utilization"; the input JSON sits,
// unchanged, in <script type="application/json" id="report-data">; once
// every chart is built the script sets <body data-charts-rendered="3">, and
// on any script error it sets <body data-charts-error="message">.
//
// Thread-safe; no global state.
#ifndef TIRESIAS_REPORT_HTML_REPORT_H_
#define TIRESIAS_REPORT_HTML_REPORT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"

namespace tiresias {

// The number of charts a report page draws (the value of
// data-charts-rendered once it has drawn them).
inline constexpr int kReportChartCount = 7;

// The full page for `data` (schema above). Never fails: a non-object input
// gives a page with no policies.
std::string RenderHtmlReport(const nlohmann::json& data);

// What a report page ends with: `data` in the JSON block #report-data, an
// error hook that sets body.dataset.chartsError, Chart.js, report_format.js
// and then `page_js` (the page's own script). Shared with sweep.html.
std::string ChartScripts(const nlohmann::json& data, std::string_view page_js);

// Renders `data` and writes it to `path` durably: a temporary file in the
// same folder, fsync, rename over `path`, fsync of the folder. Readers see
// the old file or the new one, never a partial page. Fails with
// InvalidArgument if `data` is not an object or "policies" is present and
// not an array, and with the errno-derived code, naming the path, if the
// file cannot be written.
absl::Status WriteHtmlReport(const nlohmann::json& data,
                             const std::string& path);

// Each policy's avg_jct_s divided by the baseline policy's, in the order of
// data["policies"]; nullopt where either is missing, or the baseline's is
// not positive. Empty if there is no "baseline" or no policy of that name.
std::vector<std::optional<double>> NormalizedAvgJcts(
    const nlohmann::json& data);

}  // namespace tiresias

#endif  // TIRESIAS_REPORT_HTML_REPORT_H_

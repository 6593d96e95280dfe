// Test-only: a small hand-made report input (schema in html_report.h) with
// three policies on a 16-GPU cluster, shaped like a real run: long-tailed
// JCTs, many zero queueing delays, a busy-GPU curve over two days.
// Deterministic; shared by html_report_test and report_chromium_test.
#ifndef TIRESIAS_REPORT_REPORT_TEST_INPUT_H_
#define TIRESIAS_REPORT_REPORT_TEST_INPUT_H_

#include <algorithm>
#include <cmath>
#include <string>

#include "nlohmann/json.hpp"

namespace tiresias::report_test {

// A CDF of `points` points whose x grows geometrically from lo_s to hi_s;
// the first `zero_fraction` of jobs sit at x = 0.
inline nlohmann::json SampleCdf(double lo_s, double hi_s, double zero_fraction,
                                int points) {
  nlohmann::json cdf = nlohmann::json::array();
  if (zero_fraction > 0) cdf.push_back({0.0, zero_fraction});
  for (int i = 0; i < points; ++i) {
    const double t = static_cast<double>(i) / (points - 1);
    const double x = lo_s * std::pow(hi_s / lo_s, t);
    // An S-shaped rise in log x, ending at exactly 1.
    const double s = 0.5 - 0.5 * std::cos(t * M_PI);
    cdf.push_back({x, zero_fraction + (1 - zero_fraction) * s});
  }
  return cdf;
}

// Busy GPUs every 15 min for 48 h: a load wave capped at `gpus`.
inline nlohmann::json SampleUtilization(double gpus, double phase) {
  nlohmann::json series = nlohmann::json::array();
  for (int i = 0; i <= 48 * 4; ++i) {
    const double t_s = i * 900.0;
    const double wave = 0.65 + 0.3 * std::sin(t_s / 3600 / 7 + phase) +
                        0.1 * std::sin(t_s / 3600 * 1.3 + 2 * phase);
    const double busy = std::round(std::clamp(wave, 0.0, 1.0) * gpus);
    series.push_back({t_s, t_s > 44 * 3600 ? std::round(busy * 0.3) : busy});
  }
  return series;
}

inline nlohmann::json SampleBin(int jobs, double avg_jct_s) {
  return {{"jobs", jobs},
          {"avg_jct_s", avg_jct_s},
          {"p95_jct_s", avg_jct_s * 3.5},
          {"avg_queueing_s", avg_jct_s * 0.2}};
}

inline nlohmann::json SamplePolicy(const std::string& name, double scale,
                                   double zero_queueing, double phase) {
  return {
      {"name", name},
      {"jobs", 1250},
      {"avg_jct_s", 8280 * scale},
      {"median_jct_s", 900 * scale},
      {"p95_jct_s", 40000 * scale},
      {"max_jct_s", 200000 * scale},
      {"avg_queueing_s", 2460 * scale},
      {"makespan_s", 170000 + 2000 * scale},
      {"preemptions", static_cast<int>(300 * (2 - scale))},
      {"preemption_overhead_s", 5400 * (2 - scale)},
      {"gpu_utilization", 0.62 + 0.05 * scale},
      {"bins",
       {{"SS", SampleBin(700, 600 * scale)},
        {"SL", SampleBin(250, 30000 * scale)},
        {"LS", SampleBin(200, 1500 * scale)},
        {"LL", SampleBin(100, 90000 * scale)}}},
      {"jct_cdf", SampleCdf(20 * scale, 400000 * scale, 0, 120)},
      {"queueing_cdf", SampleCdf(2 * scale, 90000 * scale, zero_queueing, 100)},
      {"utilization", SampleUtilization(16, phase)}};
}

inline nlohmann::json SampleReportInput() {
  return {
      {"title", "Tiresias simulation"},
      {"command",
       "tiresias simulate --trace data/sample.csv --cluster 4x4 "
       "--policy tiresias-l,tiresias-g,yarn-cs --out out/sample"},
      {"version", "0.1.0"},
      {"trace", "data/sample.csv"},
      {"cluster",
       {{"description", "4 servers x 4 GPUs"}, {"servers", 4}, {"gpus", 16}}},
      {"seed", 1},
      {"baseline", "yarn-cs"},
      {"policies",
       {SamplePolicy("tiresias-l", 0.45, 0.55, 0.0),
        SamplePolicy("tiresias-g", 0.5, 0.5, 0.4),
        SamplePolicy("yarn-cs", 1.0, 0.3, 0.9)}}};
}

}  // namespace tiresias::report_test

#endif  // TIRESIAS_REPORT_REPORT_TEST_INPUT_H_

// The report.html that `tiresias simulate --out` writes, opened from disk in
// headless Chromium with networking off: every chart must draw without a
// script error. Skips when /usr/bin/chromium (or $TIRESIAS_CHROMIUM) is
// missing. tests/report/ checks the page itself on hand-made input; this
// checks the page the command writes for a real simulation.
#include <unistd.h>

#include <cstdlib>

#include "cli_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "report/html_report.h"

namespace tiresias::cli_test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The charts the page draws: JCT and queueing CDFs and tails, per-job JCT
// against the baseline, busy GPUs and waiting jobs, per-bin bars.
constexpr int kCharts = kReportChartCount;

std::string ChromiumPath() {
  const char* env = std::getenv("TIRESIAS_CHROMIUM");
  return env != nullptr && *env != '\0' ? env : "/usr/bin/chromium";
}

class SimulateReportTest : public CliTest {};

TEST_F(SimulateReportTest, ChromiumDrawsEveryChartOfTheWrittenReport) {
  const std::string chromium = ChromiumPath();
  if (access(chromium.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no Chromium at " << chromium
                 << " (apt-get install chromium, or set TIRESIAS_CHROMIUM)";
  }
  const fs::path out = dir_ / "out";
  const ProcessResult sim =
      Tiresias({"simulate", "--trace", trace_60_, "--cluster", "4x4",
                "--policy", "tiresias-l,yarn-cs,srtf", "--out", out.string()});
  ASSERT_EQ(sim.exit_code, 0) << Describe(sim);
  EXPECT_THAT(sim.out, HasSubstr("wrote " + out.string() + "/report.html"));
  const fs::path report = out / "report.html";
  ASSERT_TRUE(fs::exists(report));

  const fs::path profile = MakeDir("chromium-profile");
  const ProcessResult run = RunProcess(
      {chromium, "--headless", "--no-sandbox", "--disable-gpu",
       "--disable-quic", "--no-first-run", "--disable-background-networking",
       "--disable-component-update", "--disable-sync",
       "--user-data-dir=" + profile.string(), "--virtual-time-budget=5000",
       "--dump-dom", "file://" + report.string()},
      {.cwd = dir_, .timeout = std::chrono::seconds(60)});
  ASSERT_FALSE(run.timed_out) << "Chromium ran past 60 s\n" << Tail(run.err);
  ASSERT_EQ(run.exit_code, 0) << Tail(run.err);

  // The page reports through attributes of <body>; looking at that tag
  // alone keeps a failure short (the DOM holds all of Chart.js).
  const size_t start = run.out.find("<body");
  ASSERT_NE(start, std::string::npos) << "no <body> in the DOM dump\n"
                                      << Tail(run.err);
  const std::string body =
      run.out.substr(start, run.out.find('>', start) - start + 1);
  EXPECT_THAT(body, Not(HasSubstr("data-charts-error"))) << body << "\n"
                                                         << Tail(run.err);
  EXPECT_THAT(body, HasSubstr("data-charts-rendered=\"" +
                              std::to_string(kCharts) + "\""))
      << body << "\n"
      << Tail(run.err);
  // Each policy of the run is named on the page.
  for (const char* policy : {"tiresias-l", "yarn-cs", "srtf"}) {
    EXPECT_THAT(run.out, HasSubstr(policy));
  }
}

}  // namespace
}  // namespace tiresias::cli_test

// End-to-end check of the HTML report in a real browser: writes report.html
// for a small hand-made input, opens it from disk in headless Chromium with
// networking disabled, and checks that the page drew all its charts without
// a script error; then takes a screenshot and checks it is a real image.
//
// Uses /usr/bin/chromium, or the browser named by $TIRESIAS_CHROMIUM; skips
// when there is none. Set $TIRESIAS_REPORT_SCREENSHOT to a path to keep a
// copy of the screenshot for a human to look at.
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/testing/chromium.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "png_image.h"
#include "report/html_report.h"
#include "report/sweep_report.h"
#include "report/report_test_input.h"

namespace tiresias {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::chrono::seconds kChromiumTimeout{60};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

struct RunResult {
  bool timed_out = false;
  int exit_code = -1;  // -1 unless the process exited normally
  std::string out;
  std::string err;
};

// Runs `argv` in its own process group with stdout and stderr sent to files
// in `dir`; kills the whole group after `timeout`.
RunResult RunProcess(const std::vector<std::string>& argv, const fs::path& dir,
                     std::chrono::seconds timeout) {
  const fs::path out_path = dir / "stdout.txt";
  const fs::path err_path = dir / "stderr.txt";
  std::vector<char*> args;
  for (const std::string& arg : argv)
    args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  RunResult result;
  const pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    setpgid(0, 0);
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null = open("/dev/null", O_RDONLY);
    if (out < 0 || err < 0 || null < 0) _exit(126);
    dup2(null, 0);
    dup2(out, 1);
    dup2(err, 2);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before we may kill it

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Helpers Chromium left behind (there should be none) go with the group.
  kill(-pid, SIGKILL);
  if (!result.timed_out && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  }
  result.out = ReadFile(out_path);
  result.err = ReadFile(err_path);
  return result;
}

std::string Tail(const std::string& text, size_t n = 3000) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

class ReportChromiumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chromium_ = test_support::ChromiumPath();
    if (access(chromium_.c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no Chromium at " << chromium_
                   << " (apt-get install chromium, or set TIRESIAS_CHROMIUM)";
    }
    std::string pattern =
        (fs::path(::testing::TempDir()) / "report_chromium_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    report_ = dir_ / "report.html";
    const absl::Status written =
        WriteHtmlReport(report_test::SampleReportInput(), report_.string());
    ASSERT_TRUE(written.ok()) << written;
  }

  // Replaces the report with one for `input`.
  void Rewrite(const nlohmann::json& input) {
    const absl::Status written = WriteHtmlReport(input, report_.string());
    ASSERT_TRUE(written.ok()) << written;
  }

  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Chromium with a fresh profile, offline, headless, on the report.
  RunResult RunChromium(const std::vector<std::string>& extra_flags,
                        const std::string& profile) {
    const fs::path profile_dir = dir_ / profile;
    fs::create_directories(profile_dir);
    std::vector<std::string> argv =
        test_support::HeadlessChromiumArgv(profile_dir);
    argv.push_back("--virtual-time-budget=5000");
    argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
    argv.push_back("file://" + report_.string());
    return RunProcess(argv, dir_, kChromiumTimeout);
  }

  // Loads the report, returns the DOM after its scripts ran; asserts that
  // Chromium exited cleanly and the page reports every chart drawn.
  std::string DumpRenderedDom(int charts = kReportChartCount) {
    const RunResult run = RunChromium({"--dump-dom"}, "profile-dom");
    EXPECT_FALSE(run.timed_out)
        << "Chromium ran past " << kChromiumTimeout.count() << " s; stderr:\n"
        << Tail(run.err);
    EXPECT_EQ(run.exit_code, 0) << "stderr:\n" << Tail(run.err);
    const std::string& dom = run.out;
    // The page reports through attributes of <body>; matching on that tag
    // alone keeps a failure message short (the DOM holds all of Chart.js).
    const size_t body_start = dom.find("<body");
    const std::string body =
        body_start == std::string::npos
            ? "(no <body> in the DOM dump)"
            : dom.substr(body_start,
                         dom.find('>', body_start) - body_start + 1);
    EXPECT_THAT(body, Not(HasSubstr("data-charts-error"))) << "stderr:\n"
                                                           << Tail(run.err);
    EXPECT_THAT(body, HasSubstr("data-charts-rendered=\"" +
                                std::to_string(charts) + "\""))
        << "stderr:\n"
        << Tail(run.err);
    return dom;
  }

  std::string chromium_;
  fs::path dir_;
  fs::path report_;
};

TEST_F(ReportChromiumTest, DrawsEveryChartWithoutErrors) {
  const std::string dom = DumpRenderedDom();
  for (const char* id : {"jct-cdf", "queueing-cdf", "utilization"}) {
    // Chart.js styles each canvas once it has sized and drawn it.
    EXPECT_THAT(dom, HasSubstr(std::string("<canvas id=\"") + id +
                               "\" role=\"img\" aria-label=\""))
        << id;
  }
  size_t styled = 0;
  for (size_t pos = dom.find("style=\"display: block; box-sizing: border-box;");
       pos != std::string::npos;
       pos = dom.find("style=\"display: block; box-sizing", pos + 1)) {
    ++styled;
  }
  EXPECT_EQ(styled, static_cast<size_t>(kReportChartCount));
}

// The value of attribute `name` of the <body> tag in `dom`; "" if none.
std::string BodyAttribute(const std::string& dom, const std::string& name) {
  const size_t body = dom.find("<body");
  if (body == std::string::npos) return "";
  const std::string tag = dom.substr(body, dom.find('>', body) - body);
  const std::string key = " " + name + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return tag.substr(from, tag.find('"', from) - from);
}

// Every policy of a simulate run on a 1,400 px window (a laptop's browser):
// the summary fits without scrolling sideways, no policy's name is broken
// across lines (not even at its hyphen), and the busy-GPU chart starts with
// the first four policies' lines (two each) and the capacity, the other
// seven hidden behind their legend entries. Measured in the page by a
// script this test appends to its copy of the report.
TEST_F(ReportChromiumTest, ReadableAt1400PixelsWithElevenPolicies) {
  nlohmann::json input = report_test::SampleReportInput();
  input["policies"] = nlohmann::json::array();
  const char* names[] = {"tiresias-l", "tiresias-g",  "yarn-cs",
                         "fifo",       "best-effort", "smallest-first",
                         "sjf",        "srtf",        "srsf",
                         "las",        "gandiva"};
  for (int i = 0; i < 11; ++i) {
    nlohmann::json policy = report_test::SamplePolicy(names[i], 0.4 + 0.05 * i,
                                                      0.3 + 0.02 * i, 0.1 * i);
    // Numbers as wide as a whole-trace run's.
    policy["jobs"] = 82247;
    policy["preemptions"] = 53172278;
    policy["makespan_s"] = 119 * 86400.0;
    input["policies"].push_back(policy);
  }
  Rewrite(input);
  std::ofstream(report_, std::ios::app) << R"html(
<script>
window.addEventListener('load', function () {
  var b = document.body.dataset;
  b.pageWidth = document.documentElement.scrollWidth;
  b.windowWidth = window.innerWidth;
  var wrap = document.querySelector('#summary .table-wrap');
  b.tableWidth = wrap.scrollWidth;
  b.wrapWidth = wrap.clientWidth;
  var broken = [];
  document.querySelectorAll('tbody td:first-child').forEach(function (td) {
    var name = td.querySelector('.policy') || td;
    var range = document.createRange();
    range.selectNodeContents(name);
    var tops = {};
    Array.from(range.getClientRects()).forEach(function (r) {
      tops[Math.round(r.top)] = true;
    });
    if (Object.keys(tops).length > 1) broken.push(name.textContent);
  });
  b.brokenNames = broken.length ? broken.join('|') : 'none';
  var chart = Chart.getChart(document.getElementById('utilization'));
  var shown = 0;
  chart.data.datasets.forEach(function (d, i) {
    if (chart.isDatasetVisible(i)) shown++;
  });
  b.busyShown = shown;
  b.busyLines = chart.data.datasets.length;
});
</script>
)html";
  const RunResult run = RunChromium(
      {"--dump-dom", "--window-size=1400,2000", "--hide-scrollbars"},
      "profile-1400");
  ASSERT_EQ(run.exit_code, 0) << "stderr:\n" << Tail(run.err);
  const std::string& dom = run.out;
  ASSERT_EQ(BodyAttribute(dom, "data-window-width"), "1400");
  EXPECT_LE(std::stoi(BodyAttribute(dom, "data-page-width")), 1400);
  EXPECT_LE(std::stoi(BodyAttribute(dom, "data-table-width")),
            std::stoi(BodyAttribute(dom, "data-wrap-width")))
      << "the summary table scrolls sideways";
  EXPECT_EQ(BodyAttribute(dom, "data-broken-names"), "none");
  // 11 busy lines, 11 waiting lines and the capacity; 4 + 4 + 1 drawn.
  EXPECT_EQ(BodyAttribute(dom, "data-busy-lines"), "23");
  EXPECT_EQ(BodyAttribute(dom, "data-busy-shown"), "9");
  if (const char* keep = std::getenv("TIRESIAS_REPORT_SCREENSHOT")) {
    RunChromium({"--screenshot=" + std::string(keep), "--window-size=1400,2000",
                 "--hide-scrollbars"},
                "profile-1400-shot");
  }
}

TEST_F(ReportChromiumTest, DrawsDegenerateInputsWithoutErrors) {
  // No points at all, zero and sub-second values on the log axes, a single
  // point, malformed points, markup in strings: the page must still draw
  // every chart, and no string may run as script.
  const std::string inject =
      "</script><script>document.body.dataset.chartsError='injected'"
      "</script><img src=x onerror=\"document.body.dataset.chartsError="
      "'img'\">";
  Rewrite({{"baseline", "none"},
           {"title", inject},
           {"command", inject},
           {"policies",
            {{{"name", "empty"}},
             {{"name", "zeros"},
              {"jct_cdf", {{0.0, 0.5}, {0.5, 1.0}}},
              {"queueing_cdf", {{0.0, 1.0}}},
              {"utilization", {{0.0, 0.0}}}},
             {{"name", inject},
              {"jct_cdf", {"x", {1}, {nullptr, 2}, {{1, 2}, 3}}},
              {"queueing_cdf", 7},
              {"utilization", {{"t", "busy"}}}}}}});
  DumpRenderedDom();
  Rewrite(nlohmann::json::object());
  DumpRenderedDom();
}

// sweep.html: a plot per metric (8), bands over two seeds, a policy that
// ignores the swept key (its runs shared), markup in a policy name.
TEST_F(ReportChromiumTest, DrawsEverySweepPlotWithoutErrors) {
  std::vector<SweepRun> runs;
  for (const char* seed : {"1", "2"}) {
    for (const char* knob : {"inf", "8"}) {
      for (const char* policy : {"tiresias-l", "yarn-cs", "<b>x</b>"}) {
        SweepRun& r = runs.emplace_back();
        r.settings = {{"seed", seed}, {"promote-knob", knob}};
        r.summary.policy = policy;
        r.summary.avg_jct_s = 100 + 10 * runs.size();
        r.summary.p95_jct_s = 1000;
        if (std::string(policy) == "yarn-cs") {
          r.ignored_keys = {"promote-knob"};
          if (std::string(knob) == "8") r.same_as = 0;
        }
      }
    }
  }
  RunInfo info;
  info.trace = "</script><b>trace</b>";
  ASSERT_TRUE(WriteSweepReport(SweepJson(info, runs), report_.string()).ok());
  const std::string dom = DumpRenderedDom(8);
  EXPECT_THAT(dom, HasSubstr("mean of 2 seeds"));
  EXPECT_THAT(dom, Not(HasSubstr("<b>trace</b>")));
}

TEST_F(ReportChromiumTest, TakesANonTrivialScreenshot) {
  const fs::path png_path = dir_ / "report.png";
  const RunResult run =
      RunChromium({"--screenshot=" + png_path.string(),
                   "--window-size=1200,4800", "--hide-scrollbars"},
                  "profile-png");
  ASSERT_FALSE(run.timed_out) << "stderr:\n" << Tail(run.err);
  ASSERT_EQ(run.exit_code, 0) << "stderr:\n" << Tail(run.err);
  ASSERT_TRUE(fs::exists(png_path)) << "stderr:\n" << Tail(run.err);
  const std::string png = ReadFile(png_path);
  // A blank page compresses to a few KB; text and tables alone to about
  // 130 KB; with the charts' lines it is larger still.
  EXPECT_GT(png.size(), 60u * 1024) << "suspiciously small screenshot";
  absl::StatusOr<report_test::PngImage> image = report_test::DecodePng(png);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->width, 1200u);
  EXPECT_EQ(image->height, 4800u);

  // Each policy's line colour (report_page.js's palette, in policy order)
  // must cover many pixels (give or take anti-aliasing): the charts' ~1000 px
  // wide lines, dashed and dotted by policy (the third is dotted). Nothing
  // else on the page uses these colours; a page whose charts did not draw
  // has none of them.
  const char* const kLineColors[] = {"#4e79a7", "#f28e2b", "#e15759"};
  for (const char* hex : kLineColors) {
    const report_test::Rgb color = report_test::ParseHexColor(hex);
    size_t count = 0;
    for (const report_test::Rgb& pixel : image->pixels) {
      count += report_test::Near(pixel, color, /*tolerance=*/16);
    }
    EXPECT_GT(count, 1000u) << "too few pixels of line colour " << hex;
  }

  if (const char* keep = std::getenv("TIRESIAS_REPORT_SCREENSHOT")) {
    fs::copy_file(png_path, keep, fs::copy_options::overwrite_existing);
  }
}

}  // namespace
}  // namespace tiresias

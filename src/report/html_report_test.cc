#include "report/html_report.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "report/embedded_assets.h"
#include "report/report_test_input.h"

namespace tiresias {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kDataOpen[] =
    "<script type=\"application/json\" id=\"report-data\">";

size_t Count(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t pos = text.find(what); pos != std::string::npos;
       pos = text.find(what, pos + what.size())) {
    ++count;
  }
  return count;
}

// The text of the JSON block as an HTML parser would see it: up to the
// first "</script" (the tag name is matched case-insensitively).
std::string DataBlock(const std::string& html) {
  const size_t open = html.find(kDataOpen);
  if (open == std::string::npos) return "";
  const size_t start = open + sizeof(kDataOpen) - 1;
  std::string lower = html;
  for (char& c : lower) c = static_cast<char>(std::tolower(c));
  const size_t end = lower.find("</script", start);
  return html.substr(start, end - start);
}

// Two policies whose normalized JCTs are easy to check by hand:
// fast: 50 s / 200 s = 0.25; slow (the baseline): 1.
json TwoPolicies() {
  return {{"baseline", "slow"},
          {"policies",
           {{{"name", "fast"}, {"jobs", 2}, {"avg_jct_s", 50.0}},
            {{"name", "slow"}, {"jobs", 2}, {"avg_jct_s", 200.0}}}}};
}

TEST(RenderHtmlReportTest, InlinesChartJsAndThePageScript) {
  const std::string html = RenderHtmlReport(report_test::SampleReportInput());
  ASSERT_GT(ChartJs().size(), 100000u);
  EXPECT_THAT(html, HasSubstr(std::string(ChartJs())));
  EXPECT_THAT(html, HasSubstr("Chart.js v4"));
  EXPECT_THAT(html, HasSubstr(std::string(ReportPageJs())));
  EXPECT_THAT(html, HasSubstr("chartsRendered"));
  EXPECT_THAT(html, Not(HasSubstr("<script src")));
  EXPECT_THAT(html, Not(HasSubstr("http://")));
  // Four script blocks: data, error hook, Chart.js, page script.
  EXPECT_EQ(Count(html, "</script>"), 4u);
}

TEST(RenderHtmlReportTest, HasEachCanvasOnce) {
  const std::string html = RenderHtmlReport(report_test::SampleReportInput());
  EXPECT_EQ(Count(html, "<canvas id=\"jct-cdf\""), 1u);
  EXPECT_EQ(Count(html, "<canvas id=\"queueing-cdf\""), 1u);
  EXPECT_EQ(Count(html, "<canvas id=\"utilization\""), 1u);
  EXPECT_EQ(Count(html, "<canvas "), static_cast<size_t>(kReportChartCount));
}

TEST(RenderHtmlReportTest, EmbeddedDataRoundTrips) {
  const json input = report_test::SampleReportInput();
  const std::string html = RenderHtmlReport(input);
  EXPECT_EQ(json::parse(DataBlock(html)), input);
}

TEST(RenderHtmlReportTest, EscapesPolicyNamesInHtml) {
  json input = TwoPolicies();
  input["policies"][0]["name"] = "<b>x</b>";
  input["title"] = "a & b";
  const std::string html = RenderHtmlReport(input);
  EXPECT_THAT(html, HasSubstr("<td>&lt;b&gt;x&lt;/b&gt;</td>"));
  EXPECT_THAT(html, HasSubstr("data-policy=\"&lt;b&gt;x&lt;/b&gt;\""));
  EXPECT_THAT(html, HasSubstr("<title>a &amp; b</title>"));
  EXPECT_THAT(html, Not(HasSubstr("<b>x</b>")));
  EXPECT_EQ(json::parse(DataBlock(html)), input);
}

TEST(RenderHtmlReportTest, ScriptEndTagInAStringDoesNotEndTheBlock) {
  json input = report_test::SampleReportInput();
  input["command"] = "tiresias simulate </script><script>alert(1)</script>";
  input["trace"] = "</SCRIPT ><!-- <script>";
  input["policies"][1]["name"] = "x</script>y";
  const std::string html = RenderHtmlReport(input);
  EXPECT_EQ(json::parse(DataBlock(html)), input);
  EXPECT_EQ(Count(html, "</script>"), 4u);
  EXPECT_THAT(html, Not(HasSubstr("<script>alert")));
  EXPECT_THAT(html, HasSubstr("<code>tiresias simulate &lt;/script&gt;"));
}

TEST(RenderHtmlReportTest, ShowsHumanFriendlyValues) {
  const std::string html = RenderHtmlReport(report_test::SampleReportInput());
  // yarn-cs: avg JCT 8280 s, avg queueing 2460 s, 1250 jobs.
  EXPECT_THAT(html, HasSubstr("title=\"8280.0 s\">2.3 h</td>"));
  EXPECT_THAT(html, HasSubstr(">41 min</td>"));
  EXPECT_THAT(html, HasSubstr(">1,250</td>"));
  EXPECT_THAT(html, HasSubstr("<code>tiresias simulate --trace"));
  EXPECT_THAT(html, HasSubstr("4 servers x 4 GPUs (4 servers, 16 GPUs)"));
  for (const char* bin : {"SS", "SL", "LS", "LL"}) {
    EXPECT_THAT(html, HasSubstr(std::string(bin) + " &middot; "));
  }
  // yarn-cs LL bin: 100 jobs, avg JCT 90000 s.
  EXPECT_THAT(html, HasSubstr(">100</td><td class=\"num\" title=\"p95 JCT "
                              "3.6 d; avg queueing 5.0 h\">25 h</td>"));
}

// The fairness table: one row per policy from its "fairness" object, a dash
// where a field is missing.
TEST(RenderHtmlReportTest, ShowsFairnessPerPolicy) {
  json data = TwoPolicies();
  data["policies"][0]["fairness"] = {{"avg_slowdown", 1.25},
                                     {"p95_slowdown", 2.5},
                                     {"max_slowdown", 40.0},
                                     {"ftf_max", 3.0},
                                     {"ftf_over_1_share", 0.125},
                                     {"jain_slowdown", 0.5},
                                     {"longest_wait_s", 7200.0}};
  const std::string html = RenderHtmlReport(data);
  const size_t at = html.find("<section id=\"fairness\">");
  ASSERT_NE(at, std::string::npos);
  const std::string section = html.substr(at, html.find("</section>", at) - at);
  EXPECT_THAT(section,
              HasSubstr("<tr data-policy=\"fast\"><td>fast</td>"
                        "<td class=\"num\">1.25</td><td class=\"num\">2.50"
                        "</td><td class=\"num\">40.0</td><td class=\"num\">"
                        "3.00</td><td class=\"num\">12.5%</td>"
                        "<td class=\"num\">0.500</td>"));
  EXPECT_THAT(section, HasSubstr(">2.0 h</td>"));
  EXPECT_EQ(Count(section, "<tr data-policy="), 2u);
}

// A learnt PACKLIMIT is said under the summary table, as the printed
// table's footer says it.
TEST(RenderHtmlReportTest, SaysTheLearntPackLimit) {
  json data = TwoPolicies();
  data["policies"][1]["pack_limit"] = {
      {"learnt", 0.384}, {"samples", 120}, {"fit", "fitted"}, {"updates", 2}};
  const std::string html = RenderHtmlReport(data);
  EXPECT_THAT(html, HasSubstr("<p class=\"note\" data-pack-limit>slow: "
                              "learnt PACKLIMIT 0.384 from 120 samples "
                              "(fitted, 2 placer changes)</p>"));
  EXPECT_EQ(Count(html, "data-pack-limit"), 1u);
}

TEST(NormalizedAvgJctsTest, DividesByTheBaseline) {
  const std::vector<std::optional<double>> normalized =
      NormalizedAvgJcts(TwoPolicies());
  ASSERT_EQ(normalized.size(), 2u);
  ASSERT_TRUE(normalized[0].has_value());
  ASSERT_TRUE(normalized[1].has_value());
  EXPECT_DOUBLE_EQ(*normalized[0], 0.25);
  EXPECT_DOUBLE_EQ(*normalized[1], 1.0);

  const std::string html = RenderHtmlReport(TwoPolicies());
  EXPECT_THAT(html, HasSubstr("Avg JCT vs slow</th>"));
  EXPECT_THAT(html, HasSubstr("data-normalized-jct=\"0.2500\">0.25\xc3\x97"));
  EXPECT_THAT(html, HasSubstr("data-normalized-jct=\"1.0000\">1.00\xc3\x97"));
}

TEST(NormalizedAvgJctsTest, MissingOrZeroBaseline) {
  json no_baseline = TwoPolicies();
  no_baseline.erase("baseline");
  EXPECT_TRUE(NormalizedAvgJcts(no_baseline).empty());
  EXPECT_THAT(RenderHtmlReport(no_baseline), Not(HasSubstr("Avg JCT vs")));

  json unknown = TwoPolicies();
  unknown["baseline"] = "srtf";
  EXPECT_TRUE(NormalizedAvgJcts(unknown).empty());
  EXPECT_THAT(RenderHtmlReport(unknown),
              HasSubstr("&ldquo;srtf&rdquo; is not among the policies run"));

  json zero = TwoPolicies();
  zero["policies"][1]["avg_jct_s"] = 0.0;
  zero["policies"][0].erase("avg_jct_s");
  const std::vector<std::optional<double>> normalized = NormalizedAvgJcts(zero);
  ASSERT_EQ(normalized.size(), 2u);
  EXPECT_FALSE(normalized[0].has_value());
  EXPECT_FALSE(normalized[1].has_value());
}

TEST(RenderHtmlReportTest, ToleratesMissingAndMistypedFields) {
  for (const json& input :
       {json(), json::array(), json::object(), json{{"policies", "oops"}},
        json{{"policies", {{{"avg_jct_s", "fast"}, {"bins", 3}}}},
             {"cluster", "big"}}}) {
    const std::string html = RenderHtmlReport(input);
    EXPECT_THAT(html, HasSubstr("<canvas id=\"utilization\""));
    EXPECT_THAT(html, HasSubstr("<title>Tiresias simulation</title>"));
    EXPECT_EQ(json::parse(DataBlock(html)), input);
  }
}

class WriteHtmlReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern =
        (std::filesystem::path(::testing::TempDir()) / "report_XXXXXX")
            .string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(WriteHtmlReportTest, WritesTheRenderedPageAndNoTemporaries) {
  const json input = report_test::SampleReportInput();
  const std::string path = (dir_ / "report.html").string();
  ASSERT_TRUE(WriteHtmlReport(input, path).ok());
  // Overwrites an existing report.
  ASSERT_TRUE(WriteHtmlReport(input, path).ok());
  std::ifstream in(path, std::ios::binary);
  std::stringstream contents;
  contents << in.rdbuf();
  EXPECT_EQ(contents.str(), RenderHtmlReport(input));
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename(), "report.html");
    ++files;
  }
  EXPECT_EQ(files, 1u);
  const auto perms = std::filesystem::status(path).permissions();
  EXPECT_NE(perms & std::filesystem::perms::others_read,
            std::filesystem::perms::none);
}

TEST_F(WriteHtmlReportTest, RejectsMalformedInput) {
  const std::string path = (dir_ / "report.html").string();
  absl::Status status = WriteHtmlReport(json::array(), path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("JSON object"));
  status = WriteHtmlReport(json{{"policies", 3}}, path);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("'policies'"));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST_F(WriteHtmlReportTest, NamesThePathWhenTheFolderIsMissing) {
  const std::string path = (dir_ / "missing" / "report.html").string();
  const absl::Status status = WriteHtmlReport(TwoPolicies(), path);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(status.message()), HasSubstr(path));
}

}  // namespace
}  // namespace tiresias

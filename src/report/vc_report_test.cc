// The --vcs page: a summary table per policy and a bar pair per VC with a
// quota, the anomalies marked.
#include "report/vc_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tiresias {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(VcReportTest, TablePerPolicyAndBarsPerVcWithAQuota) {
  auto summary = [](std::string name) {
    return nlohmann::json{{"name", name},          {"jobs", 40},
                          {"avg_jct_s", 7200},     {"p95_jct_s", 9000},
                          {"avg_queueing_s", 60},  {"preemptions", 3},
                          {"gpu_utilization", 0.5}};
  };
  nlohmann::json doc = {
      {"trace", "t<1>.csv"},
      {"cluster", "2 servers x 4 GPUs"},
      {"vcs_source", "from-trace"},
      {"vcs", nlohmann::json::array(
                  {{{"name", "a"}}, {{"name", "b"}}, {{"name", "c"}}})}};
  nlohmann::json& entry = doc["policies"]["tiresias-l"];
  entry["summaries"] = {summary("tiresias-l"), summary("tiresias-l+vcs"),
                        summary("tiresias-l/static")};
  entry["vcs"] = {{{"name", "a"},
                   {"cells", "1x4"},
                   {"shared_same_avg_queueing_s", 3600},
                   {"private_avg_queueing_s", 7200}},
                  {{"name", "b"},
                   {"cells", "1x2"},
                   {"shared_same_avg_queueing_s", 7200},
                   {"private_avg_queueing_s", 3600}},
                  {{"name", "c"}, {"cells", ""}}};  // no quota: no bars
  entry["vcs_with_anomaly"] = 1;
  const std::string html = VcReportHtml(doc);
  EXPECT_THAT(html, HasSubstr("t&lt;1&gt;.csv"));  // escaped
  EXPECT_EQ(Count(html, "<tr>"), 4);               // header and three runs
  EXPECT_THAT(html, HasSubstr("tiresias-l/static"));
  EXPECT_EQ(Count(html, "class=\"shared\""), 2);
  EXPECT_EQ(Count(html, "class=\"alone\""), 2);
  // b waits longer shared: marked; the longest bar spans the bar space.
  EXPECT_THAT(html, HasSubstr("class=\"vc anomaly\" data-vc=\"b\""));
  EXPECT_THAT(html, HasSubstr("class=\"vc\" data-vc=\"a\""));
  EXPECT_THAT(html, HasSubstr("width=\"460.0\""));
  EXPECT_THAT(html, HasSubstr("2.00 h shared (anomaly)"));
  EXPECT_THAT(html, Not(HasSubstr("data-vc=\"c\"")));
  EXPECT_THAT(html, HasSubstr("1 of 3 VCs wait longer shared"));
}

}  // namespace
}  // namespace tiresias

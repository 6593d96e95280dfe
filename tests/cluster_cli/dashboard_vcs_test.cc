// The dashboard per virtual cluster (issue 24), against a real master (a
// child process on loopback) and headless Chromium: /api/state carries
// the VCs and /api/jobs filters by one; the page shows a panel of VCs
// (only when there are some) and keeps a VC filter in its URL.
#include <string>
#include <vector>

#include "core/testing/test_dir.h"
#include "dashboard_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_process.h"
#include "nlohmann/json.hpp"

namespace tiresias::cluster_test {
namespace {

using nlohmann::json;

// Jobs 1 and 3 in VC vision, 2 in none (an admin in no VC borrows); job 1
// of QOS high, with a column of its own.
TEST(DashboardVcsTest, ThePanelAndTheJobsFilterFollowTheVcs) {
  unsetenv("TIRESIAS_MASTER");
  test_support::TestDir tmp{"tiresias-dashboard-vcs"};
  MasterProcess master(TIRESIAS_BINARY, (tmp.path() / "state").string(), {});
  ASSERT_FALSE(master.address().empty()) << master.output();
  auto dashboard = StartDashboard(master.address());
  ASSERT_NE(dashboard, nullptr);
  const int port = dashboard->port();
  auto [status, body] = Get(port, "/api/state");
  ASSERT_EQ(status, 200) << body;
  EXPECT_TRUE(json::parse(body)["vcs"].empty());

  const ProcessResult created =
      RunProcess({TIRESIAS_BINARY, "admin", "vc", "create", "vision", "--quota",
                  "1x1", "--members", "alice", "--master", master.address()});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const ProcessResult level =
      RunProcess({TIRESIAS_BINARY, "admin", "qos", "create", "high",
                  "--priority", "5", "--master", master.address()});
  ASSERT_EQ(level.exit_code, 0) << level.err;
  Cli(master.address(), {"submit", "--vc", "vision", "--qos", "high", "--gpus",
                         "1", "--", "/bin/true"});
  Cli(master.address(), {"submit", "--gpus", "1", "--", "/bin/true"});
  Cli(master.address(),
      {"submit", "-A", "vision", "--gpus", "1", "--", "/bin/true"});
  std::tie(status, body) = Get(port, "/api/state");
  ASSERT_EQ(status, 200) << body;
  const json vcs = json::parse(body)["vcs"];
  ASSERT_EQ(vcs.size(), 1u) << body;
  EXPECT_EQ(vcs[0]["name"], "vision");
  EXPECT_EQ(vcs[0]["waiting_jobs"], 2);
  std::tie(status, body) = Get(port, "/api/jobs?vc=vision");
  ASSERT_EQ(status, 200) << body;
  std::vector<int> ids;
  const json jobs = json::parse(body)["jobs"];
  for (const json& j : jobs) ids.push_back(j["id"]);
  EXPECT_EQ(ids, (std::vector<int>{1, 3}));

  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  HeadlessBrowser browser(tmp.path() / "profile");
  ASSERT_TRUE(browser.Open(Url(port, "/?vc=vision"))) << browser.error();
  ASSERT_TRUE(browser.WaitFor(kReady)) << browser.error();
  EXPECT_EQ(*browser.Evaluate(kRowIds), (json{3, 1}));
  EXPECT_EQ(*browser.Evaluate("Array.from(document.querySelectorAll("
                              "'#jobs tbody td.vc')).map(td => "
                              "td.textContent).join()"),
            "vision,vision");
  EXPECT_EQ(*browser.Evaluate("Array.from(document.querySelectorAll("
                              "'#jobs tbody td.qos')).map(td => "
                              "td.textContent).join()"),
            ",high");
  EXPECT_EQ(*browser.Evaluate("document.getElementById('filter-vc').value"),
            "vision");
  EXPECT_EQ(*browser.Evaluate("document.getElementById('vcs-panel').hidden"),
            false);
  EXPECT_EQ(
      *browser.Evaluate("Array.from(document.querySelectorAll('#vcs tbody tr'))"
                        ".map(tr => [tr.dataset.vc, tr.cells[6].textContent])"),
      json::array({json::array({"vision", "2"})}));
  // Cleared: every job again.
  ASSERT_TRUE(browser
                  .Evaluate("document.getElementById('filter-clear').click(); "
                            "true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kRowIds) + ".join() === '3,2,1'"))
      << browser.Evaluate(kRowIds)->dump();
}

}  // namespace
}  // namespace tiresias::cluster_test

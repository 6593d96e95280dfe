// What a cluster user expects of the dashboard, against real masters
// (child processes on loopback) and headless Chromium: the jobs table's
// filter and pages kept in the URL, the chart's history kept by the master
// (it survives a reload and a master restart), a job's log followed as it
// is written with markup in it kept as text, hold / release / cancel
// buttons for those allowed (checked through the master, not the page),
// and `tiresias up --dashboard-listen` serving where it was told.
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/testing/test_dir.h"
#include "dashboard/dashboard_server.h"
#include "dashboard_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "headless_browser.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "proto/tiresias.grpc.pb.h"
#include "security/tls.h"
#include "security/tokens.h"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

class DashboardFeaturesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TIRESIAS_MASTER");
    master_ = std::make_unique<MasterProcess>(
        TIRESIAS_BINARY, (dir_ / "state").string(),
        std::vector<std::string>{"--history-interval", "0.2"});
    ASSERT_FALSE(master_->address().empty()) << master_->output();
    dashboard_ = StartDashboard(master_->address());
    ASSERT_NE(dashboard_, nullptr);
  }

  test_support::TestDir tmp_{"tiresias-dashboard-features"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
  std::unique_ptr<DashboardServer> dashboard_;
};

// Five jobs, 2 and 4 cancelled: pending ones are 1, 3 and 5. Two a page:
// [1, 3], then [5] (the table shows a page newest first).
TEST_F(DashboardFeaturesTest, JobsApiFiltersAndPagesAndRefusesBadValues) {
  for (int i = 1; i <= 5; ++i) {
    Cli(master_->address(), {"submit", "--gpus", "1", "--name",
                             i % 2 ? "odd" : "even", "--", "/bin/true"});
  }
  Cli(master_->address(), {"cancel", "2"});
  Cli(master_->address(), {"cancel", "4"});
  const int port = dashboard_->port();
  auto ids = [](const json& page) {
    std::vector<int> out;
    for (const json& j : page["jobs"]) out.push_back(j["id"].get<int>());
    return out;
  };
  auto [status, body] = Get(port, "/api/jobs?state=pending&page_size=2");
  ASSERT_EQ(status, 200) << body;
  json page = json::parse(body);
  EXPECT_EQ(ids(page), (std::vector<int>{1, 3}));
  const std::string token = page["next_page_token"];
  ASSERT_FALSE(token.empty());
  std::tie(status, body) =
      Get(port, "/api/jobs?state=pending&page_size=2&page_token=" + token);
  ASSERT_EQ(status, 200) << body;
  page = json::parse(body);
  EXPECT_EQ(ids(page), (std::vector<int>{5}));
  EXPECT_EQ(page["next_page_token"], "");
  std::tie(status, body) = Get(port, "/api/jobs?state=cancelled");
  EXPECT_EQ(ids(json::parse(body)), (std::vector<int>{2, 4}));
  std::tie(status, body) = Get(port, "/api/jobs?name=even&state=pending");
  EXPECT_TRUE(json::parse(body)["jobs"].empty());
  std::tie(status, body) = Get(port, "/api/jobs?user=nobody-here");
  EXPECT_TRUE(json::parse(body)["jobs"].empty());

  // Bad values: 400, naming the parameter.
  std::tie(status, body) = Get(port, "/api/jobs?state=bogus");
  EXPECT_EQ(status, 400);
  EXPECT_THAT(json::parse(body)["error"].get<std::string>(),
              ::testing::StartsWith("state: expected one of pending, "));
  std::tie(status, body) = Get(port, "/api/jobs?page_size=0");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(json::parse(body)["error"],
            "page_size: expected a whole number from 1 to 500, got \"0\"");
  std::tie(status, body) = Get(port, "/api/jobs?page_token=garbage");
  EXPECT_EQ(status, 400);
  EXPECT_THAT(json::parse(body)["error"].get<std::string>(),
              HasSubstr("page_token: expected a next_page_token"));
  std::tie(status, body) = Get(port, "/api/jobs?sort=id");
  EXPECT_EQ(status, 400);
  EXPECT_THAT(json::parse(body)["error"].get<std::string>(),
              HasSubstr("unknown parameter \"sort\""));

  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  HeadlessBrowser browser(dir_ / "profile");
  ASSERT_TRUE(browser.Open(Url(port, "/?state=pending&page_size=20")))
      << browser.error();
  ASSERT_TRUE(browser.WaitFor(kReady)) << browser.error();
  EXPECT_EQ(*browser.Evaluate(kRowIds), (json{5, 3, 1}));
  EXPECT_EQ(*browser.Evaluate("document.getElementById('filter-state').value"),
            "pending");
  // The form: two a page, as a user would choose it.
  ASSERT_TRUE(browser
                  .Evaluate("document.getElementById('filter-page-size')"
                            ".innerHTML += '<option>2</option>';"
                            "document.getElementById('filter-page-size')"
                            ".value = '2';"
                            "document.querySelector('#jobs-filter "
                            "button[type=submit]').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kRowIds) + ".join() === '3,1'"))
      << browser.Evaluate(kRowIds)->dump();
  EXPECT_EQ(*browser.Evaluate("document.getElementById('jobs-prev').disabled"),
            true);
  ASSERT_TRUE(browser
                  .Evaluate("document.getElementById('jobs-next').click(); "
                            "true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kRowIds) + ".join() === '5'"))
      << browser.Evaluate(kRowIds)->dump();
  EXPECT_EQ(*browser.Evaluate("document.body.dataset.jobsPage"), "2");
  EXPECT_EQ(*browser.Evaluate("document.getElementById('jobs-next').disabled"),
            true);
  // A reload keeps the filter and the page.
  ASSERT_TRUE(browser.Evaluate(kReload).has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kReloaded) + kReady + " && " +
                              kRowIds + ".join() === '5'"))
      << browser.error();
  EXPECT_EQ(*browser.Evaluate("document.getElementById('filter-state').value"),
            "pending");
  EXPECT_EQ(*browser.Evaluate("new URLSearchParams(location.search)"
                              ".get('state')"),
            "pending");
  ASSERT_TRUE(browser
                  .Evaluate("document.getElementById('jobs-prev').click(); "
                            "true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kRowIds) + ".join() === '3,1'"))
      << browser.Evaluate(kRowIds)->dump();
  // A bad filter in the address: the page says why, the rest still works.
  ASSERT_TRUE(browser
                  .Evaluate("window.beforeReload = true; "
                            "location.href = '/?state=bogus'; true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kReloaded) + kReady +
                              " && document.body.dataset.jobsError !== "
                              "undefined"))
      << browser.error();
  EXPECT_THAT(
      browser.Evaluate("document.getElementById('error').textContent")
          ->get<std::string>(),
      ::testing::StartsWith("Jobs: state: expected one of pending, "));
  EXPECT_EQ(*browser.Evaluate("document.body.dataset.jobCount"), "5");
}

// The chart's points come from the master's store: a reload shows them
// all again, and so does a page after the master restarted on the same
// state (the first point is still the first one sampled).
TEST(DashboardHistoryTest, ChartSurvivesAReloadAndAMasterRestart) {
  test_support::TestDir tmp("tiresias-dashboard-history");
  unsetenv("TIRESIAS_MASTER");
  const std::string address = "127.0.0.1:" + std::to_string(UnusedPort());
  const std::vector<std::string> argv = {
      TIRESIAS_BINARY,   "master",      "--insecure", "--listen", address,
      "--state-dir",     (tmp.path() / "state").string(),
      "--history-interval", "0.2"};
  fs::create_directories(tmp.path() / "state");
  auto master = std::make_unique<DaemonProcess>(argv, "listening on ");
  ASSERT_FALSE(master->address().empty()) << master->output();
  Cli(address, {"submit", "--gpus", "1", "--name", "waits", "--", "/bin/true"});
  auto dashboard = StartDashboard(address);
  ASSERT_NE(dashboard, nullptr);
  const int port = dashboard->port();

  // The API: points from the master, a waiting job in the later ones.
  json history;
  for (int i = 0; i < 100; ++i) {
    auto [status, body] = Get(port, "/api/history");
    ASSERT_EQ(status, 200) << body;
    history = json::parse(body);
    if (history["points"].size() >= 4 &&
        history["points"].back()["jobs_waiting"] == 1) {
      break;
    }
    usleep(100 * 1000);
  }
  ASSERT_GE(history["points"].size(), 4u) << history.dump();
  EXPECT_EQ(history["points"].back()["jobs_waiting"], 1);
  EXPECT_EQ(history["points"].back()["gpus_total"], 0);  // no agents
  EXPECT_EQ(history["interval_s"], 0.2);
  const double first = history["points"][0]["sample_time"];
  auto [status, body] = Get(port, "/api/history?max_points=2");
  EXPECT_EQ(json::parse(body)["points"].size(), 2u);
  std::tie(status, body) = Get(port, "/api/history?since=tomorrow");
  EXPECT_EQ(status, 400);
  EXPECT_EQ(json::parse(body)["error"],
            "since: expected a time in Unix seconds, got \"tomorrow\"");

  // The RPC's own checks.
  {
    auto stub = v1::Tiresias::NewStub(
        security::Dial(address, security::InsecureTlsConfig()));
    auto call = [&](v1::GetClusterHistoryRequest req) {
      grpc::ClientContext ctx;
      v1::GetClusterHistoryResponse resp;
      return stub->GetClusterHistory(&ctx, req, &resp);
    };
    v1::GetClusterHistoryRequest req;
    req.set_since(20);
    req.set_until(10);
    grpc::Status s = call(req);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(), "since: expected at most until (10), got 20");
    req = {};
    req.set_max_points(-1);
    s = call(req);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(),
              "max_points: expected 0 (the default, 1000) up to 10000, got -1");
    req = {};
    req.set_since(std::nan(""));
    EXPECT_EQ(call(req).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  const bool chromium = HaveChromium();
  std::unique_ptr<HeadlessBrowser> browser;
  const std::string has_points =
      std::string(kReady) + " && Number(document.body.dataset.historyPoints) >= 4";
  if (chromium) {
    browser = std::make_unique<HeadlessBrowser>(tmp.path() / "profile");
    ASSERT_TRUE(browser->Open(Url(port))) << browser->error();
    ASSERT_TRUE(browser->WaitFor(has_points)) << browser->error();
    EXPECT_EQ(*browser->Evaluate("Number(document.body.dataset.historyFirst)"),
              first);
    ASSERT_TRUE(browser->Evaluate(kReload).has_value());
    ASSERT_TRUE(browser->WaitFor(std::string(kReloaded) + has_points))
        << browser->error();
    EXPECT_EQ(*browser->Evaluate("Number(document.body.dataset.historyFirst)"),
              first);
  }

  // The master restarts on the same state: the old points are still there.
  master->Stop(SIGTERM);
  master = std::make_unique<DaemonProcess>(argv, "listening on ");
  ASSERT_FALSE(master->address().empty()) << master->output();
  const size_t before = history["points"].size();
  for (int i = 0; i < 100; ++i) {
    std::tie(status, body) = Get(port, "/api/history");
    if (status == 200) {
      history = json::parse(body);
      if (history["points"].size() > before + 2) break;
    }
    usleep(100 * 1000);
  }
  ASSERT_EQ(status, 200) << body;
  EXPECT_EQ(history["points"][0]["sample_time"].get<double>(), first);
  EXPECT_GT(history["points"].size(), before + 2);
  if (chromium) {
    ASSERT_TRUE(browser->Evaluate(kReload).has_value());
    ASSERT_TRUE(browser->WaitFor(
        std::string(kReloaded) + kReady + " && Number(document.body.dataset.historyPoints) > " +
        std::to_string(before + 2)))
        << browser->error();
    EXPECT_EQ(*browser->Evaluate("Number(document.body.dataset.historyFirst)"),
              first);
  }
}

// On an --insecure master everyone may act: the hold button holds a
// pending job (the master says so), then release lets it go; a POST
// without the page's anti-forgery token is refused.
// A plain job (1), then an array of indices 3 and 7 (jobs 2 and 3, array
// 2): the Array column (the one before the last) shows ARRAYID_INDEX as `tiresias jobs` does, and
// /api/jobs carries the array's fields (null outside one).
TEST_F(DashboardFeaturesTest, AnArrayJobShowsItsArrayAndIndex) {
  Cli(master_->address(), {"submit", "--gpus", "1", "--", "/bin/true"});
  Cli(master_->address(),
      {"submit", "--gpus", "1", "--array", "3,7", "--", "/bin/true"});
  const int port = dashboard_->port();
  auto [status, body] = Get(port, "/api/jobs");
  ASSERT_EQ(status, 200) << body;
  const json jobs = json::parse(body)["jobs"];
  ASSERT_EQ(jobs.size(), 3u) << body;
  EXPECT_TRUE(jobs[0]["array_id"].is_null());
  EXPECT_EQ(jobs[2]["array_id"], 2);
  EXPECT_EQ(jobs[2]["array_index"], 7);
  EXPECT_EQ(jobs[2]["array"]["indices"], "3,7");
  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  HeadlessBrowser browser(dir_ / "profile");
  ASSERT_TRUE(browser.Open(Url(port))) << browser.error();
  ASSERT_TRUE(browser.WaitFor(kReady)) << browser.error();
  EXPECT_EQ(*browser.Evaluate(
                "Array.from(document.querySelectorAll('#jobs tbody tr'))"
                ".map(tr => tr.dataset.jobId + ':' + "
                "tr.cells[tr.cells.length - 2].textContent).join()"),
            "3:2_7,2:2_3,1:");
}

TEST_F(DashboardFeaturesTest, HoldAndReleaseButtonsActThroughTheMaster) {
  Cli(master_->address(),
      {"submit", "--gpus", "1", "--name", "waits", "--", "/bin/true"});
  const int port = dashboard_->port();
  httplib::Client http("127.0.0.1", port);
  auto forged = http.Post("/api/jobs/1/hold", "", "text/plain");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 403);
  EXPECT_THAT(forged->body, HasSubstr("X-Tiresias-Csrf"));
  EXPECT_EQ(HeldOnMaster(master_->address(), 1), false);
  forged = http.Post("/api/jobs/1/hold", {{"X-Tiresias-Csrf", "wrong"},
                                          {"Origin", Url(port, "")}},
                     "", "text/plain");
  ASSERT_TRUE(forged);
  EXPECT_EQ(forged->status, 403);
  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();

  HeadlessBrowser browser(dir_ / "profile");
  ASSERT_TRUE(browser.Open(Url(port))) << browser.error();
  ASSERT_TRUE(browser.WaitFor(kReady)) << browser.error();
  const std::string buttons =
      "Array.from(document.querySelectorAll('#jobs tr[data-job-id=\"1\"] "
      "td.actions button')).map(b => b.dataset.action).join()";
  EXPECT_EQ(*browser.Evaluate(buttons), "hold,cancel");
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('#jobs tr[data-job-id=\"1\"]"
                            " button[data-action=hold]').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.actionResult === 'done'"))
      << browser.Evaluate("document.body.dataset.actionMessage")->dump();
  EXPECT_EQ(*browser.Evaluate("document.getElementById('action-result')"
                              ".textContent"),
            "job 1: hold done (now pending, held)");
  EXPECT_EQ(HeldOnMaster(master_->address(), 1), true);
  ASSERT_TRUE(browser.WaitFor(buttons + " === 'release,cancel'"))
      << browser.Evaluate(buttons)->dump();
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('#jobs tr[data-job-id=\"1\"]"
                            " button[data-action=release]').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(
      "document.body.dataset.actionMessage === "
      "'job 1: release done (now pending)'"))
      << browser.Evaluate("document.body.dataset.actionMessage")->dump();
  EXPECT_EQ(HeldOnMaster(master_->address(), 1), false);
}

// Against a master with TLS, a user sees buttons on their own jobs only;
// a hold they force on someone else's job (with the page's own token) is
// refused by the master, the page says so, and the job stays as it was.
TEST(DashboardRightsTest, AUserWithoutRightsCannotHoldAnothersJob) {
  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  test_support::TestDir tmp("tiresias-dashboard-rights");
  const fs::path dir = tmp.path();
  for (const char* name : {"TIRESIAS_MASTER", "TIRESIAS_CA", "TIRESIAS_TOKEN",
                           "TIRESIAS_TOKEN_FILE", "TIRESIAS_CERT",
                           "TIRESIAS_KEY", "TIRESIAS_MASTER_NAME"}) {
    unsetenv(name);
  }
  MasterProcess master(TIRESIAS_BINARY, (dir / "state").string(),
                       {"--init-ca", (dir / "tls").string()},
                       (dir / "master.log").string());
  ASSERT_FALSE(master.address().empty()) << master.output();
  std::string admin;
  std::getline(std::ifstream(dir / "state" / "admin-token"), admin);
  ASSERT_FALSE(admin.empty());
  auto cli = [&](const std::string& token, std::vector<std::string> args) {
    setenv("TIRESIAS_MASTER", master.address().c_str(), 1);
    setenv("TIRESIAS_CA", (dir / "tls" / "ca.pem").c_str(), 1);
    setenv("TIRESIAS_TOKEN", token.c_str(), 1);
    std::vector<std::string> argv = {TIRESIAS_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv);
    for (const char* name : {"TIRESIAS_MASTER", "TIRESIAS_CA",
                             "TIRESIAS_TOKEN"}) {
      unsetenv(name);
    }
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    return r;
  };
  const json created = json::parse(
      cli(admin, {"admin", "token", "create", "--user", "bob", "--json"}).out,
      nullptr, false);
  ASSERT_TRUE(created.is_object()) << created.dump();
  const std::string bob = created["token"];
  cli(admin, {"submit", "--gpus", "1", "--name", "admins", "--", "/bin/true"});
  cli(bob, {"submit", "--gpus", "1", "--name", "bobs", "--", "/bin/true"});
  const security::TlsConfig tls{.ca_pem = ReadFile(dir / "tls" / "ca.pem")};
  auto dashboard = StartDashboard(master.address(), tls);
  ASSERT_NE(dashboard, nullptr);

  HeadlessBrowser browser(dir / "profile");
  ASSERT_TRUE(browser.Open(Url(dashboard->port()))) << browser.error();
  const std::string form = "document.querySelector('form[action=\"/login\"]')";
  ASSERT_TRUE(browser.WaitFor(form + " !== null")) << browser.error();
  ASSERT_TRUE(browser
                  .Evaluate(form + ".querySelector('input[name=token]').value"
                                   " = " +
                            json(bob).dump() + "; " + form +
                            ".querySelector('button').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor(std::string(kReady) + " && " + kRowIds +
                              ".length === 2"))
      << browser.error();
  auto buttons = [&](int id) {
    return *browser.Evaluate(
        "Array.from(document.querySelectorAll('#jobs tr[data-job-id=\"" +
        std::to_string(id) +
        "\"] td.actions button')).map(b => b.dataset.action).join()");
  };
  EXPECT_EQ(buttons(1), "");  // the admin's job
  EXPECT_EQ(buttons(2), "hold,cancel");
  // Forced, with the page's own anti-forgery token: the master refuses.
  const json forced = *browser.Evaluate(
      "fetch('/api/jobs/1/hold', {method: 'POST', headers: "
      "{'X-Tiresias-Csrf': document.body.dataset.csrf}})"
      ".then(r => r.json().then(b => [r.status, b.error]))");
  ASSERT_EQ(forced.size(), 2u) << forced.dump();
  EXPECT_EQ(forced[0], 403);
  EXPECT_THAT(forced[1].get<std::string>(), ::testing::StartsWith("refused: "));
  EXPECT_EQ(HeldOnMaster(master.address(), 1, tls, admin), false);
  // Their own job: held, as the master says.
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('#jobs tr[data-job-id=\"2\"]"
                            " button[data-action=hold]').click(); true")
                  .has_value());
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.actionResult === 'done'"))
      << browser.Evaluate("document.body.dataset.actionMessage")->dump();
  EXPECT_EQ(HeldOnMaster(master.address(), 2, tls, admin), true);
  EXPECT_EQ(HeldOnMaster(master.address(), 1, tls, admin), false);
}

// `tiresias up --dashboard-listen` on a port chosen here serves the
// dashboard there; on that cluster (one agent) a job's log view shows its
// lines as they are written, and markup in them as text.
TEST(DashboardUpTest, UpServesOnTheGivenPortAndTheLogViewFollowsAsText) {
  test_support::TestDir tmp("tiresias-dashboard-up");
  unsetenv("TIRESIAS_MASTER");
  const int dashboard_port = UnusedPort();
  DaemonProcess up({TIRESIAS_BINARY, "up", "--insecure", "--agents", "1",
                    "--gpus", "1", "--listen", "127.0.0.1:0", "--state-dir",
                    (tmp.path() / "up").string(), "--allow-root-tasks",
                    "--checkpoint-base", (tmp.path() / "ckpt").string(),
                    "--dashboard-listen",
                    "127.0.0.1:" + std::to_string(dashboard_port)},
                   "master on ", (tmp.path() / "up.log").string());
  ASSERT_FALSE(up.address().empty()) << up.output();
  const std::string master = up.address().substr(0, up.address().find(','));
  auto [status, page] = Get(dashboard_port, "/");
  ASSERT_EQ(status, 200) << page;
  EXPECT_THAT(page, HasSubstr("id=\"jobs\""));

  const std::string markup =
      "<script>document.body.dataset.xss=\"log\"</script><b>bold</b>";
  Cli(master, {"submit", "--gpus", "1", "--name", "talks", "--", "/bin/sh",
               "-c",
               "echo '" + markup + "'; sleep 3; echo line-two; sleep 3; "
               "echo line-three"});
  if (!HaveChromium()) GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  HeadlessBrowser browser(tmp.path() / "profile");
  ASSERT_TRUE(browser.Open(Url(dashboard_port))) << browser.error();
  ASSERT_TRUE(browser.WaitFor(std::string(kReady) +
                              " && document.querySelector('#jobs "
                              "tr[data-job-id=\"1\"]') !== null"))
      << browser.error();
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('#jobs "
                            "tr[data-job-id=\"1\"]').click(); true")
                  .has_value());
  const std::string log = "document.getElementById('job-log').textContent";
  ASSERT_TRUE(browser.WaitFor(log + ".includes('<b>bold</b>')",
                              std::chrono::seconds(30)))
      << browser.Evaluate(log)->dump() << ReadFile(tmp.path() / "up.log");
  // As it comes: the first line before the last was written.
  EXPECT_EQ(*browser.Evaluate(log + ".includes('line-three')"), false);
  ASSERT_TRUE(browser.WaitFor(
      "document.body.dataset.logComplete === '1'", std::chrono::seconds(30)))
      << browser.Evaluate(log)->dump();
  EXPECT_EQ(*browser.Evaluate(log),
            markup + "\nline-two\nline-three\n");
  EXPECT_EQ(*browser.Evaluate("document.querySelectorAll('#job-log *').length"),
            0);
  EXPECT_EQ(*browser.Evaluate("document.body.dataset.xss === undefined"), true);
  up.Stop(SIGTERM);
}

TEST(DashboardHistoryTest, BadHistoryIntervalIsAOneLineError) {
  test_support::TestDir tmp("tiresias-dashboard-history-flag");
  ProcessResult r = RunProcess(
      {TIRESIAS_BINARY, "master", "--insecure", "--listen", "127.0.0.1:0",
       "--state-dir", tmp.path().string(), "--history-interval", "-1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("--history-interval -1: expected a number of "
                               "seconds from 0.1 to 86400, or 0 (no "
                               "history)\n"))
      << r.err;
  // Too short: the master would write its store without pause; too long:
  // past what a duration holds.
  for (const char* bad : {"0.001", "1e11"}) {
    r = RunProcess({TIRESIAS_BINARY, "master", "--insecure", "--listen",
                    "127.0.0.1:0", "--state-dir", tmp.path().string(),
                    "--history-interval", bad});
    EXPECT_EQ(r.exit_code, 1) << bad;
    EXPECT_THAT(r.err, HasSubstr(std::string("--history-interval ")))
        << bad << ": " << r.err;
  }
}

// A --dashboard-listen port that is taken stops `tiresias up` with a line
// that names the flag, rather than a cluster without its dashboard.
TEST(DashboardUpTest, UpRefusesADashboardPortInUse) {
  test_support::TestDir tmp("tiresias-dashboard-up-busy");
  unsetenv("TIRESIAS_MASTER");
  httplib::Server squatter;
  const int port = squatter.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  cli_test::ProcessOptions options;
  options.timeout = std::chrono::seconds(60);
  ProcessResult r = RunProcess(
      {TIRESIAS_BINARY, "up", "--insecure", "--agents", "1", "--gpus", "1",
       "--listen", "127.0.0.1:0", "--state-dir", (tmp.path() / "up").string(),
       "--dashboard-listen", listen},
      options);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("\ntiresias: --dashboard-listen " + listen +
                               ": cannot listen on " + listen +
                               " (in use?)\n"))
      << r.err;
}

}  // namespace
}  // namespace tiresias::cluster_test

// The web dashboard against a real master process: its JSON API over real
// HTTP, its error answers, and the page rendered by headless Chromium
// (/usr/bin/chromium or $TIRESIAS_CHROMIUM; that part is skipped without
// one).
#include <httplib.h>
#include <stdlib.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/testing/test_dir.h"
#include "dashboard/dashboard_server.h"
#include "dashboard_page_checks.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "headless_browser.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

namespace fs = std::filesystem;
using cli_test::ProcessOptions;
using cli_test::ProcessResult;
using cli_test::RunProcess;
using nlohmann::json;
using ::testing::HasSubstr;

class DashboardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TIRESIAS_MASTER");
    master_ = std::make_unique<MasterProcess>(TIRESIAS_BINARY,
                                              (dir_ / "state").string());
    ASSERT_FALSE(master_->address().empty()) << master_->output();
    DashboardOptions options;
    options.master_address = master_->address();
    options.listen = "127.0.0.1:0";
    auto server = DashboardServer::Start(options);
    ASSERT_TRUE(server.ok()) << server.status();
    dashboard_ = *std::move(server);
  }
  void TearDown() override {
    dashboard_.reset();
    master_.reset();
  }

  std::string Client(const std::string& command,
                     const std::vector<std::string>& args) {
    std::vector<std::string> argv = {TIRESIAS_BINARY, command, "--master",
                                     master_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // GET `path` from the dashboard: (status, body).
  std::pair<int, std::string> Get(const std::string& path) {
    httplib::Client client("127.0.0.1", dashboard_->port());
    client.set_read_timeout(10, 0);
    auto res = client.Get(path.c_str());
    if (!res) return {-1, httplib::to_string(res.error())};
    return {res->status, res->body};
  }

  test_support::TestDir tmp_{"tiresias-dashboard"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
  std::unique_ptr<DashboardServer> dashboard_;
};

TEST_F(DashboardTest, ApiShowsTheMastersJobsAndNodes) {
  Client("submit", {"--gpus", "1", "--name", "small", "--", "/bin/true"});
  Client("submit", {"--gpus", "2", "--name", "big", "--", "/bin/sleep", "9"});
  Client("cancel", {"1"});

  auto [status, body] = Get("/api/state");
  ASSERT_EQ(status, 200) << body;
  const json state = json::parse(body);
  EXPECT_EQ(state["master"], master_->address());
  EXPECT_TRUE(state["nodes"].empty());  // no agents in this test
  EXPECT_EQ(state["jobs"]["cancelled"], 1);
  EXPECT_EQ(state["jobs"]["pending"], 1);
  EXPECT_GT(state["now"].get<double>(), 1.7e9);

  // The jobs themselves: a page of /api/jobs.
  std::tie(status, body) = Get("/api/jobs");
  ASSERT_EQ(status, 200) << body;
  const json listed = json::parse(body);
  ASSERT_EQ(listed["jobs"].size(), 2u);
  EXPECT_EQ(listed["jobs"][0]["id"], 1);
  EXPECT_EQ(listed["jobs"][0]["name"], "small");
  EXPECT_EQ(listed["jobs"][0]["state"], "cancelled");
  EXPECT_EQ(listed["jobs"][1]["state"], "pending");
  EXPECT_EQ(listed["jobs"][1]["gpus"], 2);

  std::tie(status, body) = Get("/api/jobs/2");
  ASSERT_EQ(status, 200) << body;
  const json job = json::parse(body);
  EXPECT_EQ(job["command"], (json{"/bin/sleep", "9"}));
  EXPECT_EQ(job["profile"], nullptr);
  EXPECT_EQ(job["profile_text"], "not measured yet (placed as skewed)");
  ASSERT_EQ(job["events"].size(), 1u);
  EXPECT_EQ(job["events"][0]["kind"], "submitted");

  // One vocabulary (docs/json.md): `tiresias jobs --json` and /api/jobs
  // list the same fields with the same values, and `job N --json` and
  // /api/jobs/N too; only an unfinished job's wait_s moves with the clock
  // each read it at.
  const json cli_jobs =
      json::parse(Client("jobs", {"--all", "--json"}))["jobs"];
  ASSERT_EQ(cli_jobs.size(), listed["jobs"].size());
  auto same_job = [](json a, json b) {
    ASSERT_EQ(a["wait_s"].is_number(), true) << a;
    EXPECT_NEAR(a["wait_s"].get<double>(), b["wait_s"].get<double>(), 5.0);
    if (a["end_time"].is_number()) {
      EXPECT_EQ(a["wait_s"], b["wait_s"]);
    }
    a.erase("wait_s");
    b.erase("wait_s");
    EXPECT_EQ(a, b);
  };
  for (size_t i = 0; i < cli_jobs.size(); ++i) {
    same_job(cli_jobs[i], listed["jobs"][i]);
  }
  EXPECT_EQ(cli_jobs[0]["id"], 1);  // a number, not "1"
  EXPECT_EQ(cli_jobs[0]["state"], "cancelled");
  same_job(json::parse(Client("job", {"2", "--json"})), job);

  std::tie(status, body) = Get("/api/jobs/77");
  EXPECT_EQ(status, 404);
  EXPECT_EQ(json::parse(body)["error"], "job 77: not found");
  std::tie(status, body) = Get("/api/jobs/abc");
  EXPECT_EQ(status, 400);
  EXPECT_THAT(json::parse(body)["error"].get<std::string>(),
              HasSubstr("expected a positive number"));
  EXPECT_EQ(Get("/no-such-page").first, 404);

  // The master gone: the API says so, the dashboard keeps serving.
  const std::string address = master_->address();
  master_.reset();
  std::tie(status, body) = Get("/api/state");
  EXPECT_EQ(status, 502);
  EXPECT_THAT(json::parse(body)["error"].get<std::string>(),
              HasSubstr(address));
  EXPECT_EQ(Get("/").first, 200);
}

// /api/state is what every open page polls every 2 s: the cards and the
// nodes, from the master's counts (GetClusterStatus), never a list of jobs,
// so it stays small however many jobs the master holds (the jobs table
// reads one page of /api/jobs). Its counts are `jobs --json`'s by state.
TEST_F(DashboardTest, ApiStateCountsJobsByStateAndStaysSmall) {
  Client("submit", {"--gpus", "1", "--name", "first", "--", "/bin/true"});
  auto [status, body] = Get("/api/state");
  ASSERT_EQ(status, 200) << body;
  const size_t small_size = body.size();

  // 300 more in one `submit --file`: a third held, then 100 cancelled.
  constexpr int kJobs = 300;
  std::string lines;
  for (int i = 0; i < kJobs; ++i) {
    lines += json{{"gpus", 1 + i % 4},
                  {"command", {"/bin/sleep", "9"}},
                  {"name", i < 100 ? "doomed" : "kept"},
                  {"hold", i % 3 == 0}}
                 .dump() +
             "\n";
  }
  const fs::path file = dir_ / "jobs.jsonl";
  std::ofstream(file) << lines;
  Client("submit", {"--file", file.string()});
  Client("cancel", {"--name", "doomed"});

  std::tie(status, body) = Get("/api/state");
  ASSERT_EQ(status, 200) << body;
  EXPECT_LT(body.size(), 4096u) << "grows with the jobs: " << body.size();
  // Only the counts' digits may have grown.
  EXPECT_LE(body.size(), small_size + 16) << body.substr(0, 300);
  const json state = json::parse(body);
  // `jobs` is counts by state, as in `tiresias status --json`.
  ASSERT_TRUE(state["jobs"].is_object())
      << "a per-job list: " << body.substr(0, 300);
  EXPECT_EQ(state["master"], master_->address());
  EXPECT_TRUE(state["nodes"].empty());  // no agents in this test

  // The counts, every state word present, against `jobs --json`.
  json expected = json::object();
  for (const char* word : {"pending", "starting", "running", "preempted",
                           "finished", "failed", "cancelled", "timeout"}) {
    expected[word] = 0;
  }
  const json cli_jobs =
      json::parse(Client("jobs", {"--all", "--json"}))["jobs"];
  ASSERT_EQ(cli_jobs.size(), kJobs + 1u);
  for (const json& job : cli_jobs) {
    expected[job["state"].get<std::string>()] =
        expected[job["state"].get<std::string>()].get<int>() + 1;
  }
  EXPECT_EQ(expected["cancelled"], 100);
  EXPECT_EQ(expected["pending"], kJobs + 1 - 100);
  EXPECT_EQ(state["jobs"], expected);
}

// An --insecure master has nobody to log in as: no login, and every page
// says that anyone who reaches the master may do anything.
TEST_F(DashboardTest, InsecureMasterNeedsNoLoginAndThePageSaysSo) {
  Client("submit", {"--gpus", "1", "--name", "small", "--", "/bin/true"});
  auto [status, page] = Get("/");
  ASSERT_EQ(status, 200);
  EXPECT_THAT(page, HasSubstr("id=\"insecure-banner\""));
  EXPECT_THAT(page, HasSubstr("insecure: no TLS and no authentication"));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("action=\"/login\"")));
  std::tie(status, page) = Get("/api/state");
  ASSERT_EQ(status, 200) << page;
  const json state = json::parse(page);
  EXPECT_EQ(state["viewer"]["insecure"], true);
  EXPECT_EQ(state["jobs"]["pending"], 1);
}

TEST_F(DashboardTest, PageRendersInChromium) {
  Client("submit", {"--gpus", "1", "--name", "small", "--", "/bin/true"});
  Client("submit", {"--gpus", "2", "--name", "big", "--", "/bin/sleep", "9"});
  Client("cancel", {"1"});
  auto [status, page] = Get("/");
  ASSERT_EQ(status, 200);
  EXPECT_THAT(page, HasSubstr("<canvas id=\"history\""));
  EXPECT_THAT(page, HasSubstr(master_->address()));

  const std::string chromium = ChromiumPath();
  if (access(chromium.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no Chromium at " << chromium;
  }
  ProcessOptions options;
  options.cwd = dir_;
  options.timeout = std::chrono::seconds(90);
  std::vector<std::string> argv = HeadlessChromiumArgv(dir_ / "profile");
  argv.push_back("--virtual-time-budget=5000");
  argv.push_back("--dump-dom");
  argv.push_back("http://127.0.0.1:" + std::to_string(dashboard_->port()) +
                 "/");
  ProcessResult r = RunProcess(argv, options);
  ASSERT_EQ(r.exit_code, 0) << r.err.substr(0, 2000);
  const std::string& dom = r.out;
  const size_t body_at = dom.find("<body");
  ASSERT_NE(body_at, std::string::npos);
  const std::string body =
      dom.substr(body_at, dom.find('>', body_at) - body_at);
  EXPECT_THAT(body, HasSubstr("data-dashboard-ready=\"1\""));
  EXPECT_THAT(body, HasSubstr("data-job-count=\"2\""));
  EXPECT_THAT(body, ::testing::Not(HasSubstr("data-dashboard-error")));
  EXPECT_THAT(dom, ::testing::ContainsRegex(
                       "<div id=\"insecure-banner\"[^>]*>insecure: no TLS "
                       "and no authentication"));
  // One row per job, unfinished first, with its state.
  const size_t big = dom.find("<tr data-job-id=\"2\"");
  const size_t small = dom.find("<tr data-job-id=\"1\"");
  ASSERT_NE(big, std::string::npos);
  ASSERT_NE(small, std::string::npos);
  EXPECT_LT(big, small);
  EXPECT_THAT(dom.substr(small, 400), HasSubstr("state-cancelled"));
  // Chart.js drew the history chart (it sizes the canvas it draws on).
  EXPECT_THAT(dom, HasSubstr("<canvas id=\"history\" role=\"img\""));
  EXPECT_THAT(dom, ::testing::ContainsRegex(
                       "<canvas id=\"history\"[^>]*style=\"[^\"]*height"));
}

// Job names, users and commands are the submitters' text: markup in them
// must stay text in the page (the user is whatever $USER says on an
// --insecure master).
TEST_F(DashboardTest, MarkupInNamesUsersAndCommandsStaysText) {
  const std::string name =
      "<img src=x onerror=\"document.body.dataset.xss='name'\">";
  const std::string user =
      "<img src=x onerror=\"document.body.dataset.xss='user'\">";
  const std::string command =
      "</script><script>document.body.dataset.xss='command'</script>";
  const char* login = std::getenv("USER");
  const std::string saved_user = login != nullptr ? login : "";
  setenv("USER", user.c_str(), 1);
  Client("submit", {"--gpus", "1", "--name", name, "--", "/bin/echo", command});
  if (saved_user.empty()) {
    unsetenv("USER");
  } else {
    setenv("USER", saved_user.c_str(), 1);
  }
  if (access(ChromiumPath().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  }
  HeadlessBrowser browser(dir_ / "profile");
  ASSERT_TRUE(browser.Open(
      "http://127.0.0.1:" + std::to_string(dashboard_->port()) + "/"))
      << browser.error();
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.dashboardReady === '1'"))
      << browser.error();
  EXPECT_EQ(*browser.Evaluate(
                "Array.from(document.querySelectorAll('#jobs tbody td'))"
                ".slice(1, 3).map(td => td.textContent)"),
            (json{name, user}));
  ExpectJobCommandShownAsText(browser, 1, "/bin/echo " + command);
}

// A real node (`tiresias up`, one agent x 2 emulated GPUs), drained: the
// node table says so with the reason, and a job that needs the node waits
// with a reason that says why, in the API and on the page.
TEST(DashboardDrainTest, DrainedNodeAndPendingReasonShow) {
  test_support::TestDir tmp("tiresias-dashboard-drain");
  unsetenv("TIRESIAS_MASTER");
  DaemonProcess up({TIRESIAS_BINARY, "up", "--insecure", "--agents", "1",
                    "--gpus", "2", "--listen", "127.0.0.1:0", "--state-dir",
                    (tmp.path() / "up").string(), "--allow-root-tasks",
                    "--checkpoint-base", (tmp.path() / "ckpt").string()},
                   "master on ", (tmp.path() / "up.log").string());
  ASSERT_FALSE(up.address().empty()) << up.output();
  const std::string master = up.address().substr(0, up.address().find(','));
  auto client = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {TIRESIAS_BINARY, args[0], "--master",
                                     master};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    return RunProcess(argv);
  };
  // The agent registers shortly after the master listens.
  std::string nodes;
  for (int i = 0; i < 100 && nodes.find("node-0") == std::string::npos; ++i) {
    usleep(100 * 1000);
    nodes = client({"nodes"}).out;
  }
  ASSERT_THAT(nodes, HasSubstr("node-0"));
  ProcessResult drained =
      RunProcess({TIRESIAS_BINARY, "node", "drain", "node-0", "--master",
                  master, "--reason", "fan swap"});
  ASSERT_EQ(drained.exit_code, 0) << drained.err;
  ASSERT_EQ(client({"submit", "--gpus", "2", "--name", "waits", "--",
                    "/bin/true"})
                .exit_code,
            0);

  DashboardOptions options;
  options.master_address = master;
  options.listen = "127.0.0.1:0";
  auto server = DashboardServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client http("127.0.0.1", (*server)->port());
  json jobs;
  for (int i = 0; i < 100; ++i) {  // the reason follows the next pass
    auto res = http.Get("/api/jobs");
    ASSERT_TRUE(res);
    jobs = json::parse(res->body)["jobs"];
    if (!jobs.empty() &&
        jobs[0]["pending_reason"] != "waiting for the next scheduling pass") {
      break;
    }
    usleep(100 * 1000);
  }
  auto res = http.Get("/api/state");
  ASSERT_TRUE(res);
  const json state = json::parse(res->body);
  ASSERT_EQ(state["nodes"].size(), 1u);
  EXPECT_EQ(state["nodes"][0]["drained"], true);
  EXPECT_EQ(state["nodes"][0]["drain_reason"], "fan swap");
  EXPECT_EQ(state["jobs"]["pending"], 1);
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0]["pending_reason"],
            "needs 2 GPUs; every up node is drained");

  if (access(ChromiumPath().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  }
  HeadlessBrowser browser(tmp.path() / "profile");
  ASSERT_TRUE(browser.Open("http://127.0.0.1:" +
                           std::to_string((*server)->port()) + "/"))
      << browser.error();
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.dashboardReady === '1'"))
      << browser.error();
  EXPECT_EQ(*browser.Evaluate(
                "document.querySelector('#nodes tr[data-node=\"node-0\"]')"
                ".cells[5].textContent"),
            json("drained: fan swap"));
  EXPECT_EQ(*browser.Evaluate(
                "document.querySelector('#jobs tr[data-job-id=\"1\"]')"
                ".lastChild.textContent"),
            json("(needs 2 GPUs; every up node is drained)"));
  up.Stop(SIGTERM);
}

TEST(DashboardCommandTest, BadListenAddressIsAOneLineError) {
  ProcessResult r = RunProcess({TIRESIAS_BINARY, "dashboard", "--master",
                                "127.0.0.1:1", "--listen", "nonsense"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "tiresias: dashboard: --listen nonsense: expected host:port (port "
            "0 picks a free one), got \"nonsense\"\n");
  EXPECT_EQ(DashboardServer::Start({"127.0.0.1:1", "127.0.0.1:99999", 1000})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  r = RunProcess({TIRESIAS_BINARY, "dashboard", "--master", "127.0.0.1:1",
                  "--listen", "127.0.0.1:0", "--allowed-host", "*"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, ::testing::StartsWith(
                         "tiresias: dashboard: --allowed-host *: expected"));
}

// Unless told otherwise, the dashboard is reachable from this machine only.
TEST(DashboardCommandTest, ListensOnLoopbackByDefault) {
  ProcessResult r = RunProcess({TIRESIAS_BINARY, "dashboard", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("--listen TEXT=127.0.0.1:8080"));
  EXPECT_EQ(DashboardOptions().listen, "127.0.0.1:8080");
}

}  // namespace
}  // namespace tiresias::cluster_test

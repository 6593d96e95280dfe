// One JSON vocabulary and one wait, end to end (docs/json.md): a real
// `tiresias up` (one agent, one emulated GPU) runs a job that was held,
// requeued and cancelled; `tiresias job` and `jobs` (--json and text),
// `history --json`, the dashboard's /api and its page (headless Chromium;
// that part is skipped without one) all show the same job: the same
// fields and values, its wait kept after its end, and every launch in its
// events with its attempt (started 1, preempted 1, resumed 2).
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/memory_size.h"
#include "core/testing/test_dir.h"
#include "dashboard/dashboard_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "headless_browser.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

using cli_test::ProcessResult;
using cli_test::RunProcess;
using nlohmann::json;
using ::testing::HasSubstr;

// (kind, attempt) of the job's started, resumed and preempted events.
std::vector<std::pair<std::string, int>> LaunchEvents(const json& job) {
  std::vector<std::pair<std::string, int>> out;
  for (const json& e : job["events"]) {
    const std::string kind = e["kind"];
    if (kind == "started" || kind == "resumed" || kind == "preempted") {
      out.emplace_back(kind,
                       e["attempt"].is_number() ? e["attempt"].get<int>() : -1);
    }
  }
  return out;
}

TEST(DashboardEventsTest, CliApiAndPageShowOneJobAlike) {
  test_support::TestDir tmp("tiresias-dashboard-events");
  unsetenv("TIRESIAS_MASTER");
  DaemonProcess up(
      {TIRESIAS_BINARY, "up", "--insecure", "--agents", "1", "--gpus", "1",
       "--listen", "127.0.0.1:0", "--state-dir", (tmp.path() / "up").string(),
       "--grace", "2", "--allow-root-tasks", "--checkpoint-base",
       (tmp.path() / "ckpt").string()},
      "master on ", (tmp.path() / "up.log").string());
  ASSERT_FALSE(up.address().empty()) << up.output();
  const std::string master = up.address().substr(0, up.address().find(','));
  auto client = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {TIRESIAS_BINARY, args[0], "--master",
                                     master};
    argv.insert(argv.end(), args.begin() + 1, args.end());
    ProcessResult r = RunProcess(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  auto job = [&] { return json::parse(client({"job", "1", "--json"})); };
  auto wait_for = [&](auto predicate, const char* what) {
    for (int i = 0; i < 300; ++i) {
      json j = job();
      if (predicate(j)) return j;
      usleep(100 * 1000);
    }
    ADD_FAILURE() << "timed out waiting for " << what << ": " << job();
    return job();
  };
  std::string nodes;
  for (int i = 0; i < 100 && nodes.find("node-0") == std::string::npos; ++i) {
    usleep(100 * 1000);
    nodes = client({"nodes"});
  }
  ASSERT_THAT(nodes, HasSubstr("node-0"));

  // Held for 2 s: it waits at least that long before it first runs.
  ASSERT_EQ(client({"submit", "--gpus", "1", "--hold", "--name", "probe", "--",
                    "/bin/sleep", "60"}),
            "1\n");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  client({"release", "1"});
  wait_for([](const json& j) { return j["state"] == "running"; },
           "attempt 1 to run");
  client({"requeue", "1"});
  wait_for(
      [](const json& j) {
        return j["state"] == "running" && j["attempt"] == 2;
      },
      "attempt 2 to run");
  client({"cancel", "1"});
  const json ended = wait_for(
      [](const json& j) { return j["state"] == "cancelled"; }, "the cancel");

  // Every launch with its attempt.
  EXPECT_EQ(LaunchEvents(ended),
            (std::vector<std::pair<std::string, int>>{
                {"started", 1}, {"preempted", 1}, {"resumed", 2}}));
  // Its wait: end - submit - executed, at least the 2 s it was held, and
  // the same a while after its end.
  const double wait = ended["wait_s"].get<double>();
  EXPECT_NEAR(wait,
              ended["end_time"].get<double>() -
                  ended["submit_time"].get<double>() -
                  ended["total_executed_s"].get<double>(),
              1e-6);
  EXPECT_GE(wait, 2.0);
  EXPECT_EQ(ended["id"], 1);
  EXPECT_EQ(
      ended["jct_s"].get<double>(),
      ended["end_time"].get<double>() - ended["submit_time"].get<double>());
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_EQ(job()["wait_s"], ended["wait_s"]);
  // The same wait in `tiresias job`, `jobs` and `history`.
  const int seconds = static_cast<int>(std::floor(wait));
  const std::string shown = absl::StrFormat("%d:%02d:%02d", seconds / 3600,
                                            seconds % 3600 / 60, seconds % 60);
  EXPECT_THAT(client({"job", "1"}),
              HasSubstr("\nWait:            " + shown + "\n"));
  EXPECT_THAT(client({"jobs", "--all"}),
              ::testing::ContainsRegex(" " + shown + " +0:"));
  const json history =
      json::parse(client({"history", "--json", "--format", "id,wait,run"}));
  EXPECT_EQ(history["jobs"][0],
            (json{{"id", 1},
                  {"wait_s", ended["wait_s"]},
                  {"total_executed_s", ended["total_executed_s"]}}));

  DashboardOptions options;
  options.master_address = master;
  options.listen = "127.0.0.1:0";
  auto server = DashboardServer::Start(options);
  ASSERT_TRUE(server.ok()) << server.status();
  httplib::Client http("127.0.0.1", (*server)->port());
  auto res = http.Get("/api/jobs/1");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body), ended);  // field for field
  res = http.Get("/api/jobs");
  ASSERT_TRUE(res);
  EXPECT_EQ(json::parse(res->body)["jobs"],
            json::parse(client({"jobs", "--all", "--json"}))["jobs"]);

  if (access(ChromiumPath().c_str(), X_OK) != 0) {
    up.Stop(SIGTERM);
    GTEST_SKIP() << "no Chromium at " << ChromiumPath();
  }
  HeadlessBrowser browser(tmp.path() / "profile");
  ASSERT_TRUE(browser.Open(
      "http://127.0.0.1:" + std::to_string((*server)->port()) + "/"))
      << browser.error();
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.dashboardReady === '1'"))
      << browser.error();
  // The Wait column (the 8th) shows the ended job's wait, not 0:00:00.
  EXPECT_EQ(
      *browser.Evaluate("document.querySelector('#jobs tr[data-job-id=\"1\"]')"
                        ".cells[7].textContent"),
      json(shown));
  ASSERT_TRUE(browser
                  .Evaluate("document.querySelector('tr[data-job-id=\"1\"]')"
                            ".click(); true")
                  .has_value())
      << browser.error();
  ASSERT_TRUE(browser.WaitFor("document.body.dataset.detailJob === '1'"))
      << browser.error();
  // What it used, as `tiresias job` says it (agents as root run tasks in
  // cgroups; elsewhere nothing is measured and nothing shown).
  const std::string usage =
      browser.Evaluate("document.getElementById('job-usage').textContent")
          ->get<std::string>();
  if (geteuid() == 0) {  // as root, `up`'s agents use cgroups
    EXPECT_GT(ended["max_memory_bytes"].get<int64_t>(), 0);
  }
  if (ended["max_memory_bytes"].get<int64_t>() > 0) {
    EXPECT_THAT(usage, ::testing::StartsWith("Used: "));
    EXPECT_THAT(usage,
                HasSubstr(absl::StrCat(
                    " CPU time, memory peak ",
                    ByteSizeText(ended["max_memory_bytes"].get<int64_t>()),
                    " (largest task)")));
    EXPECT_THAT(client({"job", "1"}), HasSubstr("memory peak"));
  } else {
    EXPECT_EQ(usage, "");
  }
  EXPECT_EQ(*browser.Evaluate(
                "Array.from(document.querySelectorAll('#events tbody tr'))"
                ".filter(tr => ['started', 'preempted', 'resumed']"
                ".includes(tr.dataset.kind))"
                ".map(tr => [tr.dataset.kind, tr.dataset.attempt,"
                " tr.cells[2].textContent.split(' on ')[0]])"),
            json::parse(R"([["started", "1", "attempt 1"],
                            ["preempted", "1", "attempt 1"],
                            ["resumed", "2", "attempt 2"]])"));
  up.Stop(SIGTERM);
}

}  // namespace
}  // namespace tiresias::cluster_test

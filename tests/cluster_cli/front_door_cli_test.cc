// The client front door end to end: the real `tiresias` binary against a
// real master (a child process, or in this process where the test must
// choose its port). Listings page through every job and filter on the
// master; names cannot forge rows or drive the terminal; `submit` checks a
// spec before sending and retries an unreachable master safely.
#include <httplib.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli_fixture.h"
#include "core/testing/test_dir.h"
#include "dashboard/dashboard_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/clock.h"
#include "master/server.h"
#include "master/sqlite_store.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "one_line_error.h"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

namespace fs = std::filesystem;
using cli_test::Lines;
using cli_test::ProcessResult;
using cli_test::RunProcess;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class FrontDoorCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("TIRESIAS_MASTER");
    // --since dates are local time: make local time UTC for the children.
    setenv("TZ", "UTC", 1);
  }
  void TearDown() override { master_.reset(); }

  std::string StateDir() const { return (dir_ / "state").string(); }

  void StartMaster() {
    master_ = std::make_unique<MasterProcess>(TIRESIAS_BINARY, StateDir());
    ASSERT_FALSE(master_->address().empty())
        << "master printed: " << master_->output();
  }

  // Creates jobs straight in the state dir's store before a master opens
  // it, `per_transaction` to a transaction (all of one submitted at once).
  // Job i (from 1): name Name(i), user "u<i % 2>", submitted at
  // first_submit_time + (the first id of its transaction) - 1.
  void CreateStoredJobs(int count, int per_transaction,
                        double first_submit_time = 1e9) {
    fs::create_directories(StateDir());
    auto store = SqliteStore::Open(StateDir() + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status();
    for (int first = 1; first <= count; first += per_transaction) {
      std::vector<NewJob> batch;
      for (int i = first; i <= std::min(count, first + per_transaction - 1);
           ++i) {
        NewJob job;
        job.spec.name = Name(i);
        job.spec.user = absl::StrCat("u", i % 2);
        job.spec.command = {"/bin/true"};
        batch.push_back(std::move(job));
      }
      auto created =
          (*store)->CreateJobs(batch, Seconds{first_submit_time + first - 1});
      ASSERT_TRUE(created.ok()) << created.status();
    }
  }
  // 200 bytes: 20,000 of these jobs are more than one gRPC message holds.
  static std::string Name(int i) {
    std::string name = absl::StrCat("job-", i, "-");
    name.resize(200, 'n');
    return name;
  }

  ProcessResult Client(const std::string& command,
                       const std::vector<std::string>& args = {}) {
    return RunClient(TIRESIAS_BINARY, *master_, command, args);
  }

  // The JOBID column of a `tiresias jobs` table, header excluded.
  static std::vector<int64_t> TableIds(const std::string& out) {
    std::vector<int64_t> ids;
    std::vector<std::string> lines = Lines(out);
    for (size_t i = 1; i < lines.size(); ++i) {
      ids.push_back(std::stoll(lines[i].substr(0, lines[i].find(' '))));
    }
    return ids;
  }

  test_support::TestDir tmp_{"tiresias-front-door"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
};

TEST_F(FrontDoorCliTest, NamesWithControlCharactersListOneLineEachEscaped) {
  StartMaster();
  ASSERT_EQ(Client("submit", {"--gpus", "1", "--name", "a\nFORGED 999 row",
                              "--", "/bin/true"})
                .exit_code,
            0);
  ASSERT_EQ(Client("submit", {"--gpus", "1", "--name", "\x1b[31m", "--env",
                              "NOTE=bell\a", "--", "/bin/echo", "x\x1b]0;t"})
                .exit_code,
            0);
  ProcessResult jobs = Client("jobs", {"--all"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  std::vector<std::string> lines = Lines(jobs.out);
  ASSERT_EQ(lines.size(), 3u) << jobs.out;  // the header and two rows
  EXPECT_THAT(lines[1], StartsWith("1 "));
  EXPECT_THAT(lines[1], HasSubstr(" a\\nFORGED 999 row "));
  EXPECT_THAT(lines[2], StartsWith("2 "));
  EXPECT_THAT(lines[2], HasSubstr(" \\x1b[31m "));
  EXPECT_EQ(jobs.out.find('\x1b'), std::string::npos);

  ProcessResult job = Client("job", {"2"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_EQ(job.out.find('\x1b'), std::string::npos);
  EXPECT_EQ(job.out.find('\a'), std::string::npos);
  EXPECT_THAT(job.out, HasSubstr("Name:            \\x1b[31m\n"));
  EXPECT_THAT(job.out, HasSubstr("Command:         /bin/echo x\\x1b]0;t\n"));
  // The environment (NOTE among the caller's exported ones) on one line.
  EXPECT_THAT(job.out, ContainsRegex("\nEnv: +[0-9]+ variables \\([A-Z_ "
                                     "]+(\\.\\.\\.)?; `--env` shows "
                                     "them\\)\n"));
  EXPECT_EQ(job.out.find("NOTE=bell"), std::string::npos);
  ProcessResult env = Client("job", {"2", "--env"});
  ASSERT_EQ(env.exit_code, 0) << env.err;
  EXPECT_EQ(env.out.find('\a'), std::string::npos);
  EXPECT_THAT(env.out, HasSubstr("Env:             NOTE=bell\\x07\n"));
  // --json is JSON: the text itself, escaped by the encoder.
  ProcessResult json = Client("job", {"1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["name"],
            "a\nFORGED 999 row");
}

TEST_F(FrontDoorCliTest, JobsAndTheDashboardListTwentyThousandJobsInIdOrder) {
  CreateStoredJobs(20000, 1000);
  StartMaster();
  ProcessResult jobs = Client("jobs", {"--all"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  std::vector<int64_t> ids = TableIds(jobs.out);
  ASSERT_EQ(ids.size(), 20000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], int64_t(i + 1));

  ProcessResult json = Client("jobs", {"--all", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed["jobs"].size(), 20000u);
  EXPECT_EQ(parsed["jobs"][19999]["id"], 20000);
  EXPECT_EQ(parsed["jobs"][19999]["name"], Name(20000));

  auto dashboard = DashboardServer::Start(
      {.master_address = master_->address(), .listen = "127.0.0.1:0"});
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();
  httplib::Client http("127.0.0.1", (*dashboard)->port());
  http.set_read_timeout(60, 0);
  // The table: /api/jobs, a page at a time, every job once in id order.
  std::vector<int64_t> listed;
  std::string token;
  do {
    auto res = http.Get("/api/jobs?page_size=500&page_token=" + token);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200) << res->body;
    const nlohmann::json page = nlohmann::json::parse(res->body);
    ASSERT_LE(page["jobs"].size(), 500u);
    for (const nlohmann::json& job : page["jobs"]) {
      listed.push_back(job["id"].get<int64_t>());
    }
    token = page["next_page_token"].get<std::string>();
  } while (!token.empty() && listed.size() <= 20000u);
  ASSERT_EQ(listed.size(), 20000u);
  for (size_t i = 0; i < listed.size(); ++i) {
    ASSERT_EQ(listed[i], int64_t(i + 1));
  }
  // The cards: /api/state counts them and lists none (every open page
  // polls it every 2 s).
  auto res = http.Get("/api/state");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_LT(res->body.size(), 4096u);
  const nlohmann::json state = nlohmann::json::parse(res->body);
  EXPECT_EQ(state["jobs"]["pending"], 20000);
}

TEST_F(FrontDoorCliTest, JobsFiltersByStateUserNameAndSince) {
  // Jobs 1..6, submitted one second apart from 2024-01-01T23:59:57 UTC:
  // jobs 4, 5 and 6 on 2024-01-02.
  CreateStoredJobs(6, 1, 1704153600.0 - 3);
  StartMaster();
  ASSERT_EQ(Client("cancel", {"3"}).exit_code, 0);
  EXPECT_EQ(TableIds(Client("jobs", {"--state", "cancelled"}).out),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(TableIds(Client("jobs", {"--state", "pending"}).out),
            (std::vector<int64_t>{1, 2, 4, 5, 6}));
  // Like squeue: the jobs not yet ended by default, every one with --all,
  // any of a list of states.
  EXPECT_EQ(TableIds(Client("jobs").out),
            (std::vector<int64_t>{1, 2, 4, 5, 6}));
  EXPECT_EQ(TableIds(Client("jobs", {"--all"}).out),
            (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(TableIds(Client("jobs", {"--state", "cancelled,running"}).out),
            (std::vector<int64_t>{3}));
  EXPECT_EQ(
      TableIds(
          Client("jobs", {"--state", "pending,cancelled", "--user", "u0"}).out),
      (std::vector<int64_t>{2, 4, 6}));
  EXPECT_EQ(TableIds(Client("jobs", {"--user", "u1"}).out),
            (std::vector<int64_t>{1, 5}));
  EXPECT_EQ(TableIds(Client("jobs", {"--all", "--user", "u1"}).out),
            (std::vector<int64_t>{1, 3, 5}));
  EXPECT_EQ(TableIds(Client("jobs", {"--all", "--name", Name(4)}).out),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(TableIds(Client("jobs", {"--all", "--since", "2024-01-02"}).out),
            (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(
      TableIds(Client("jobs", {"--all", "--since", "2024-01-02T00:00:01"}).out),
      (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(TableIds(Client("jobs",
                            {"--all", "--since", "1704153601", "--user", "u0"})
                         .out),
            (std::vector<int64_t>{6}));
  ProcessResult none = Client("jobs", {"--all", "--user", "nobody"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(Lines(none.out).size(), 1u);  // the header only
  ExpectOneLineError(Client("jobs", {"--state", "sleeping"}),
                     "--state sleeping: 'sleeping': expected pending, "
                     "starting,");
  ExpectOneLineError(Client("jobs", {"--state", "running,,failed"}),
                     "--state running,,failed: '': expected pending,");
  ExpectOneLineError(Client("jobs", {"--state", "failed", "--all"}),
                     "--state and --all: give one");
  ExpectOneLineError(Client("jobs", {"--all", "--since", "yesterday"}),
                     "--since yesterday: expected Unix seconds, a local "
                     "date YYYY-MM-DD[THH:MM:SS] or a time ago");
}

TEST_F(FrontDoorCliTest, SubmitRefusesABadSpecBeforeSendingIt) {
  // Nothing listens there: these fail before any RPC, at once.
  const std::string nowhere = "127.0.0.1:" + std::to_string(UnusedPort());
  ProcessResult r =
      RunProcess({TIRESIAS_BINARY, "submit", "--master", nowhere, "--gpus", "1",
                  "--env", "1A=x", "--", "/bin/true"});
  ExpectOneLineError(r,
                     "submit: spec.env key \"1A\": expected a variable "
                     "name matching [A-Za-z_][A-Za-z0-9_]*");
  r = RunProcess({TIRESIAS_BINARY, "submit", "--master", nowhere, "--gpus", "1",
                  "--name", std::string(300, 'n'), "--", "/bin/true"});
  ExpectOneLineError(r,
                     "submit: spec.name: expected at most 256 bytes, got "
                     "300");
  // Shapes and --signal, refused naming the flags.
  for (const auto& [flags, says] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--gpus", "3", "--nodes", "2", "--gpus-per-node", "2"},
            "--gpus 3 is not --nodes 2 x --gpus-per-node 2; give two of the "
            "three"},
           {{"--gpus", "3", "--gpus-per-node", "2"},
            "--gpus 3 is not a multiple of --gpus-per-node 2"},
           {{"--nodes", "2"},
            "--nodes 2 needs --gpus-per-node G (or a --gpus that 2 "
            "divides)"},
           {{"--nodes", "0", "--gpus-per-node", "1"},
            "--nodes: expected at least 1, got 0"},
           {{"--gpus", "1", "--signal", "USR1@60"},
            "--signal warns before the time limit: give --time too"},
           {{"--gpus", "1", "--time", "5", "--signal", "KILL"},
            "--signal \"KILL\": expected SIG[@SECONDS]"}}) {
    std::vector<std::string> argv = {TIRESIAS_BINARY, "submit", "--master",
                                     nowhere};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "/bin/true"});
    ExpectOneLineError(RunProcess(argv), says);
  }
}

TEST_F(FrontDoorCliTest, SubmitRetriesUntilTheMasterComesUpAndCreatesOneJob) {
  const int port = UnusedPort();
  const std::string address = absl::StrCat("127.0.0.1:", port);
  ProcessResult submit;
  std::thread client([&] {
    submit =
        RunProcess({TIRESIAS_BINARY, "submit", "--master", address, "--gpus",
                    "1", "--retry-for", "30", "--", "/bin/true"});
  });
  // The master comes up on that port after the client's first attempts.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  master::RealClock clock;
  MasterOptions options;
  options.state_dir = StateDir();
  auto state = MasterState::Open(options, &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  auto server = MasterServer::Start(state->get(), &clock, address);
  ASSERT_TRUE(server.ok()) << server.status();
  client.join();
  EXPECT_EQ(submit.exit_code, 0) << submit.err;
  EXPECT_EQ(submit.out, "1\n");
  EXPECT_EQ((*state)->ListJobs()->size(), 1u);
  (*server)->Shutdown();
}

TEST_F(FrontDoorCliTest, SubmitGivesUpAfterRetryForWithAClearMessage) {
  const std::string nowhere = "127.0.0.1:" + std::to_string(UnusedPort());
  const auto start = std::chrono::steady_clock::now();
  ProcessResult r =
      RunProcess({TIRESIAS_BINARY, "submit", "--master", nowhere, "--gpus", "1",
                  "--retry-for", "1", "--name", "mine", "--", "/bin/true"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ExpectOneLineError(r,
                     "submit: gave up after retrying for 1 s: cannot "
                     "reach the master at " +
                         nowhere);
  EXPECT_THAT(r.err, HasSubstr("`tiresias jobs --name mine`"));
  EXPECT_GE(seconds, 0.5);
  EXPECT_LT(seconds, 10);
}

}  // namespace
}  // namespace tiresias::cluster_test

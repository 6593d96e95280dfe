// End-to-end tests of `tiresias master` and the client commands: a real
// master child process on loopback with a real state dir, and the real
// `tiresias` binary as the client. No agents: jobs stay pending.
#include <httplib.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
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
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

class ClusterCliTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv("TIRESIAS_MASTER"); }
  void TearDown() override { master_.reset(); }

  void StartMaster(std::vector<std::string> extra = {}) {
    master_ = std::make_unique<MasterProcess>(TIRESIAS_BINARY,
                                              (dir_ / "state").string(), extra);
    ASSERT_FALSE(master_->address().empty())
        << "master printed: " << master_->output();
  }

  // `tiresias command --master <the master> args...`.
  ProcessResult Client(const std::string& command,
                       const std::vector<std::string>& args = {}) {
    return RunClient(TIRESIAS_BINARY, *master_, command, args);
  }

  std::string Submit(const std::vector<std::string>& args) {
    ProcessResult r = Client("submit", args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  test_support::TestDir tmp_{"tiresias-cluster-cli"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
};

TEST_F(ClusterCliTest, SubmitListShowNodesCancel) {
  StartMaster();
  EXPECT_EQ(
      Submit({"--gpus", "2", "--name", "train", "--env", "A=b", "--env",
              "C=d=e", "--", "/usr/bin/python3", "train.py", "--steps", "5"}),
      "1\n");

  ProcessResult jobs = Client("jobs", {"--all"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  std::vector<std::string> lines = Lines(jobs.out);
  ASSERT_EQ(lines.size(), 2u) << jobs.out;
  EXPECT_THAT(lines[0], StartsWith("JOBID"));
  for (const char* column : {"NAME", "USER", "STATE", "QUEUE", "GPUS",
                             "ATTAINED(GPU-s)", "WAIT", "RUN", "NODES"}) {
    EXPECT_THAT(lines[0], HasSubstr(column));
  }
  EXPECT_THAT(lines[1], StartsWith("1 "));
  EXPECT_THAT(lines[1], HasSubstr(" train "));
  EXPECT_THAT(lines[1], HasSubstr(" pending "));

  ProcessResult job = Client("job", {"1"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.out, HasSubstr("State:           pending"));
  EXPECT_THAT(job.out, HasSubstr("/usr/bin/python3 train.py --steps 5"));
  EXPECT_THAT(job.out, HasSubstr("Profile:         not measured yet"));
  // The environment is counted on one line; --env lists it.
  EXPECT_THAT(job.out, HasSubstr(" variables (A "));
  EXPECT_THAT(job.out, Not(HasSubstr("A=b")));
  ProcessResult env = Client("job", {"1", "--env"});
  EXPECT_THAT(env.out, HasSubstr("Env:             A=b\n"));
  EXPECT_THAT(env.out, HasSubstr("Env:             C=d=e\n"));
  EXPECT_THAT(job.out, HasSubstr("EVENTS"));
  EXPECT_THAT(job.out, HasSubstr("submitted"));

  ProcessResult nodes = Client("nodes");
  ASSERT_EQ(nodes.exit_code, 0) << nodes.err;
  ASSERT_EQ(Lines(nodes.out).size(), 1u) << nodes.out;
  EXPECT_THAT(nodes.out, StartsWith("NODE"));
  for (const char* column : {"STATE", "GPUS", "FREE", "JOBS"}) {
    EXPECT_THAT(nodes.out, HasSubstr(column));
  }

  ProcessResult cancel = Client("cancel", {"1"});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(cancel.out, "job 1 cancelled\n");
  job = Client("job", {"1"});
  ASSERT_EQ(job.exit_code, 0) << job.err;
  EXPECT_THAT(job.out, HasSubstr("State:           cancelled"));
  EXPECT_THAT(job.out, HasSubstr("cancelled"));

  ProcessResult json = Client("jobs", {"--all", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  ASSERT_EQ(parsed["jobs"].size(), 1u);
  EXPECT_EQ(parsed["jobs"][0]["state"], "cancelled");
  EXPECT_EQ(parsed["jobs"][0]["gpus"], 2);
  EXPECT_EQ(parsed["jobs"][0]["name"], "train");

  ProcessResult job_json = Client("job", {"1", "--json"});
  ASSERT_EQ(job_json.exit_code, 0) << job_json.err;
  nlohmann::json one = nlohmann::json::parse(job_json.out);
  EXPECT_EQ(one["id"], 1);  // a number (docs/json.md)
  EXPECT_GE(one["events"].size(), 2u);
  EXPECT_EQ(
      nlohmann::json::parse(Client("nodes", {"--json"}).out)["nodes"].size(),
      0u);
}

// submit sends where the job starts (the caller's directory, or --chdir
// made absolute against it), its output patterns, and the caller's
// environment less the deny-list (--export ALL), with --env on top.
TEST_F(ClusterCliTest, SubmitSendsWorkdirOutputsAndTheCallersEnvironment) {
  StartMaster();
  setenv("JOBENV_PROBE", "from the caller", 1);
  setenv("SSH_CONNECTION", "10.0.0.1 22 10.0.0.2 22", 1);
  EXPECT_EQ(Submit({"--gpus", "1", "--chdir", "runs/./a/", "--output",
                    "o-%j-%r.txt", "--error", "e-%j.txt", "--env",
                    "JOBENV_PROBE=from --env", "--", "/bin/true"}),
            "1\n");
  EXPECT_EQ(Submit({"--gpus", "1", "--export", "NONE", "--env", "A=b", "--",
                    "/bin/true"}),
            "2\n");
  unsetenv("JOBENV_PROBE");
  unsetenv("SSH_CONNECTION");
  const std::string cwd = fs::current_path().string();
  nlohmann::json first =
      nlohmann::json::parse(Client("job", {"1", "--json"}).out, nullptr, false);
  const nlohmann::json& spec = first;  // the spec's fields are the job's
  EXPECT_EQ(spec["workdir"], cwd + "/runs/a");
  EXPECT_EQ(spec["output"], "o-%j-%r.txt");
  EXPECT_EQ(spec["error"], "e-%j.txt");
  EXPECT_EQ(spec["env"]["JOBENV_PROBE"], "from --env");  // --env wins
  EXPECT_FALSE(spec["env"].contains("SSH_CONNECTION"));
  EXPECT_FALSE(spec["env"].contains("PWD"));
  if (getenv("PATH") != nullptr) EXPECT_EQ(spec["env"]["PATH"], getenv("PATH"));
  nlohmann::json second =
      nlohmann::json::parse(Client("job", {"2", "--json"}).out, nullptr, false);
  EXPECT_EQ(second["env"], (nlohmann::json{{"A", "b"}}));
  EXPECT_EQ(second["workdir"], cwd);
  EXPECT_THAT(Client("job", {"1"}).out,
              HasSubstr("Output:          o-%j-%r.txt\n"));
  // Bad flags are refused by the client, naming the flag.
  ExpectOneLineError(
      Client("submit", {"--gpus", "1", "--output", "o-%x", "--", "/bin/true"}),
      "--output: unknown placeholder \"%x\" at byte 2");
  ExpectOneLineError(
      Client("submit", {"--gpus", "1", "--export", "A-B", "--", "/bin/true"}),
      "--export \"A-B\": \"A-B\" is not a variable name");
  EXPECT_EQ(Client("jobs", {"--all", "--json"}).exit_code, 0);
}

TEST_F(ClusterCliTest, NameDefaultsToCommandBaseName) {
  StartMaster();
  Submit({"--gpus", "1", "--", "/bin/sleep", "100"});
  EXPECT_THAT(Client("jobs", {"--all"}).out, HasSubstr(" sleep "));
}

TEST_F(ClusterCliTest, BadRequestsGetOneLineErrorsAndMasterKeepsServing) {
  StartMaster();
  ExpectOneLineError(Client("submit", {"--gpus", "0", "--", "/bin/true"}),
                     "--cpus: required for a job without GPUs");
  ExpectOneLineError(Client("submit", {"--gpus", "-1", "--", "/bin/true"}),
                     "gpus");
  ExpectOneLineError(Client("submit", {"--gpus", "1"}), "command");
  ExpectOneLineError(
      Client("submit", {"--gpus", "1", "--env", "NOEQUALS", "--", "/bin/true"}),
      "KEY=VALUE");
  ExpectOneLineError(Client("job", {"42"}), "job 42: not found");
  ExpectOneLineError(Client("cancel", {"42"}), "not found");
  EXPECT_EQ(Submit({"--gpus", "1", "--", "/bin/true"}), "1\n");
  ASSERT_EQ(Client("cancel", {"1"}).exit_code, 0);
  ExpectOneLineError(Client("cancel", {"1"}), "cancel job 1");
  EXPECT_EQ(Client("jobs", {"--all"}).exit_code, 0);
  EXPECT_TRUE(master_->running());
}

TEST_F(ClusterCliTest, UnreachableMasterNamesTheAddress) {
  const std::string address = "127.0.0.1:" + std::to_string(UnusedPort());
  for (const char* command : {"jobs", "nodes"}) {
    ProcessResult r =
        RunProcess({TIRESIAS_BINARY, command, "--master", address});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err,
                StartsWith("tiresias: cannot reach the master at " + address));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // $TIRESIAS_MASTER is the default for --master.
  setenv("TIRESIAS_MASTER", address.c_str(), 1);
  // (--retry-for 1: submit retries an unreachable master, 30 s by default.)
  ProcessResult r = RunProcess({TIRESIAS_BINARY, "submit", "--gpus", "1",
                                "--retry-for", "1", "--", "/bin/true"});
  unsetenv("TIRESIAS_MASTER");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr(address));
}

TEST_F(ClusterCliTest, SigtermStopsCleanlyAndRestartKeepsJobs) {
  StartMaster();
  Submit({"--gpus", "1", "--name", "first", "--", "/bin/true"});
  Submit({"--gpus", "4", "--name", "second", "--", "/bin/true"});
  EXPECT_EQ(master_->Stop(SIGTERM), 0);

  StartMaster();
  ProcessResult jobs = Client("jobs", {"--all"});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  std::vector<std::string> lines = Lines(jobs.out);
  ASSERT_EQ(lines.size(), 3u) << jobs.out;
  EXPECT_THAT(lines[1], HasSubstr("first"));
  EXPECT_THAT(lines[2], HasSubstr("second"));
  EXPECT_THAT(lines[2], HasSubstr("pending"));
  // Ids are never reused across restarts.
  EXPECT_EQ(Submit({"--gpus", "1", "--", "/bin/true"}), "3\n");
  EXPECT_EQ(master_->Stop(SIGINT), 0);
}

TEST_F(ClusterCliTest, MasterServesMetricsWhenAsked) {
  StartMaster({"--http-listen", "127.0.0.1:0"});
  const std::string marker = "tiresias master: metrics on http://127.0.0.1:";
  const size_t at = master_->output().find(marker);
  ASSERT_NE(at, std::string::npos) << master_->output();
  // Open to probes, and saying what a probe cannot see: no security.
  httplib::Client http("127.0.0.1",
                       std::stoi(master_->output().substr(at + marker.size())));
  auto health = http.Get("/healthz");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(health->body, "ok (insecure: no TLS, no authentication)\n");
  // An --insecure master has no tokens to ask /metrics for.
  ExpectOneLineError(
      RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "third").string(), "--http-listen",
                  "127.0.0.1:0", "--insecure", "--metrics-token-required"}),
      "--metrics-token-required: an --insecure master checks no tokens");
  ProcessResult r = RunProcess(
      {TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0", "--state-dir",
       (dir_ / "other").string(), "--http-listen", "nonsense", "--insecure"});
  ExpectOneLineError(r, "--http-listen nonsense: expected host:port");
}

// `tiresias status`: the cluster at a glance, PACKLIMIT with where it
// comes from; the same as JSON; a bad PACKLIMIT flag is refused.
TEST_F(ClusterCliTest, StatusShowsThePackLimitAndWhereItComesFrom) {
  StartMaster({"--placement", "profiled", "--pack-limit", "0.6"});
  Submit({"--gpus", "1", "--", "sleep", "1"});
  ProcessResult status = Client("status");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("policy     tiresias-l\n"));
  EXPECT_THAT(status.out, HasSubstr("placement  profiled\n"));
  EXPECT_THAT(status.out, HasSubstr("nodes      0 up, 0 down\n"));
  EXPECT_THAT(status.out, HasSubstr("jobs       1 pending, 0 starting"));
  EXPECT_THAT(status.out,
              HasSubstr("PACKLIMIT  0.6000, start value (0 samples: too few "
                        "samples; 0 runs measured)\n"));
  ProcessResult json = Client("status", {"--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  nlohmann::json parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["pack_limit"]["value"], 0.6);
  EXPECT_EQ(parsed["pack_limit"]["learning"], true);
  EXPECT_EQ(parsed["pack_limit"]["fit"], "too_few_samples");
  EXPECT_EQ(parsed["jobs"]["pending"], 1);
  master_.reset();

  StartMaster({"--placement", "pack", "--fixed-pack-limit"});
  status = Client("status");
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("PACKLIMIT  0.5000, not used (placement "
                                    "pack); 0 runs measured\n"));
  for (const char* bad : {"1.5", "-0.1", "nan"}) {
    ExpectOneLineError(
        RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                    "--state-dir", (dir_ / "bad").string(), "--insecure",
                    "--pack-limit", bad}),
        "--pack-limit ");
  }
  ExpectOneLineError(
      RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "bad").string(), "--insecure",
                  "--pack-limit-refresh", "0"}),
      "--pack-limit-refresh 0: expected a positive number of seconds");
  ExpectOneLineError(
      RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "bad").string(), "--insecure",
                  "--job-port-base", "80"}),
      "--job-port-base 80: expected 1024 to 55000");
  ExpectOneLineError(
      RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "bad").string(), "--insecure",
                  "--max-streams-per-user", "-1"}),
      "--max-streams-per-user -1: expected 0 (no limit) or a positive number");
}

TEST_F(ClusterCliTest, MasterRejectsBadFlags) {
  ProcessResult r = RunProcess(
      {TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0", "--state-dir",
       (dir_ / "state").string(), "--thresholds", "abc"});
  ExpectOneLineError(r, "--thresholds abc");
  r = RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "state").string(), "--policy",
                  "no-such-policy"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, StartsWith("tiresias: "));
  // Gandiva time-slices GPUs, which only the simulator models: refused
  // before any state is made, saying so.
  r = RunProcess({TIRESIAS_BINARY, "master", "--listen", "127.0.0.1:0",
                  "--state-dir", (dir_ / "gandiva").string(), "--policy",
                  "gandiva", "--insecure"});
  ExpectOneLineError(r, "--policy gandiva: policy \"gandiva\" is a "
                        "simulator-only baseline");
  EXPECT_FALSE(fs::exists(dir_ / "gandiva"));
  // `up` checks where its dashboard would listen before starting anything.
  r = RunProcess({TIRESIAS_BINARY, "up", "--insecure", "--state-dir",
                  (dir_ / "up").string(), "--dashboard-listen", "nonsense"});
  ExpectOneLineError(r, "--dashboard-listen nonsense: expected host:port");
  EXPECT_FALSE(fs::exists(dir_ / "up"));
}

// Reading logs from agents is tested with a real agent in
// agent_daemon_test (ReadJobLog) and end to end in e2e.preemption; without
// agents, only the errors can be seen here.
TEST_F(ClusterCliTest, LogsOfAJobThatNeverRanAreAClearError) {
  StartMaster();
  Submit({"--gpus", "2", "--", "/bin/true"});
  ExpectOneLineError(Client("logs", {"1"}), "job 1 has not started yet");
  ExpectOneLineError(Client("logs", {"7"}), "job 7");
  ExpectOneLineError(Client("logs", {"1", "--rank", "-1"}),
                     "rank: expected >= 0, got -1");
  // -f waits for the job to start, and ends when it ends without running.
  ASSERT_EQ(Client("cancel", {"1"}).exit_code, 0);
  ProcessResult r = Client("logs", {"1", "-f"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("has not started"));
}

}  // namespace
}  // namespace tiresias::cluster_test

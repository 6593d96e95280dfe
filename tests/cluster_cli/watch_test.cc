// End-to-end tests of `tiresias watch`: a real master child process on
// loopback with a real state dir, the real `tiresias` binary submitting and
// cancelling jobs, and `tiresias watch` read as it prints. No agents: jobs
// stay pending, and each submit or cancel is exactly one event, so the
// sequences of a fresh state dir are 1, 2, 3, ... in the order of our calls.
// Most tests use an --insecure master; SecureWatchTest uses one with TLS and
// tokens, as `tiresias up` starts it by default.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli_fixture.h"
#include "core/testing/test_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_process.h"
#include "nlohmann/json.hpp"
#include "subprocess.h"

namespace tiresias::cluster_test {
namespace {

namespace fs = std::filesystem;
using cli_test::ProcessOptions;
using cli_test::Lines;
using cli_test::ProcessResult;
using cli_test::RunProcess;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using Clock = std::chrono::steady_clock;

// Generous bounds for a loaded machine; a passing run waits far less.
constexpr std::chrono::seconds kEventTimeout{10};

// A child process whose stdout and stderr are read while it runs, with a
// deadline on every wait. It runs in its own process group, which the
// destructor kills with SIGKILL. Not thread-safe.
class BackgroundProcess {
 public:
  explicit BackgroundProcess(const std::vector<std::string>& argv) {
    std::vector<char*> args;
    for (const std::string& arg : argv) {
      args.push_back(const_cast<char*>(arg.c_str()));
    }
    args.push_back(nullptr);
    int out[2];
    int err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      const int null = open("/dev/null", O_RDONLY);
      if (null < 0 || dup2(null, 0) < 0 || dup2(out[1], 1) < 0 ||
          dup2(err[1], 2) < 0) {
        _exit(126);
      }
      execv(args[0], args.data());
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    fds_[0] = out[0];
    fds_[1] = err[0];
    if (pid_ > 0) setpgid(pid_, pid_);
  }
  ~BackgroundProcess() {
    if (pid_ > 0) {
      kill(-pid_, SIGKILL);
      while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
    }
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Reads until stdout holds at least `n` complete lines; false if the
  // timeout passed or the process closed its output first.
  bool WaitForLines(size_t n, std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (Lines(CompleteLines()).size() < n) {
      if (!ReadSome(deadline)) return Lines(CompleteLines()).size() >= n;
    }
    return true;
  }

  // Reads everything and reaps the process. Returns its exit status, or -1
  // if a signal ended it or it was still running at the timeout.
  int WaitForExit(std::chrono::milliseconds timeout) {
    const Clock::time_point deadline = Clock::now() + timeout;
    while (ReadSome(deadline)) {
    }
    if (pid_ <= 0) return -1;
    int status = 0;
    while (true) {
      const pid_t done = waitpid(pid_, &status, WNOHANG);
      if (done == pid_) break;
      if (done < 0 && errno != EINTR) return -1;
      if (Clock::now() >= deadline) return -1;  // the destructor kills it
      usleep(10'000);  // its output is closed: it is exiting
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

  // Whether it is still running (has not exited), without waiting.
  bool Running() {
    if (pid_ <= 0) return false;
    if (waitpid(pid_, nullptr, WNOHANG) == 0) return true;
    pid_ = -1;  // reaped (or gone): nothing left to kill
    return false;
  }

  std::vector<std::string> lines() const { return Lines(CompleteLines()); }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  std::string CompleteLines() const {
    return out_.substr(0, out_.rfind('\n') + 1);
  }

  // Waits until some output arrives (appended to out_/err_) or the
  // deadline. False at the deadline or once both pipes are closed.
  bool ReadSome(Clock::time_point deadline) {
    pollfd polled[2];
    int n = 0;
    std::string* sinks[2];
    int* owners[2];
    for (int i = 0; i < 2; ++i) {
      if (fds_[i] < 0) continue;
      polled[n] = {fds_[i], POLLIN, 0};
      sinks[n] = i == 0 ? &out_ : &err_;
      owners[n] = &fds_[i];
      ++n;
    }
    if (n == 0) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - Clock::now());
    if (left.count() <= 0) return false;
    const int ready = poll(polled, n, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return false;
    for (int i = 0; i < n; ++i) {
      if (polled[i].revents == 0) continue;
      char buffer[65536];
      const ssize_t got = read(polled[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(*owners[i]);
        *owners[i] = -1;
      }
    }
    return true;
  }

  pid_t pid_ = -1;
  int fds_[2] = {-1, -1};  // stdout, stderr
  std::string out_;
  std::string err_;
};

// One plain-text event line: "YYYY-MM-DD HH:MM:SS  JOB  KIND DETAIL".
struct EventLine {
  std::string date, time, job, kind, detail;
};

EventLine ParseEventLine(const std::string& line) {
  EventLine e;
  std::istringstream in(line);
  in >> e.date >> e.time >> e.job >> e.kind;
  std::getline(in >> std::ws, e.detail);
  return e;
}

// "JOB KIND DETAIL" of each event line after the header, for comparing a
// whole output at once.
std::vector<std::string> Events(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    const EventLine e = ParseEventLine(lines[i]);
    out.push_back(e.job + " " + e.kind + " " + e.detail);
  }
  return out;
}

class WatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : {"TIRESIAS_MASTER", "TIRESIAS_CA", "TIRESIAS_TOKEN",
                             "TIRESIAS_TOKEN_FILE", "TIRESIAS_CERT",
                             "TIRESIAS_KEY", "TIRESIAS_MASTER_NAME"}) {
      unsetenv(name);
    }
    master_ = std::make_unique<MasterProcess>(
        TIRESIAS_BINARY, (dir_ / "state").string(), MasterExtraFlags());
    ASSERT_FALSE(master_->address().empty())
        << "master printed: " << master_->output();
  }
  void TearDown() override { master_.reset(); }
  // More flags for `tiresias master` (none: --insecure).
  virtual std::vector<std::string> MasterExtraFlags() const { return {}; }

  std::vector<std::string> Argv(const std::string& command,
                                const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {TIRESIAS_BINARY, command, "--master",
                                     master_->address()};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  ProcessResult Client(const std::string& command,
                       const std::vector<std::string>& args = {}) {
    ProcessOptions options;
    options.timeout = kEventTimeout;
    return RunProcess(Argv(command, args), options);
  }

  std::unique_ptr<BackgroundProcess> StartWatch(
      const std::vector<std::string>& args = {}) {
    return std::make_unique<BackgroundProcess>(Argv("watch", args));
  }

  // Submits a pending job asking for `gpus` GPUs; expects id `expected_id`.
  void Submit(int gpus, int expected_id) {
    ProcessResult r = Client(
        "submit", {"--gpus", std::to_string(gpus), "--", "/bin/sleep", "100"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.out, std::to_string(expected_id) + "\n");
  }

  void Cancel(int id) {
    ProcessResult r = Client("cancel", {std::to_string(id)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  test_support::TestDir tmp_{"tiresias-watch"};
  const fs::path& dir_ = tmp_.path();
  std::unique_ptr<MasterProcess> master_;
};

void ExpectHeader(const std::string& line) {
  EXPECT_THAT(line, StartsWith("TIME"));
  for (const char* column : {" JOB ", " KIND ", " DETAIL"}) {
    EXPECT_THAT(line, HasSubstr(column));
  }
}

TEST_F(WatchTest, AfterReplaysStoredEventsInSequenceOrderAsJson) {
  const double before = static_cast<double>(time(nullptr));
  Submit(1, 1);  // sequence 1
  Submit(2, 2);  // sequence 2
  Cancel(1);     // sequence 3
  const double after = static_cast<double>(time(nullptr)) + 1;

  auto watch = StartWatch({"--after", "0", "--json"});
  ASSERT_TRUE(watch->WaitForLines(3, kEventTimeout))
      << watch->out() << watch->err();
  const std::vector<std::string> lines = watch->lines();
  ASSERT_EQ(lines.size(), 3u) << watch->out();  // no header with --json
  struct Expected {
    const char* job_id;
    const char* sequence;
    const char* kind;
    const char* detail;
  };
  const Expected expected[] = {{"1", "1", "submitted", "1 GPU"},
                               {"2", "2", "submitted", "2 GPUs"},
                               {"1", "3", "cancelled", "cancelled by user"}};
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i]);
    const nlohmann::json event = nlohmann::json::parse(lines[i]);
    // docs/json.md's event: ids and sequences are numbers; attempt is null
    // for events that concern no launch.
    EXPECT_EQ(event.size(), 6u);
    EXPECT_EQ(event["job_id"], std::stoll(expected[i].job_id));
    EXPECT_EQ(event["sequence"], std::stoll(expected[i].sequence));
    EXPECT_EQ(event["attempt"], nullptr);
    EXPECT_EQ(event["kind"], expected[i].kind);
    EXPECT_EQ(event["detail"], expected[i].detail);
    ASSERT_TRUE(event["time"].is_number());
    EXPECT_GE(event["time"].get<double>(), before);
    EXPECT_LE(event["time"].get<double>(), after);
  }
  // A watch without JOB follows every job until stopped.
  EXPECT_TRUE(watch->Running());

  // --after 1: only the events after sequence 1, in the text format.
  watch = StartWatch({"--after", "1"});
  ASSERT_TRUE(watch->WaitForLines(3, kEventTimeout))
      << watch->out() << watch->err();
  ASSERT_EQ(watch->lines().size(), 3u) << watch->out();
  ExpectHeader(watch->lines()[0]);
  EXPECT_THAT(
      Events(watch->lines()),
      ElementsAre("2 submitted 2 GPUs", "1 cancelled cancelled by user"));
  const EventLine first = ParseEventLine(watch->lines()[1]);
  EXPECT_THAT(first.date,
              ::testing::MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}"));
  EXPECT_THAT(first.time,
              ::testing::MatchesRegex("[0-9]{2}:[0-9]{2}:[0-9]{2}"));
}

TEST_F(WatchTest, JobFilterShowsOnlyThatJobAndEndsWithIt) {
  Submit(1, 1);
  Submit(2, 2);
  Cancel(1);

  // An ended job: its history, then the command returns by itself.
  ProcessResult ended = Client("watch", {"1"});
  ASSERT_EQ(ended.exit_code, 0) << ended.err;
  EXPECT_EQ(ended.err, "");
  std::vector<std::string> lines = Lines(ended.out);
  ASSERT_FALSE(lines.empty());
  ExpectHeader(lines[0]);
  EXPECT_THAT(Events(lines), ElementsAre("1 submitted 1 GPU",
                                         "1 cancelled cancelled by user"));

  // --after skips the part of its history up to that sequence; once its
  // end is skipped too there is nothing left to wait for.
  ProcessResult tail = Client("watch", {"1", "--after", "2"});
  ASSERT_EQ(tail.exit_code, 0) << tail.err;
  EXPECT_THAT(Events(Lines(tail.out)),
              ElementsAre("1 cancelled cancelled by user"));
  ProcessResult past_end = Client("watch", {"1", "--after", "3", "--json"});
  EXPECT_FALSE(past_end.timed_out) << "waited for an end already passed";
  EXPECT_EQ(past_end.exit_code, 0) << past_end.err;
  EXPECT_EQ(past_end.out, "");

  // A pending job: its history (which shows the stream is open), then its
  // live events, and nothing of the other jobs, until its cancel ends it.
  auto watch = StartWatch({"2"});
  ASSERT_TRUE(watch->WaitForLines(2, kEventTimeout))
      << watch->out() << watch->err();
  EXPECT_THAT(Events(watch->lines()), ElementsAre("2 submitted 2 GPUs"));
  Submit(4, 3);
  Cancel(3);
  Cancel(2);
  EXPECT_EQ(watch->WaitForExit(kEventTimeout), 0) << watch->err();
  EXPECT_THAT(
      Events(watch->lines()),
      ElementsAre("2 submitted 2 GPUs", "2 cancelled cancelled by user"));
  EXPECT_EQ(watch->err(), "");
}

TEST_F(WatchTest, LiveWatchPrintsNewEventsAsTheyHappen) {
  // Deterministic: --after 0 on an empty log cannot miss anything, however
  // late the master sets up the stream.
  auto all = StartWatch({"--after", "0", "--json"});
  Submit(1, 1);
  ASSERT_TRUE(all->WaitForLines(1, kEventTimeout)) << all->out() << all->err();
  EXPECT_EQ(nlohmann::json::parse(all->lines()[0])["kind"], "submitted");

  // Without --after: from now on, so job 1's history is not shown. The
  // header is printed only once the master follows the event log (its
  // initial metadata), so nothing submitted after it can be missed.
  auto live = StartWatch();
  ASSERT_TRUE(live->WaitForLines(1, kEventTimeout))
      << live->out() << live->err();
  ExpectHeader(live->lines()[0]);
  Submit(3, 2);
  ASSERT_TRUE(live->WaitForLines(2, kEventTimeout))
      << live->out() << live->err();
  Cancel(2);
  ASSERT_TRUE(live->WaitForLines(3, kEventTimeout))
      << live->out() << live->err();
  EXPECT_THAT(
      Events(live->lines()),
      ElementsAre("2 submitted 3 GPUs", "2 cancelled cancelled by user"));
  EXPECT_TRUE(live->Running());  // without JOB it does not end with a job

  ASSERT_TRUE(all->WaitForLines(3, kEventTimeout)) << all->out();
  std::vector<std::string> kinds;
  for (const std::string& line : all->lines()) {
    const nlohmann::json event = nlohmann::json::parse(line);
    kinds.push_back(std::to_string(event["job_id"].get<int64_t>()) + " " +
                    event["kind"].get<std::string>());
  }
  EXPECT_THAT(kinds, ElementsAre("1 submitted", "2 submitted", "2 cancelled"));
}

// Expects a failure with exactly one "tiresias: " line on stderr and
// nothing on stdout.
void ExpectOneLineError(const ProcessResult& r, const std::string& part) {
  EXPECT_FALSE(r.timed_out) << "hung; printed " << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, StartsWith("tiresias: "));
  EXPECT_THAT(r.err, HasSubstr(part));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // Not even the header: a refused stream comes without the master's
  // "following" key.
  EXPECT_EQ(r.out, "");
}

TEST_F(WatchTest, UnknownJobAndUnreachableMasterFailWithOneLine) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"42"}, {"42", "--after", "0"}}) {
    ExpectOneLineError(
        Client("watch", args),
        "watch job 42: not found on the master at " + master_->address());
  }

  const std::string address = "127.0.0.1:" + std::to_string(UnusedPort());
  ProcessOptions options;
  options.timeout = kEventTimeout;
  for (const char* json : {"", "--json"}) {
    std::vector<std::string> argv = {TIRESIAS_BINARY, "watch", "--master",
                                     address};
    if (*json != '\0') argv.push_back(json);
    ProcessResult r = RunProcess(argv, options);
    SCOPED_TRACE(json);
    ExpectOneLineError(r, "cannot reach the master at " + address);
    if (*json != '\0') {
      EXPECT_EQ(r.out, "");
    }
  }
}

TEST_F(WatchTest, NegativeAfterIsRejected) {
  ProcessResult r = Client("watch", {"--after", "-1"});
  EXPECT_FALSE(r.timed_out) << "ignored --after -1 and watched";
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_THAT(r.err, StartsWith("tiresias: "));
  EXPECT_THAT(r.err, HasSubstr("--after"));
  EXPECT_EQ(r.out, "");
}

// Against a master with TLS and tokens: the clients find the CA in
// TIRESIAS_CA and their token in TIRESIAS_TOKEN (set or unset per call).
class SecureWatchTest : public WatchTest {
 protected:
  void SetUp() override {
    WatchTest::SetUp();
    if (HasFatalFailure()) return;
    std::ifstream token_file(dir_ / "state" / "admin-token");
    std::getline(token_file, admin_token_);
    ASSERT_FALSE(admin_token_.empty());
    setenv("TIRESIAS_CA", (dir_ / "tls" / "ca.pem").c_str(), 1);
    // No control process outlives a test (watch never uses one anyway).
    setenv("TIRESIAS_CONTROL_PERSIST", "0", 1);
    setenv("TIRESIAS_TOKEN", admin_token_.c_str(), 1);
  }
  void TearDown() override {
    for (const char* name :
         {"TIRESIAS_CA", "TIRESIAS_TOKEN", "TIRESIAS_CONTROL_PERSIST"}) {
      unsetenv(name);
    }
    WatchTest::TearDown();
  }
  std::vector<std::string> MasterExtraFlags() const override {
    return {"--init-ca", (dir_ / "tls").string()};
  }

  // A new token of a user who is not an admin.
  std::string CreateUserToken(const std::string& user) {
    ProcessOptions options;
    options.timeout = kEventTimeout;
    ProcessResult r = RunProcess(
        {TIRESIAS_BINARY, "admin", "token", "create", "--master",
         master_->address(), "--user", user, "--json"},
        options);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false).value("token", "");
  }

  std::string admin_token_;
};

// With a valid token `watch` streams as it does on an --insecure master: a
// job's history and live events until it ends, and every job's live events
// for a user who is not an admin too (everyone authenticated may watch,
// proto/tiresias.proto; events carry no environment or command).
TEST_F(SecureWatchTest, WithATokenItStreamsTheEventsOfASubmittedJob) {
  auto all = StartWatch({"--after", "0", "--json"});
  Submit(1, 1);
  ASSERT_TRUE(all->WaitForLines(1, kEventTimeout)) << all->out() << all->err();
  const nlohmann::json first = nlohmann::json::parse(all->lines()[0]);
  EXPECT_EQ(first["job_id"], 1);
  EXPECT_EQ(first["kind"], "submitted");

  const std::string bob = CreateUserToken("bob");
  ASSERT_FALSE(bob.empty());
  setenv("TIRESIAS_TOKEN", bob.c_str(), 1);
  auto bobs = StartWatch({"1"});
  setenv("TIRESIAS_TOKEN", admin_token_.c_str(), 1);
  ASSERT_TRUE(bobs->WaitForLines(2, kEventTimeout))
      << bobs->out() << bobs->err();
  Cancel(1);
  EXPECT_EQ(bobs->WaitForExit(kEventTimeout), 0) << bobs->err();
  EXPECT_THAT(
      Events(bobs->lines()),
      ElementsAre("1 submitted 1 GPU", "1 cancelled cancelled by user"));
  EXPECT_EQ(bobs->err(), "");

  ASSERT_TRUE(all->WaitForLines(2, kEventTimeout)) << all->out() << all->err();
  EXPECT_EQ(nlohmann::json::parse(all->lines()[1])["kind"], "cancelled");
  EXPECT_TRUE(all->Running());
}

// Without a token, or with one the master does not know, the master says
// UNAUTHENTICATED at once: one line, exit 1, no hang, no event.
TEST_F(SecureWatchTest, WithoutATokenItFailsWithOneLine) {
  Submit(1, 1);
  for (const char* token : {"", "tsk_1_0000"}) {
    SCOPED_TRACE(token);
    if (*token == '\0') {
      unsetenv("TIRESIAS_TOKEN");
    } else {
      setenv("TIRESIAS_TOKEN", token, 1);
    }
    for (const std::vector<std::string>& args : {std::vector<std::string>{},
                                                 {"--json"},
                                                 {"1"},
                                                 {"1", "--after", "0"}}) {
      SCOPED_TRACE(args.empty() ? "" : args[0]);
      ProcessResult r = Client("watch", args);
      ExpectOneLineError(r, "the master does not know who you are");
    }
  }
}

TEST_F(WatchTest, EndsWhenTheMasterShutsDown) {
  Submit(1, 1);
  auto watch = StartWatch({"--after", "0"});
  // The replayed event shows the stream is open on the master.
  ASSERT_TRUE(watch->WaitForLines(2, kEventTimeout))
      << watch->out() << watch->err();
  EXPECT_EQ(master_->Stop(SIGTERM), 0);
  EXPECT_EQ(watch->WaitForExit(kEventTimeout), 1) << watch->err();
  EXPECT_THAT(watch->err(), StartsWith("tiresias: cannot reach the master at " +
                                       master_->address()));
  EXPECT_THAT(watch->err(), HasSubstr("shutting down"));
  EXPECT_EQ(std::count(watch->err().begin(), watch->err().end(), '\n'), 1)
      << watch->err();
}

}  // namespace
}  // namespace tiresias::cluster_test

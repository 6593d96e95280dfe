// The preloaded profiler (libtiresias_profiler.so) against real processes:
// test_job.cc (and verbs_job.cc on the stand-in libibverbs) run with and
// without it, and what it wrote is read back with ParseRecords.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/profile_analysis.h"
#include "profiler/profile_records.h"
#include "profiler/record_format.h"

extern char** environ;

namespace tiresias::profiler {
namespace {

namespace fs = std::filesystem;
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::SizeIs;

enum class Mode {
  kPlain,      // not preloaded
  kOff,        // preloaded, TIRESIAS_PROFILE_OUT unset
  kRecording,  // preloaded, recording into profile.txt in the job's folder
};

struct JobRun {
  int exit_code = -1;
  int signal = 0;
  std::string out;
};

// A started job, its stdout on a pipe.
class Child {
 public:
  Child(const std::string& program, const std::vector<std::string>& args,
        const fs::path& cwd, Mode mode,
        const std::vector<std::pair<std::string, std::string>>& extra_env) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string var = *e;
      if (absl::StartsWith(var, "LD_PRELOAD=") ||
          absl::StartsWith(var, "TIRESIAS_PROFILE")) {
        continue;
      }
      env.push_back(var);
    }
    if (mode != Mode::kPlain)
      env.push_back(absl::StrCat("LD_PRELOAD=", PROFILER_LIB));
    if (mode == Mode::kRecording) {
      env.push_back(absl::StrCat(kOutEnv, "=profile.txt"));  // relative
    }
    for (const auto& [k, v] : extra_env) env.push_back(absl::StrCat(k, "=", v));
    std::vector<std::string> argv = {program};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> c_argv, c_env;
    for (auto& a : argv) c_argv.push_back(a.data());
    c_argv.push_back(nullptr);
    for (auto& e : env) c_env.push_back(e.data());
    c_env.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      if (chdir(cwd.c_str()) != 0) _exit(126);
      execve(c_argv[0], c_argv.data(), c_env.data());
      _exit(127);
    }
    close(fds[1]);
    out_fd_ = fds[0];
  }

  // Reads stdout until `text` appears or it ends.
  void ReadUntil(const std::string& text) {
    char buf[4096];
    while (!absl::StrContains(out_, text)) {
      const ssize_t n = read(out_fd_, buf, sizeof buf);
      if (n <= 0) return;
      out_.append(buf, static_cast<size_t>(n));
    }
  }

  void Kill(int signal) { kill(pid_, signal); }

  JobRun Wait() {
    char buf[4096];
    for (;;) {
      const ssize_t n = read(out_fd_, buf, sizeof buf);
      if (n <= 0) break;
      out_.append(buf, static_cast<size_t>(n));
    }
    close(out_fd_);
    JobRun run;
    int status = 0;
    waitpid(pid_, &status, 0);
    if (WIFEXITED(status)) run.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) run.signal = WTERMSIG(status);
    run.out = out_;
    return run;
  }

  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string out_;
};

class PreloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/tiresias-preload-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  JobRun Run(const std::vector<std::string>& args, Mode mode,
             const std::vector<std::pair<std::string, std::string>>& env = {},
             const std::string& program = TEST_JOB) {
    Child child(program, args, dir_, mode, env);
    return child.Wait();
  }

  fs::path ProfilePath() const { return dir_ / "profile.txt"; }

  Records ReadProfile() {
    std::ifstream in(ProfilePath());
    std::stringstream text;
    text << in.rdbuf();
    return ParseRecords(text.str());
  }

  // Files in the job's folder.
  std::vector<std::string> Files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      names.push_back(e.path().filename().string());
    }
    return names;
  }

  fs::path dir_;
};

// The sizes sent on each connection of process `p`, by connection number.
std::map<uint32_t, std::vector<uint64_t>> Sizes(const Records& r, size_t p) {
  std::map<uint32_t, std::vector<uint64_t>> sizes;
  for (const MessageRecord& m : r.messages) {
    if (m.process == p) sizes[m.conn].push_back(m.bytes);
  }
  return sizes;
}

std::vector<uint64_t> Times(const std::vector<uint64_t>& pattern, int n) {
  std::vector<uint64_t> out;
  for (int i = 0; i < n; ++i)
    out.insert(out.end(), pattern.begin(), pattern.end());
  return out;
}

TEST_F(PreloadTest, SocketSendsAreMessagesAndFilesPipesAreNot) {
  const JobRun run = Run({"unix", "5"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Records r = ReadProfile();
  EXPECT_EQ(r.malformed_lines, 0);
  ASSERT_THAT(r.processes, SizeIs(1));
  ASSERT_THAT(r.connections, SizeIs(1));
  EXPECT_EQ(r.connections[0].kind, "unix");
  // send, write, writev (10 + 20), sendmsg (40 + 60), sendto.
  EXPECT_THAT(Sizes(r, 0)[1],
              ElementsAreArray(Times({100, 2000, 30, 100, 500}, 5)));
  EXPECT_EQ(r.processes[0].stop_reason, "exit");
  EXPECT_EQ(r.processes[0].pid > 0, true);
  EXPECT_THAT(r.processes[0].argv, ElementsAre(TEST_JOB, "unix", "5"));
}

// The job's own output (what its reader received, with a checksum) is the
// same whether the library is absent, preloaded and off, or recording.
TEST_F(PreloadTest, OnAndOffGiveTheSameJobResults) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"unix", "5"},
        {"tcp", "3"},
        {"fork"},
        {"partial"},
        {"threads", "3", "20"},
        {"periodic", "3"}}) {
    const JobRun plain = Run(args, Mode::kPlain);
    const JobRun off = Run(args, Mode::kOff);
    const JobRun on = Run(args, Mode::kRecording);
    ASSERT_EQ(plain.exit_code, 0) << args[0] << ": " << plain.out;
    EXPECT_EQ(off.exit_code, 0) << args[0];
    EXPECT_EQ(on.exit_code, 0) << args[0];
    EXPECT_EQ(off.out, plain.out) << args[0];
    EXPECT_EQ(on.out, plain.out) << args[0];
    fs::remove(ProfilePath());
  }
}

// Off: the library passes every call through and writes nothing.
TEST_F(PreloadTest, OffWritesNothing) {
  const JobRun run = Run({"unix", "3"}, Mode::kOff);
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_THAT(Files(), ::testing::IsEmpty());
}

TEST_F(PreloadTest, TcpConnectionsAndTheirPeers) {
  const JobRun run = Run({"tcp", "4"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Records r = ReadProfile();
  ASSERT_THAT(r.connections, SizeIs(2));
  EXPECT_EQ(r.connections[0].kind, "tcp");
  EXPECT_THAT(r.connections[0].peer, ::testing::StartsWith("127.0.0.1:"));
  auto sizes = Sizes(r, 0);
  EXPECT_THAT(sizes[1], ElementsAreArray(Times({1000, 10}, 4)));  // client
  EXPECT_THAT(sizes[2], ElementsAreArray(Times({10}, 4)));        // server
  // Both ends are this process, so each peer is named by its pid.
  const Profile p = Analyze(r);
  const std::string self = absl::StrCat("pid ", r.processes[0].pid);
  ASSERT_THAT(p.streams, SizeIs(2));
  EXPECT_EQ(p.streams[0].peer, self);
  EXPECT_EQ(p.streams[1].peer, self);
}

// 3 x 111 are still in the parent's buffer when it forks: the child must
// not write them again. The child records under its own pid, on the
// inherited socket and its own.
TEST_F(PreloadTest, AForkedChildRecordsOnItsOwn) {
  const JobRun run = Run({"fork"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, ::testing::HasSubstr("child 0"));
  const Records r = ReadProfile();
  EXPECT_EQ(r.malformed_lines, 0);
  ASSERT_THAT(r.processes, SizeIs(2));
  const size_t parent = r.processes[0].ppid == r.processes[1].pid ? 1 : 0;
  const size_t child = 1 - parent;
  EXPECT_EQ(r.processes[child].ppid, r.processes[parent].pid);
  auto parent_sizes = Sizes(r, parent);
  ASSERT_THAT(parent_sizes, SizeIs(1));
  EXPECT_THAT(parent_sizes.begin()->second,
              ElementsAre(111, 111, 111, 333, 333));
  auto child_sizes = Sizes(r, child);
  ASSERT_THAT(child_sizes, SizeIs(2));
  EXPECT_THAT(child_sizes[1], ElementsAre(222, 222, 222, 222, 222));
  EXPECT_THAT(child_sizes[2], ElementsAre(444, 444, 444, 444));
}

TEST_F(PreloadTest, ThreadsAreRecordedExactly) {
  const JobRun run = Run({"threads", "4", "200"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Records r = ReadProfile();
  EXPECT_EQ(r.malformed_lines, 0);
  auto sizes = Sizes(r, 0);
  ASSERT_THAT(sizes, SizeIs(4));
  std::vector<uint64_t> seen;
  for (const auto& [conn, s] : sizes) {
    ASSERT_THAT(s, SizeIs(200));
    EXPECT_THAT(s, Each(s[0]));
    seen.push_back(s[0]);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_THAT(seen, ElementsAre(1000, 1001, 1002, 1003));
}

// A descriptor number closed and reused for a file is not a socket any
// more; reused again for a socket, it is a new connection; a file dup2()ed
// over a socket is a file.
TEST_F(PreloadTest, ReusedDescriptorsAreDescribedAgain) {
  const JobRun run = Run({"reopen"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out, "reused yes yes\n");  // the numbers were reused
  const Records r = ReadProfile();
  auto sizes = Sizes(r, 0);
  ASSERT_THAT(sizes, SizeIs(2));
  EXPECT_THAT(sizes[1], ElementsAre(10));
  EXPECT_THAT(sizes[2], ElementsAre(20));
}

// A 1 MiB send on a non-blocking socket goes out in many pieces: each is
// one message of 1 MiB.
TEST_F(PreloadTest, PartialSendsAreOneMessage) {
  const JobRun run = Run({"partial"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(run.out, ::testing::HasSubstr("many pieces"));
  EXPECT_THAT(Sizes(ReadProfile(), 0)[1],
              ElementsAre(1 << 20, 1 << 20, 1 << 20));
}

TEST_F(PreloadTest, ErrnoIsTheRealCallsErrno) {
  const JobRun run = Run({"errno"}, Mode::kRecording);
  EXPECT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out, "errno ok\n");
}

TEST_F(PreloadTest, UnderscoreExitFlushes) {
  const JobRun run = Run({"exit"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_THAT(Sizes(ReadProfile(), 0)[1], ElementsAre(50, 50, 50, 50, 50));
}

// SIGKILL: no destructor runs. What was flushed (every 100 ms) is in the
// file, and the file is the only thing in the job's folder.
TEST_F(PreloadTest, AKilledTaskLeavesOnlyItsFile) {
  Child child(TEST_JOB, {"hang"}, dir_, Mode::kRecording, {});
  child.ReadUntil("ready\n");
  child.Kill(SIGKILL);
  const JobRun run = child.Wait();
  EXPECT_EQ(run.signal, SIGKILL);
  EXPECT_THAT(Files(), ElementsAre("profile.txt"));
  const Records r = ReadProfile();
  EXPECT_EQ(r.malformed_lines, 0);
  EXPECT_THAT(Sizes(r, 0)[1], ElementsAre(60, 60, 60, 60, 60, 60));
  EXPECT_EQ(r.processes[0].stop_reason, "");  // it never got to stop
}

TEST_F(PreloadTest, StopsAfterMaxMessages) {
  const JobRun plain = Run({"many", "1000"}, Mode::kPlain);
  const JobRun run =
      Run({"many", "1000"}, Mode::kRecording, {{kMaxMessagesEnv, "100"}});
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, plain.out);
  const Records r = ReadProfile();
  EXPECT_THAT(r.messages, SizeIs(100));
  EXPECT_EQ(r.processes[0].stop_reason, "messages");
}

TEST_F(PreloadTest, StopsAfterSeconds) {
  // 30 iterations 20 ms apart; recording stops after 0.2 s.
  const JobRun run =
      Run({"periodic", "30"}, Mode::kRecording, {{kSecondsEnv, "0.2"}});
  ASSERT_EQ(run.exit_code, 0);
  const Records r = ReadProfile();
  EXPECT_GT(r.messages.size(), 8u);
  EXPECT_LT(r.messages.size(), 80u);
  EXPECT_EQ(r.processes[0].stop_reason, "seconds");
}

// Before an exec the buffer is written; the new program records as a new
// image of the same pid.
TEST_F(PreloadTest, ExecFlushesAndTheNewProgramRecords) {
  const JobRun run = Run({"exec"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const Records r = ReadProfile();
  ASSERT_THAT(r.processes, SizeIs(2));
  EXPECT_EQ(r.processes[0].pid, r.processes[1].pid);
  EXPECT_THAT(Sizes(r, 0)[1], ElementsAre(99, 99, 99));
  EXPECT_THAT(Sizes(r, 1)[1],
              ElementsAreArray(Times({100, 2000, 30, 100, 500}, 2)));
}

TEST_F(PreloadTest, AnUnwritableFileOnlyLosesTheProfile) {
  const JobRun plain = Run({"unix", "3"}, Mode::kPlain);
  const JobRun run = Run({"unix", "3"}, Mode::kPlain,
                         {{"LD_PRELOAD", PROFILER_LIB},
                          {kOutEnv, "/nonexistent/folder/profile.txt"}});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, plain.out);
}

TEST_F(PreloadTest, AProfileOfAPeriodicJob) {
  const JobRun run = Run({"periodic", "10"}, Mode::kRecording);
  ASSERT_EQ(run.exit_code, 0);
  const Profile p = Analyze(ReadProfile());
  ASSERT_TRUE(p.periodic) << p.not_periodic_reason;
  EXPECT_NEAR(*p.tensor_skew, 4000.0 / 6000.0, 1e-9);
  EXPECT_NEAR(*p.bytes_per_iteration, 6000, 1e-9);
  EXPECT_NEAR(*p.messages_per_iteration, 4, 1e-9);
  EXPECT_GE(*p.iteration_s, 0.019);  // 20 ms of sleep, and the sends
  EXPECT_LE(*p.iteration_s, 0.1);
}

#ifdef VERBS_JOB
// The stand-in libibverbs: verbs_job posts, per iteration, a SEND of
// 100 + 200 + 300 bytes, a WRITE of 4096 and a READ (no data out) on queue
// pair 100, a WRITE_WITH_IMM of 64 on queue pair 101; then a WRITE of 1000
// and one the provider refuses.
TEST_F(PreloadTest, VerbsWorkRequestsAreMessages) {
  const JobRun plain = Run({"3"}, Mode::kPlain, {}, VERBS_JOB);
  ASSERT_EQ(plain.exit_code, 0) << plain.out;
  EXPECT_EQ(plain.out, "posted 13 failed 1\n");
  const JobRun run = Run({"3"}, Mode::kRecording, {}, VERBS_JOB);
  ASSERT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, plain.out);
  const Records r = ReadProfile();
  ASSERT_THAT(r.connections, SizeIs(2));
  EXPECT_EQ(r.connections[0].kind, "verbs");
  EXPECT_EQ(r.connections[0].local, "qp:100");
  EXPECT_EQ(r.connections[0].peer, "qp:1100@lid:7");
  EXPECT_EQ(r.connections[1].local, "qp:101");
  auto sizes = Sizes(r, 0);
  EXPECT_THAT(sizes[1], ElementsAre(600, 4096, 600, 4096, 600, 4096, 1000));
  EXPECT_THAT(sizes[2], ElementsAre(64, 64, 64));
}

TEST_F(PreloadTest, VerbsContextsOpenedWhileOffAreUntouched) {
  const JobRun run = Run({"3"}, Mode::kOff, {}, VERBS_JOB);
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "posted 13 failed 1\n");
  EXPECT_THAT(Files(), ::testing::IsEmpty());
}
#endif

}  // namespace
}  // namespace tiresias::profiler

#include "cli/profile_command.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/printable.h"
#include "profiler/profiler.h"

extern char** environ;

namespace tiresias {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct ProfileFlags {
  bool json = false;
  double seconds = 60;
  double grace_seconds = 10;
  uint64_t max_messages = 50000;
  std::string records;
  std::string analyze;  // a records file to analyse instead of running
  std::vector<std::string> command;
};

enum class StopReason { kNone, kSeconds, kInterrupt };

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kSeconds:
      return "seconds";
    case StopReason::kInterrupt:
      return "interrupt";
    case StopReason::kNone:
      break;
  }
  return "";
}

// How the command ended.
struct CommandEnd {
  std::optional<int> exit_code;            // exited normally
  std::optional<int> signal;               // killed by a signal
  StopReason stopped = StopReason::kNone;  // we asked it to stop
  double seconds = 0;                      // from start to its end
};

std::string SignalName(int signal) {
  const char* abbrev = sigabbrev_np(signal);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev)
                           : absl::StrCat("signal ", signal);
}

// Reaps every child that has ended; returns the status of `main` if it
// was among them.
std::optional<int> Reap(pid_t main) {
  std::optional<int> main_status;
  for (;;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;
    if (pid == main) main_status = status;
  }
  return main_status;
}

// Waits for a blocked signal in `set` at most until `until`; returns it, or
// 0 on timeout.
int WaitSignal(const sigset_t& set, Clock::time_point until) {
  const auto left = until - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
  timespec timeout{static_cast<time_t>(ns / 1'000'000'000),
                   static_cast<long>(ns % 1'000'000'000)};
  siginfo_t info;
  const int sig = sigtimedwait(&set, &info, &timeout);
  return sig > 0 ? sig : 0;
}

bool GroupAlive(pid_t group) { return kill(-group, 0) == 0; }

// After the command itself ended: whatever it left in its process group is
// asked to stop, then killed after the grace period, and reaped (we are a
// child subreaper, so orphans come back to us).
void StopTheRest(pid_t group, const sigset_t& set, double grace_seconds) {
  if (GroupAlive(group)) {
    kill(-group, SIGTERM);
    const auto until =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(grace_seconds));
    while (GroupAlive(group) && Clock::now() < until) {
      Reap(-1);
      WaitSignal(set,
                 std::min(until, Clock::now() + std::chrono::milliseconds(50)));
    }
    if (GroupAlive(group)) kill(-group, SIGKILL);
  }
  const auto until = Clock::now() + std::chrono::seconds(2);
  while (Clock::now() < until) {
    Reap(-1);
    errno = 0;
    if (waitpid(-1, nullptr, WNOHANG) < 0 && errno == ECHILD) break;
    WaitSignal(set,
               std::min(until, Clock::now() + std::chrono::milliseconds(20)));
  }
}

// Runs the command in its own process group with `env` added, stopping it
// (SIGTERM to the group, the grace period, SIGKILL) at --seconds or when
// we are interrupted. Fails only when it cannot be started.
absl::StatusOr<CommandEnd> RunCommand(
    const ProfileFlags& f,
    const std::vector<std::pair<std::string, std::string>>& added) {
  // The environment: ours, with the profiler's variables replacing any
  // of the same name. Built before fork: the child only execs.
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string var = *e;
    bool replaced = false;
    for (const auto& [k, v] : added) {
      if (var.rfind(k + "=", 0) == 0) replaced = true;
    }
    if (!replaced) env.push_back(var);
  }
  for (const auto& [k, v] : added) env.push_back(absl::StrCat(k, "=", v));
  std::vector<char*> envp, argv;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = f.command;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  sigset_t set, old;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGCHLD}) sigaddset(&set, s);
  sigprocmask(SIG_BLOCK, &set, &old);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  int error_pipe[2];
  if (pipe2(error_pipe, O_CLOEXEC) != 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return absl::InternalError(absl::StrCat("pipe: ", std::strerror(errno)));
  }
  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    if (f.json)
      dup2(2, 1);  // stdout is the profile's; the job's goes to stderr
    execvpe(argv[0], argv.data(), envp.data());
    const int error = errno;
    // The parent reads this to report why; nothing to do if it fails.
    if (write(error_pipe[1], &error, sizeof error) < 0) _exit(127);
    _exit(127);
  }
  setpgid(pid, pid);
  close(error_pipe[1]);
  int exec_error = 0;
  const ssize_t n = read(error_pipe[0], &exec_error, sizeof exec_error);
  close(error_pipe[0]);
  if (n == static_cast<ssize_t>(sizeof exec_error)) {
    waitpid(pid, nullptr, 0);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot run '", cli::Printable(f.command[0]),
                     "': ", std::strerror(exec_error)));
  }

  CommandEnd end;
  const Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(f.seconds));
  const auto grace = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(f.grace_seconds));
  std::optional<Clock::time_point> kill_at;
  std::optional<int> status;
  for (;;) {
    status = Reap(pid);
    if (status) break;
    const Clock::time_point until = kill_at ? *kill_at : deadline;
    const int sig = WaitSignal(set, until);
    if (sig == SIGCHLD) continue;
    const bool interrupted = sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
    if (interrupted && end.stopped != StopReason::kNone) {
      kill(-pid, SIGKILL);  // a second Ctrl-C: at once
      continue;
    }
    if (interrupted || (sig == 0 && !kill_at && Clock::now() >= deadline)) {
      end.stopped = interrupted ? StopReason::kInterrupt : StopReason::kSeconds;
      kill(-pid, SIGTERM);
      kill_at = Clock::now() + grace;
      continue;
    }
    if (sig == 0 && kill_at && Clock::now() >= *kill_at) {
      kill(-pid, SIGKILL);
      kill_at = Clock::now() + std::chrono::hours(24);
    }
  }
  end.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (WIFEXITED(*status)) end.exit_code = WEXITSTATUS(*status);
  if (WIFSIGNALED(*status)) end.signal = WTERMSIG(*status);
  StopTheRest(pid, set, f.grace_seconds);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return end;
}

std::string Describe(const CommandEnd& end) {
  std::string text =
      end.exit_code
          ? absl::StrCat("exited with code ", *end.exit_code)
          : absl::StrCat("was killed by ", SignalName(end.signal.value_or(0)));
  absl::StrAppend(&text, " after ", absl::StrFormat("%.1f", end.seconds), " s");
  if (end.stopped == StopReason::kSeconds) {
    absl::StrAppend(&text, " (stopped at --seconds)");
  } else if (end.stopped == StopReason::kInterrupt) {
    absl::StrAppend(&text, " (interrupted)");
  }
  return text;
}

nlohmann::json CommandJson(const ProfileFlags& f, const CommandEnd& end) {
  return {
      {"argv", f.command},
      {"exit_code", end.exit_code ? nlohmann::json(*end.exit_code)
                                  : nlohmann::json(nullptr)},
      {"signal", end.signal ? nlohmann::json(SignalName(*end.signal))
                            : nlohmann::json(nullptr)},
      {"stopped", end.stopped == StopReason::kNone
                      ? nlohmann::json(nullptr)
                      : nlohmann::json(StopReasonName(end.stopped))},
      {"seconds", end.seconds},
  };
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tiresias: profile: %s\n", message.c_str());
  return 1;
}

// --analyze FILE: the profile of records kept by an earlier --records.
int AnalyzeRecords(const ProfileFlags& f) {
  if (!f.command.empty()) {
    return Fail("--analyze reads a records file; give no command with it");
  }
  absl::StatusOr<profiler::Profile> profile =
      profiler::ProfileFromFile(f.analyze);
  if (!profile.ok()) return Fail(std::string(profile.status().message()));
  if (f.json) {
    nlohmann::json j = profiler::ProfileToJson(*profile);
    j["records"] = f.analyze;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s", profiler::FormatProfile(*profile).c_str());
  }
  return 0;
}

int RunProfile(const ProfileFlags& f) {
  if (!f.analyze.empty()) return AnalyzeRecords(f);
  if (f.command.empty()) {
    std::fprintf(stderr,
                 "tiresias: profile: no command to run (give it after --, "
                 "e.g. `tiresias profile -- /usr/bin/python3 train.py`)\n");
    return 2;
  }
  if (!(f.seconds > 0) || !std::isfinite(f.seconds)) {
    return Fail(
        absl::StrCat("--seconds: expected a number > 0, got ", f.seconds));
  }
  if (!(f.grace_seconds >= 0) || !std::isfinite(f.grace_seconds)) {
    return Fail(
        absl::StrCat("--grace: expected a number >= 0, got ", f.grace_seconds));
  }
  if (f.max_messages == 0) return Fail("--max-messages: expected > 0");
  absl::StatusOr<std::string> library = profiler::FindProfilerLibrary();
  if (!library.ok()) return Fail(std::string(library.status().message()));

  // Where the processes write their records: --records, or a private
  // temporary folder removed at the end.
  std::string out_path;
  std::string temp_dir;
  std::error_code error;
  if (!f.records.empty()) {
    if (fs::exists(f.records, error)) {
      return Fail(absl::StrCat("--records ", f.records,
                               ": already exists (records are appended; give "
                               "a new file)"));
    }
    out_path = fs::absolute(f.records, error).string();
  } else {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp",
                                       "/tiresias-profile-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return Fail(absl::StrCat("cannot make a temporary folder ", pattern, ": ",
                               std::strerror(errno)));
    }
    temp_dir = pattern;
    out_path = temp_dir + "/records.txt";
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } cleanup{temp_dir};

  profiler::RecordingLimits limits;
  limits.max_messages_per_process = f.max_messages;
  limits.seconds_per_process = f.seconds;
  absl::StatusOr<CommandEnd> end =
      RunCommand(f, profiler::ProfilerEnvironment(*library, out_path, limits,
                                                  std::getenv("LD_PRELOAD")));
  if (!end.ok()) return Fail(std::string(end.status().message()));

  const std::string command = cli::Printable(absl::StrJoin(f.command, " "));
  absl::StatusOr<profiler::Profile> profile =
      profiler::ProfileFromFile(out_path);
  if (!profile.ok() && profile.status().code() == absl::StatusCode::kNotFound) {
    return Fail(
        absl::StrCat("'", command,
                     "' sent nothing to profile: no message on a TCP or Unix "
                     "socket or an RDMA queue pair was recorded (it ",
                     Describe(*end), ")"));
  }
  if (!profile.ok()) return Fail(std::string(profile.status().message()));
  if (profile->total_messages == 0) {
    return Fail(absl::StrCat("'", command, "' sent nothing to profile (it ",
                             Describe(*end), ")"));
  }

  if (f.json) {
    nlohmann::json j = profiler::ProfileToJson(*profile);
    j["command"] = CommandJson(f, *end);
    if (!f.records.empty()) j["records"] = out_path;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("command              %s\n", command.c_str());
    std::printf("                     %s\n", Describe(*end).c_str());
    std::printf("%s", profiler::FormatProfile(*profile).c_str());
    if (!f.records.empty()) std::printf("\nrecords in %s\n", out_path.c_str());
  }
  std::fflush(stdout);
  if (end->stopped == StopReason::kInterrupt) return 130;
  if (end->stopped == StopReason::kSeconds) return 0;
  if (end->exit_code && *end->exit_code == 0) return 0;
  std::fprintf(stderr, "tiresias: profile: the command %s\n",
               Describe(*end).c_str());
  return 1;
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Run a command on this machine under the traffic profiler and print its "
      "profile: iteration, bytes and messages per iteration, tensor skew, "
      "bytes per peer. The command comes after --, e.g. `tiresias profile -- "
      "/usr/bin/python3 examples/ps_train.py --model vgg16`.");
  cmd->add_flag("--json", flags->json, "Print the profile as JSON");
  cmd->add_option("--seconds", flags->seconds,
                  "Profile for at most this long, then stop the command "
                  "(SIGTERM to its process group; default 60)");
  cmd->add_option("--grace", flags->grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when stopping it "
                  "(default 10)");
  cmd->add_option("--max-messages", flags->max_messages,
                  "Messages each process records at most (default 50000)");
  cmd->add_option("--records", flags->records,
                  "Keep the raw records in this (new) file");
  cmd->add_option("--analyze", flags->analyze,
                  "Print the profile of a records file kept with --records "
                  "(runs nothing)");
  cmd->add_option("command", flags->command, "The command to run, after --");
  cmd->callback([flags, exit_code] { *exit_code = RunProfile(*flags); });
}

}  // namespace tiresias

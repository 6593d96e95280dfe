#include "agent/spawn.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "agent/spawn_internal.h"
#include "core/warn_signal.h"

namespace tiresias {
namespace {

using namespace spawn_internal;  // NOLINT: its names are this file's too

// The highest descriptor number this process may have open (for closing
// them one by one where close_range is missing).
unsigned MaxFd() {
  struct rlimit limit = {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 ||
      limit.rlim_cur == RLIM_INFINITY) {
    return 65535;
  }
  return static_cast<unsigned>(std::min<rlim_t>(limit.rlim_cur, 1 << 20)) - 1;
}

// Moves `fd` above 0..2 so that the child's dup2 onto stdio cannot collide.
int AboveStdio(int fd) {
  if (fd < 0 || fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(AboveStdio(fd)) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      Reset();
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  void Reset() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

absl::Status Error(absl::string_view what, absl::string_view target,
                   int error) {
  return absl::FailedPreconditionError(absl::StrCat(
      what, target.empty() ? "" : " ", target, ": ", std::strerror(error)));
}

// `path` as the task saw it: relative ones in the working dir.
std::string PathInWorkingDir(const SpawnRequest& request,
                             const std::string& path) {
  if (path.empty() || path[0] == '/' || request.working_dir.empty()) {
    return path;
  }
  return absl::StrCat(request.working_dir, "/", path);
}

// The error SpawnProcess returns for what the child reported.
absl::Status ChildFailure(const SpawnRequest& request, ChildError failure) {
  const std::string run_as =
      request.run_as ? absl::StrCat("cannot run as uid ", request.run_as->uid,
                                    " gid ", request.run_as->gid, ": ")
                     : "";
  switch (failure.stage) {
    case kSetpgid:
      return Error("setpgid", "", failure.error);
    case kRedirect:
      return Error("redirect output to", request.log_path, failure.error);
    case kChdir:
      return Error("chdir to", request.working_dir, failure.error);
    case kOutputFile:
      return Error("cannot open output file (--output)",
                   PathInWorkingDir(request, request.output_path),
                   failure.error);
    case kErrorFile:
      return Error("cannot open error file (--error)",
                   PathInWorkingDir(request, request.error_path),
                   failure.error);
    case kTeeSetup:
      return Error("set up the copy of the output to the user's files", "",
                   failure.error);
    case kFork:
      return Error("fork", "", failure.error);
    case kSetgroups:
      return Error(absl::StrCat(run_as, "setgroups"), "", failure.error);
    case kSetgid:
      return Error(absl::StrCat(run_as, "setresgid"), "", failure.error);
    case kSetuid:
      return Error(absl::StrCat(run_as, "setresuid"), "", failure.error);
    case kIdsUnchanged:
      return absl::FailedPreconditionError(absl::StrCat(
          run_as, "the real, effective and saved ids did not all change"));
    case kCheckpointDir:
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint dir ", request.checkpoint_dir,
          ": cannot create it, or read, write and enter it: ",
          std::strerror(failure.error)));
    case kCgroup:
      return Error("join the task's cgroups", "", failure.error);
    case kTerminal:
      return Error("give the task its terminal (setsid, TIOCSCTTY)", "",
                   failure.error);
    case kLeaseLapsed:
      return absl::AbortedError(
          "the agent's lease lapsed before the task could start (the master "
          "may have given its job to another node)");
    default:
      return Error("exec", request.path, failure.error);
  }
}

}  // namespace

absl::StatusOr<pid_t> SpawnProcess(const SpawnRequest& request) {
  std::error_code ec;
  const std::filesystem::path log_dir =
      std::filesystem::path(request.log_path).parent_path();
  if (!log_dir.empty()) std::filesystem::create_directories(log_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot create log folder ", log_dir.string(), ": ", ec.message()));
  }
  Fd log(open(request.log_path.c_str(),
              O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (log.get() < 0) return Error("cannot open log", request.log_path, errno);
  // The account's own file, which other accounts cannot read.
  if (request.run_as && (fchown(log.get(), request.run_as->uid,
                                request.run_as->gid) != 0 ||
                         fchmod(log.get(), 0600) != 0)) {
    return Error(absl::StrCat("cannot give log to uid ", request.run_as->uid),
                 request.log_path, errno);
  }
  Fd null_in(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_in.get() < 0) return Error("cannot open", "/dev/null", errno);
  // An interactive task's own descriptors, copied above stdio (see Fd).
  const bool own_stdio = request.stdio_fds[0] >= 0;
  if (own_stdio && (request.stdio_fds[1] < 0 || request.stdio_fds[2] < 0)) {
    return absl::InvalidArgumentError(
        "stdio_fds: give all three descriptors or none");
  }
  if (request.controlling_tty && !own_stdio) {
    return absl::InvalidArgumentError(
        "controlling_tty: needs stdio_fds (a pty's slave end)");
  }
  if (own_stdio &&
      (!request.output_path.empty() || !request.error_path.empty())) {
    return absl::InvalidArgumentError(
        "stdio_fds: not with output_path or error_path");
  }
  Fd stdio[3];
  for (int i = 0; own_stdio && i < 3; ++i) {
    stdio[i] = Fd(fcntl(request.stdio_fds[i], F_DUPFD_CLOEXEC, 3));
    if (stdio[i].get() < 0) return Error("dup", "a task's stdio", errno);
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Error("pipe", "", errno);
  Fd error_read(pipe_fds[0]);
  Fd error_write(pipe_fds[1]);

  if (request.warn_signal != 0 && !IsWarnSignal(request.warn_signal)) {
    return absl::InvalidArgumentError(
        absl::StrCat("warn_signal: ", request.warn_signal,
                     " is not one the shim outlives (core/warn_signal.h)"));
  }
  if (request.envs.empty() || request.envs.size() > kMaxTaskProcesses) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 1 to ", kMaxTaskProcesses,
                     " processes (environments), got ", request.envs.size()));
  }
  if (!request.argvs.empty() && request.argvs.size() != request.envs.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("argvs: expected one per process (", request.envs.size(),
                     "), got ", request.argvs.size()));
  }
  // Process i's argv: its own, or the shared one.
  std::vector<std::vector<char*>> argv(request.envs.size());
  std::vector<char* const*> argvs;
  for (size_t i = 0; i < request.envs.size(); ++i) {
    for (const std::string& a :
         request.argvs.empty() ? request.argv : request.argvs[i]) {
      argv[i].push_back(const_cast<char*>(a.c_str()));
    }
    argv[i].push_back(nullptr);
    argvs.push_back(argv[i].data());
  }
  std::vector<std::vector<char*>> envp(request.envs.size());
  std::vector<char* const*> envps;
  for (size_t i = 0; i < request.envs.size(); ++i) {
    for (const std::string& e : request.envs[i]) {
      envp[i].push_back(const_cast<char*>(e.c_str()));
    }
    envp[i].push_back(nullptr);
    envps.push_back(envp[i].data());
  }
  std::vector<pid_t> worker_pids(request.envs.size(), -1);
  const std::string exit_tmp_path = request.exit_path + ".tmp";
  if (!request.exit_path.empty()) {
    std::filesystem::create_directories(
        std::filesystem::path(request.exit_path).parent_path(), ec);
    if (ec) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot create the folder of exit file ",
                       request.exit_path, ": ", ec.message()));
    }
    std::filesystem::remove(request.exit_path, ec);  // a stale one
  }
  std::string checkpoint_dir = request.checkpoint_dir;  // the child cuts it
  const ChildSetup setup{
      .path = request.path.c_str(),
      .argvs = argvs.data(),
      .envps = envps.data(),
      .process_count = envps.size(),
      .worker_pids = worker_pids.data(),
      .working_dir =
          request.working_dir.empty() ? nullptr : request.working_dir.c_str(),
      .run_as = request.run_as.has_value(),
      .uid = request.run_as ? request.run_as->uid : 0,
      .gid = request.run_as ? request.run_as->gid : 0,
      .groups = request.run_as ? request.run_as->groups.data() : nullptr,
      .group_count = request.run_as ? request.run_as->groups.size() : 0,
      .checkpoint_dir =
          checkpoint_dir.empty() ? nullptr : checkpoint_dir.data(),
      .stdin_fd = own_stdio ? stdio[0].get() : null_in.get(),
      .log_fd = log.get(),
      .stdout_fd = own_stdio ? stdio[1].get() : log.get(),
      .stderr_fd = own_stdio ? stdio[2].get() : log.get(),
      .controlling_tty = request.controlling_tty,
      .error_fd = error_write.get(),
      .exit_path =
          request.exit_path.empty() ? nullptr : request.exit_path.c_str(),
      .exit_tmp_path = exit_tmp_path.c_str(),
      .max_fd = MaxFd(),
      .lease = request.lease,
      .fence_grace_ns = request.fence_grace_ns,
      .warn_signal = request.warn_signal,
      .warn_after_ns = request.warn_after_ns,
      .output_path =
          request.output_path.empty() ? nullptr : request.output_path.c_str(),
      .error_path =
          request.error_path.empty() ? nullptr : request.error_path.c_str(),
      .cgroup_fds = request.cgroup_procs_fds.data(),
      .cgroup_fd_count = request.cgroup_procs_fds.size()};

  const pid_t pid = fork();
  if (pid < 0) return Error("fork", "", errno);
  if (pid == 0) RunChild(setup);
  // Also here, so the group exists when we return; but not for a shim
  // that makes a session of its own, which setsid refuses a group leader
  // (the group exists by the exec all the same).
  if (!request.controlling_tty) setpgid(pid, pid);
  error_write.Reset();

  ChildError failure;
  ssize_t n;
  do {
    n = read(error_read.get(), &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(failure))) return pid;  // exec'd

  // The shim ends once every process has: those that did start are stopped
  // as the peers of any failed process (no zombie is left to init).
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  if (!request.exit_path.empty()) {
    std::filesystem::remove(request.exit_path, ec);
    std::filesystem::remove(exit_tmp_path, ec);
  }
  return ChildFailure(request, failure);
}

}  // namespace tiresias

#include "agent/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

// What the child writes to the error pipe when its setup or exec fails.
enum ChildStage : int { kSetpgid, kRedirect, kChdir, kExec };
struct ChildError {
  int stage;
  int error;  // errno
};

// Everything the child needs, prepared before fork: after fork the child of
// a multi-threaded agent may only make async-signal-safe calls.
struct ChildSetup {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* working_dir;  // null: stay
  int stdin_fd;
  int log_fd;
  int error_fd;
};

[[noreturn]] void Fail(const ChildSetup& s, ChildStage stage) {
  const ChildError e{stage, errno};
  ssize_t ignored = write(s.error_fd, &e, sizeof(e));
  (void)ignored;
  _exit(127);
}

[[noreturn]] void RunChild(const ChildSetup& s) {
  if (setpgid(0, 0) != 0) Fail(s, kSetpgid);
  // Signal dispositions the agent ignores and its signal mask would survive
  // exec; the task gets the defaults.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  // All three fds are >= 3 (see AboveStdio), so dup2 never is a no-op that
  // would keep FD_CLOEXEC.
  if (dup2(s.stdin_fd, 0) < 0 || dup2(s.log_fd, 1) < 0 ||
      dup2(s.log_fd, 2) < 0) {
    Fail(s, kRedirect);
  }
  if (s.working_dir != nullptr && chdir(s.working_dir) != 0) Fail(s, kChdir);
  // Close what the agent has open (sockets, files) except the error pipe,
  // which closes itself on exec.
  if (s.error_fd > 3) close_range(3, s.error_fd - 1, 0);
  close_range(s.error_fd + 1, ~0U, 0);
  execve(s.path, s.argv, s.envp);
  Fail(s, kExec);
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
              O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (log.get() < 0) return Error("cannot open log", request.log_path, errno);
  Fd null_in(open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (null_in.get() < 0) return Error("cannot open", "/dev/null", errno);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return Error("pipe", "", errno);
  Fd error_read(pipe_fds[0]);
  Fd error_write(pipe_fds[1]);

  std::vector<char*> argv, envp;
  for (const std::string& a : request.argv) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  for (const std::string& e : request.env) {
    envp.push_back(const_cast<char*>(e.c_str()));
  }
  envp.push_back(nullptr);
  const ChildSetup setup{
      request.path.c_str(),
      argv.data(),
      envp.data(),
      request.working_dir.empty() ? nullptr : request.working_dir.c_str(),
      null_in.get(),
      log.get(),
      error_write.get()};

  const pid_t pid = fork();
  if (pid < 0) return Error("fork", "", errno);
  if (pid == 0) RunChild(setup);
  setpgid(pid, pid);  // also here, so the group exists when we return
  error_write.Reset();

  ChildError failure;
  ssize_t n;
  do {
    n = read(error_read.get(), &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof(failure))) return pid;  // exec'd

  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  switch (failure.stage) {
    case kSetpgid:
      return Error("setpgid", "", failure.error);
    case kRedirect:
      return Error("redirect output to", request.log_path, failure.error);
    case kChdir:
      return Error("chdir to", request.working_dir, failure.error);
    default:
      return Error("exec", request.path, failure.error);
  }
}

}  // namespace tiresias

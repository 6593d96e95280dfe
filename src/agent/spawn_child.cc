// The child's side of SpawnProcess (spawn.h): the shim and the task's
// processes. Only async-signal-safe calls: the agent is threaded.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "agent/exit_like.h"
#include "agent/spawn.h"
#include "agent/spawn_internal.h"

namespace tiresias::spawn_internal {
namespace {

// The identity system calls, made raw: glibc's wrappers would run their
// all-threads setxid protocol, which has no business in a forked child.
// The 32-bit ABIs that have them need the calls with 32-bit ids.
#ifdef SYS_setresuid32
constexpr long kSysSetgroups = SYS_setgroups32;
constexpr long kSysSetresgid = SYS_setresgid32;
constexpr long kSysSetresuid = SYS_setresuid32;
constexpr long kSysGetresgid = SYS_getresgid32;
constexpr long kSysGetresuid = SYS_getresuid32;
#else
constexpr long kSysSetgroups = SYS_setgroups;
constexpr long kSysSetresgid = SYS_setresgid;
constexpr long kSysSetresuid = SYS_setresuid;
constexpr long kSysGetresgid = SYS_getresgid;
constexpr long kSysGetresuid = SYS_getresuid;
#endif

// The shim's copy of the task's output to the user's files, when it has
// any (SpawnRequest::output_path, error_path). The task's stdout (and its
// stderr, without an error file) is `out_read`'s pipe, its stderr with an
// error file `err_read`'s; the shim appends what it reads to the task log
// (its own stdout) and to the file the task's process opened and passed
// back. -1: not there (or at its end).
struct Tee {
  int out_read = -1;
  int out_file = -1;
  int err_read = -1;
  int err_file = -1;
  int sigchld = -1;  // a signalfd for SIGCHLD, to wait on with the pipes
};

// Signals a stop may send to the task's group that the shim must outlive,
// to record how the task ended.
constexpr int kShimIgnores[] = {SIGTERM, SIGINT,  SIGHUP,  SIGQUIT,
                                SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM};

// Appends the decimal digits of `v` (>= 0) to buf[*n] (async-signal-safe).
void AppendNumber(char* buf, size_t* n, unsigned long long v) {
  char digits[24];
  size_t k = 0;
  do {
    digits[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (k > 0) buf[(*n)++] = digits[--k];
}

void AppendText(char* buf, size_t* n, const char* text) {
  while (*text != '\0') buf[(*n)++] = *text++;
}

// Writes "exit <code> <unix ns>" or "signal <number> <unix ns>" to the exit
// file, with " fenced" after it if the shim stopped the task because its
// lease lapsed, atomically (temporary file, fsync, rename). Best effort:
// the shim has nobody to report a failure to.
void WriteExitFile(const ChildSetup& s, int status, bool fenced) {
  if (s.exit_path == nullptr) return;
  struct timespec now = {};
  clock_gettime(CLOCK_REALTIME, &now);
  char buf[96];
  size_t n = 0;
  if (WIFEXITED(status)) {
    AppendText(buf, &n, "exit ");
    AppendNumber(buf, &n, static_cast<unsigned>(WEXITSTATUS(status)));
  } else {
    AppendText(buf, &n, "signal ");
    AppendNumber(buf, &n, static_cast<unsigned>(WTERMSIG(status)));
  }
  AppendText(buf, &n, " ");
  AppendNumber(buf, &n,
               static_cast<unsigned long long>(now.tv_sec) * 1000000000ULL +
                   static_cast<unsigned long long>(now.tv_nsec));
  if (fenced) AppendText(buf, &n, " fenced");
  AppendText(buf, &n, "\n");
  const int fd =
      open(s.exit_tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return;
  const bool written = write(fd, buf, n) == static_cast<ssize_t>(n);
  fsync(fd);
  close(fd);
  if (written) rename(s.exit_tmp_path, s.exit_path);
}

[[noreturn]] void Fail(const ChildSetup& s, ChildStage stage) {
  const ChildError e{stage, errno};
  ssize_t ignored = write(s.error_fd, &e, sizeof(e));
  (void)ignored;
  _exit(127);
}

// Closes every descriptor in [low, high]: close_range, or one by one where
// the kernel lacks it (before 5.9). Async-signal-safe.
void CloseRange(unsigned low, unsigned high, const ChildSetup& s) {
  if (low > high) return;
  if (close_range(low, high, 0) == 0) return;
  const unsigned last = std::min<unsigned>(high, s.max_fd);
  for (unsigned fd = low; fd <= last; ++fd) close(static_cast<int>(fd));
}

int64_t BootNs() {
  struct timespec ts = {};
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// How the task ended: its wait status, and whether the shim fenced it.
struct TaskEnd {
  int status = 0;
  bool fenced = false;
};
TaskEnd WaitWatchingLease(const ChildSetup& s, Tee& tee);

// Switches the whole process to s.uid / s.gid / s.groups: groups first,
// then the gid, then the uid (after which nothing else may change), then a
// check that no real, effective or saved id kept its old value and that
// root cannot be taken back.
void BecomeAccount(const ChildSetup& s) {
  if (syscall(kSysSetgroups, s.group_count, s.groups) != 0) {
    Fail(s, kSetgroups);
  }
  if (syscall(kSysSetresgid, s.gid, s.gid, s.gid) != 0) Fail(s, kSetgid);
  if (syscall(kSysSetresuid, s.uid, s.uid, s.uid) != 0) Fail(s, kSetuid);
  uid_t ruid = 0, euid = 0, suid = 0;
  gid_t rgid = 0, egid = 0, sgid = 0;
  if (syscall(kSysGetresuid, &ruid, &euid, &suid) != 0 ||
      syscall(kSysGetresgid, &rgid, &egid, &sgid) != 0) {
    Fail(s, kIdsUnchanged);
  }
  const bool all_changed = ruid == s.uid && euid == s.uid && suid == s.uid &&
                           rgid == s.gid && egid == s.gid && sgid == s.gid;
  if (!all_changed || (s.uid != 0 && syscall(kSysSetresuid, 0, 0, 0) == 0)) {
    errno = 0;
    Fail(s, kIdsUnchanged);
  }
}

// Creates s.checkpoint_dir if missing (as whoever the task now is), with
// its missing parents, all 0700 (they hold the task's checkpoints, its
// account's alone), then checks that it is a folder the task can read,
// write and enter.
void MakeCheckpointDir(const ChildSetup& s) {
  char* path = s.checkpoint_dir;
  for (char* p = path + 1; *p != '\0'; ++p) {
    if (*p != '/') continue;
    *p = '\0';
    const int rc = mkdir(path, 0700);
    const int error = errno;
    *p = '/';
    if (rc != 0 && error != EEXIST) {
      errno = error;
      Fail(s, kCheckpointDir);
    }
  }
  if (mkdir(path, 0700) != 0 && errno != EEXIST) Fail(s, kCheckpointDir);
  struct stat st = {};
  if (stat(path, &st) != 0) Fail(s, kCheckpointDir);
  if (!S_ISDIR(st.st_mode)) {
    errno = ENOTDIR;
    Fail(s, kCheckpointDir);
  }
  if (access(path, R_OK | W_OK | X_OK) != 0) Fail(s, kCheckpointDir);
}

// The descriptors the shim made for the copy to the user's files, before
// forking the task: [0] its end, [1] the task's. -1: none.
struct TeeEnds {
  int socket[2] = {-1, -1};    // the user's files go to the shim over it
  int out_pipe[2] = {-1, -1};  // the task's stdout (and stderr, alone)
  int err_pipe[2] = {-1, -1};  // the task's stderr, with an error file
};

// In the task's first process, as its account and in its working dir:
// opens the user's output files (appending; created 0600, less the umask)
// and hands them to the shim (SCM_RIGHTS).
void SendUserFiles(const ChildSetup& s, const TeeEnds& ends) {
  int files[2];
  int count = 0;
  for (const char* path : {s.output_path, s.error_path}) {
    if (path == nullptr) continue;
    const int fd =
        open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) Fail(s, path == s.output_path ? kOutputFile : kErrorFile);
    files[count++] = fd;
  }
  char byte = 'f';
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(files))] = {};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
  struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(count * sizeof(int));
  memcpy(CMSG_DATA(cmsg), files, count * sizeof(int));
  ssize_t sent;
  do {
    sent = sendmsg(ends.socket[1], &msg, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent != 1) Fail(s, kTeeSetup);
  for (int i = 0; i < count; ++i) close(files[i]);
}

// In each of the task's processes: the pipes of the copy to the user's
// files on stdout and stderr.
void UseTeePipes(const ChildSetup& s, const TeeEnds& ends) {
  // dup2 clears close-on-exec on the copy; the originals close at exec.
  if (ends.out_pipe[1] >= 0 &&
      (dup2(ends.out_pipe[1], 1) < 0 ||
       (ends.err_pipe[1] < 0 && dup2(ends.out_pipe[1], 2) < 0))) {
    Fail(s, kTeeSetup);
  }
  if (ends.err_pipe[1] >= 0 && dup2(ends.err_pipe[1], 2) < 0) {
    Fail(s, kTeeSetup);
  }
}

// A process of the task proper (process `index`), in the shim's child:
// becomes its account, dies with the shim (so no task outlives the one
// process that can report its exit), enters its working dir, makes its
// checkpoint dir and (the first process) opens the user's output files as
// that account, default signal handling, then exec.
[[noreturn]] void ExecTask(const ChildSetup& s, size_t index, pid_t shim,
                           const TeeEnds& ends) {
  // Before PR_SET_PDEATHSIG: the kernel clears it when the ids change.
  if (s.run_as) BecomeAccount(s);
  // Not the agent's 077: what the task creates is as from its user's
  // shell (kTaskUmask, spawn.h).
  umask(kTaskUmask);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != shim) _exit(127);  // the shim died before prctl
  if (s.working_dir != nullptr && chdir(s.working_dir) != 0) Fail(s, kChdir);
  if (s.checkpoint_dir != nullptr) MakeCheckpointDir(s);
  if (ends.socket[1] >= 0) {
    if (index == 0) SendUserFiles(s, ends);
    UseTeePipes(s, ends);
  }
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(s.path, s.argvs[index], s.envps[index]);
  Fail(s, kExec);
}

// Writes all of buf[0, n) to `fd`, best effort: a user's file that fills
// its disk must not stop the copy to the task log.
void WriteAll(int fd, const char* buf, ssize_t n) {
  while (n > 0) {
    const ssize_t w = write(fd, buf, static_cast<size_t>(n));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    buf += w;
    n -= w;
  }
}

// In the shim, after forking the task: closes the task's ends and takes the
// user's files from the task's process. Without them (the process failed
// first: the agent hears why through the error pipe) no copy is made.
Tee ReceiveUserFiles(const TeeEnds& ends) {
  Tee tee;
  if (ends.socket[0] < 0) return tee;
  for (int fd : {ends.socket[1], ends.out_pipe[1], ends.err_pipe[1]}) {
    if (fd >= 0) close(fd);
  }
  int files[2] = {-1, -1};
  char byte = 0;
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(files))] = {};
  struct msghdr msg = {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t got;
  do {
    got = recvmsg(ends.socket[0], &msg, MSG_CMSG_CLOEXEC);
  } while (got < 0 && errno == EINTR);
  close(ends.socket[0]);
  int count = 0;
  struct cmsghdr* cmsg = got == 1 ? CMSG_FIRSTHDR(&msg) : nullptr;
  if (cmsg != nullptr && cmsg->cmsg_level == SOL_SOCKET &&
      cmsg->cmsg_type == SCM_RIGHTS) {
    count = static_cast<int>((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    memcpy(files, CMSG_DATA(cmsg), std::min(count, 2) * sizeof(int));
  }
  const int expected = (ends.out_pipe[0] >= 0) + (ends.err_pipe[0] >= 0);
  if (count != expected) {
    for (int i = 0; i < std::min(count, 2); ++i) close(files[i]);
    for (int fd : {ends.out_pipe[0], ends.err_pipe[0]}) {
      if (fd >= 0) close(fd);
    }
    return tee;
  }
  int next = 0;
  if (ends.out_pipe[0] >= 0) {
    tee.out_read = ends.out_pipe[0];
    tee.out_file = files[next++];
  }
  if (ends.err_pipe[0] >= 0) {
    tee.err_read = ends.err_pipe[0];
    tee.err_file = files[next++];
  }
  // Reads never block: once the task has ended, what it left is drained
  // even if something it started still holds the pipe.
  for (int fd : {tee.out_read, tee.err_read}) {
    if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  tee.sigchld = signalfd(-1, &chld, SFD_NONBLOCK | SFD_CLOEXEC);
  return tee;
}

// Most bytes CopyAvailable copies in one call: a task that writes without
// pause must not keep the shim from checking its lease, nor (once it has
// ended) something it left behind from letting the shim end.
constexpr ssize_t kMostCopiedAtOnce = 1 << 20;

// Copies what is in the pipe `*read_fd` now (up to kMostCopiedAtOnce) to
// the task log (the shim's stdout) and `file`; at its end (or an error)
// closes it and sets -1.
void CopyAvailable(int* read_fd, int file) {
  char buf[16384];
  for (ssize_t copied = 0; copied < kMostCopiedAtOnce;) {
    const ssize_t n = read(*read_fd, buf, sizeof(buf));
    if (n > 0) {
      WriteAll(STDOUT_FILENO, buf, n);
      WriteAll(file, buf, n);
      copied += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    close(*read_fd);  // its end, or a broken pipe
    *read_fd = -1;
    return;
  }
}

// Waits up to wait_ns for the task's SIGCHLD (blocked), copying its output
// meanwhile when there is a tee.
void WaitForEvent(Tee& tee, int64_t wait_ns) {
  if (tee.out_read < 0 && tee.err_read < 0) {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    struct timespec timeout = {static_cast<time_t>(wait_ns / 1000000000),
                               static_cast<long>(wait_ns % 1000000000)};
    sigtimedwait(&chld, nullptr, &timeout);  // SIGCHLD, a timeout or EINTR
    return;
  }
  struct pollfd fds[3] = {{tee.sigchld, POLLIN, 0},
                          {tee.out_read, POLLIN, 0},
                          {tee.err_read, POLLIN, 0}};
  // A negative fd is ignored by poll; round the wait up to a millisecond.
  const int rc = poll(fds, 3, static_cast<int>((wait_ns + 999999) / 1000000));
  if (rc <= 0) return;
  if (fds[0].revents != 0) {
    struct signalfd_siginfo info[4];
    ssize_t ignored = read(tee.sigchld, info, sizeof(info));
    (void)ignored;  // only a wake-up: waitpid tells what happened
  }
  if (fds[1].revents != 0) CopyAvailable(&tee.out_read, tee.out_file);
  if (fds[2].revents != 0) CopyAvailable(&tee.err_read, tee.err_file);
}

// Waits for the task's processes, checking its lease every kShimTickNs
// (woken at once by SIGCHLD, blocked and taken with sigtimedwait). The
// task's status is the first process's to end otherwise than with exit
// code 0 (or 0 when none did); once one has, the others get SIGTERM (the
// group's) and, after fence_grace_ns, SIGKILL. Async-signal-safe.
TaskEnd WaitWatchingLease(const ChildSetup& s, Tee& tee) {
  bool fencing = false;
  bool killed = false;
  int64_t kill_at = 0;
  size_t alive = s.process_count;
  // SpawnRequest::warn_signal, due warn_at (boot clock); 0: none or sent.
  int warn = s.warn_signal;
  const int64_t warn_at = BootNs() + s.warn_after_ns;
  int result = 0;
  bool failed = false;  // a process ended otherwise than exit 0
  bool peers_killed = false;
  int64_t peers_kill_at = 0;
  for (;;) {
    int status = 0;
    pid_t done;
    while ((done = waitpid(-1, &status, WNOHANG)) > 0) {
      size_t i = 0;
      while (i < s.process_count && s.worker_pids[i] != done) ++i;
      if (i == s.process_count) continue;  // not one of ours
      s.worker_pids[i] = -1;
      --alive;
      const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!clean && !failed) {
        failed = true;
        result = status;
        if (alive > 0) {
          killpg(0, SIGTERM);  // the shim ignores it
          peers_kill_at = BootNs() + s.fence_grace_ns;
        }
      }
    }
    if (alive == 0) {
      // What the task wrote before it ended is all in the pipes now.
      if (tee.out_read >= 0) CopyAvailable(&tee.out_read, tee.out_file);
      if (tee.err_read >= 0) CopyAvailable(&tee.err_read, tee.err_file);
      // Every process exited 0: the task did its work and ended on its
      // own, also if its lease lapsed meanwhile (the fence's SIGTERM came
      // too late to matter). Reported fenced, it would run again.
      return TaskEnd{result, fencing && result != 0};
    }
    if (done < 0 && errno != EINTR) _exit(125);
    int64_t wait_ns = s.lease != nullptr ? kShimTickNs : 1000000000;
    const int64_t now = BootNs();
    if (warn != 0 && !failed && !fencing) {
      if (now >= warn_at) {
        killpg(0, warn);  // the shim ignores it (IsWarnSignal)
        warn = 0;
      } else {
        wait_ns = std::min(wait_ns, warn_at - now);
      }
    }
    if (failed && !peers_killed) {
      if (now >= peers_kill_at) {
        for (size_t i = 0; i < s.process_count; ++i) {
          if (s.worker_pids[i] > 0) kill(s.worker_pids[i], SIGKILL);
        }
        peers_killed = true;
      } else {
        wait_ns = std::min(wait_ns, peers_kill_at - now);
      }
    }
    if (s.lease != nullptr) {
      if (!fencing && now >= __atomic_load_n(s.lease, __ATOMIC_ACQUIRE)) {
        fencing = true;
        kill_at = now + s.fence_grace_ns;
        killpg(0, SIGTERM);  // the shim ignores it; the task checkpoints
      }
      if (fencing && !killed && now >= kill_at) {
        // The grace is over: the whole group goes now, whatever state the
        // task is in (one stuck in the kernel may take long to be reaped),
        // the shim too; the exit file says so first.
        WriteExitFile(s, SIGKILL, /*fenced=*/true);
        killpg(0, SIGKILL);
        killed = true;
      }
      if (fencing && !killed) wait_ns = std::min(wait_ns, kill_at - now);
    }
    WaitForEvent(tee, wait_ns);
  }
}

}  // namespace

// The forked child: the shim. It leads the task's process group, forks the
// task into that group, outlives the stop signals sent to the group, and
// records the task's exit status in the exit file before ending the same
// way. The file is what lets an agent that restarted while the task ran
// learn how it ended: the task's parent (the shim) is the only process that
// can wait for it. Only async-signal-safe calls: the agent is threaded.
[[noreturn]] void RunChild(const ChildSetup& s) {
  // A session of its own for a task with a terminal (setsid makes the
  // shim its group's leader too), else a process group.
  if (s.controlling_tty ? setsid() < 0 : setpgid(0, 0) != 0) {
    Fail(s, s.controlling_tty ? kTerminal : kSetpgid);
  }
  // Into the task's cgroups before anything else: the task forked below,
  // and whatever it forks, start inside.
  for (size_t i = 0; i < s.cgroup_fd_count; ++i) {
    if (write(s.cgroup_fds[i], "0", 1) != 1) Fail(s, kCgroup);
  }
  // Dispositions the agent set (handlers, ignores) must not survive in the
  // shim; the stop signals are ignored instead, and nothing is blocked.
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
  struct sigaction ignore_action = {};
  ignore_action.sa_handler = SIG_IGN;
  for (int sig : kShimIgnores) sigaction(sig, &ignore_action, nullptr);
  // With a terminal, the shim is in its foreground group until the task
  // makes its own (a shell's job control): its Ctrl-Z must not stop the
  // shim, nor background reads and writes.
  if (s.controlling_tty) {
    for (int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) {
      sigaction(sig, &ignore_action, nullptr);
    }
  }
  // Only SIGCHLD is blocked: the shim takes it with sigtimedwait.
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  sigprocmask(SIG_SETMASK, &chld, nullptr);
  prctl(PR_SET_NAME, "tiresias-shim", 0, 0, 0);
  // All three fds are >= 3 (see AboveStdio), so dup2 never is a no-op that
  // would keep FD_CLOEXEC.
  if (dup2(s.stdin_fd, 0) < 0 || dup2(s.stdout_fd, 1) < 0 ||
      dup2(s.stderr_fd, 2) < 0) {
    Fail(s, kRedirect);
  }
  // The terminal becomes the session's; its foreground group is the
  // shim's, so its Ctrl-C reaches the task (the shim ignores it).
  if (s.controlling_tty && ioctl(0, TIOCSCTTY, 0) != 0) Fail(s, kTerminal);
  // Close what the agent has open (sockets, files) except the error pipe,
  // which closes itself on the task's exec.
  if (s.error_fd > 3) CloseRange(3, s.error_fd - 1, s);
  CloseRange(s.error_fd + 1, ~0U, s);
  // A lease that lapsed while the agent was stopped or slow between
  // deciding to start and getting here: the node may already be declared
  // lost and the job running elsewhere.
  if (s.lease != nullptr &&
      BootNs() >= __atomic_load_n(s.lease, __ATOMIC_ACQUIRE)) {
    errno = 0;
    Fail(s, kLeaseLapsed);
  }
  TeeEnds ends;
  if (s.output_path != nullptr || s.error_path != nullptr) {
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends.socket) != 0 ||
        (s.output_path != nullptr && pipe2(ends.out_pipe, O_CLOEXEC) != 0) ||
        (s.error_path != nullptr && pipe2(ends.err_pipe, O_CLOEXEC) != 0)) {
      Fail(s, kTeeSetup);
    }
  }
  const pid_t shim = getpid();
  for (size_t i = 0; i < s.process_count; ++i) {
    const pid_t task = fork();
    if (task < 0) {
      for (size_t j = 0; j < i; ++j) kill(s.worker_pids[j], SIGKILL);
      Fail(s, kFork);
    }
    if (task == 0) ExecTask(s, i, shim, ends);
    s.worker_pids[i] = task;
  }
  // The agent learns of the exec through the pipe closing: the shim's own
  // end must not keep it open. Nor may the shim keep the task's ends of
  // the tee, or it would never see their end.
  close(s.error_fd);
  Tee tee = ReceiveUserFiles(ends);
  const TaskEnd end = WaitWatchingLease(s, tee);
  WriteExitFile(s, end.status, end.fenced);
  // Whatever the fenced task left in its group, and the shim itself: no
  // agent may be alive to sweep the group.
  if (end.fenced) killpg(0, SIGKILL);
  ExitLike(end.status);
}

}  // namespace tiresias::spawn_internal

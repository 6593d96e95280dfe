#include "agent/task_io.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/to_absl.h"
#include "core/write_all.h"

namespace tiresias {
namespace {

using Clock = std::chrono::steady_clock;

// How long the pump waits in poll: the hang-up clock and a stop are
// checked this often.
constexpr int kPumpTickMs = 200;
// After the task ended, how long its output may take to drain.
constexpr std::chrono::seconds kDrainAfterEnd{2};

absl::Status Errno(std::string_view what, int error) {
  return absl::InternalError(
      absl::StrCat(ToAbsl(what), ": ", std::strerror(error)));
}

void CloseFd(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

}  // namespace

bool IsIoSignal(int sig) {
  switch (sig) {
    case SIGINT:
    case SIGQUIT:
    case SIGTSTP:
    case SIGCONT:
    case SIGTERM:
    case SIGHUP:
    case SIGUSR1:
    case SIGUSR2:
    case SIGWINCH:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<std::shared_ptr<TaskIoSession>> TaskIoSession::Create(
    bool pty, std::optional<uid_t> uid, std::optional<gid_t> gid,
    std::chrono::milliseconds grace, std::string name) {
  std::shared_ptr<TaskIoSession> s(new TaskIoSession());
  s->pty_ = pty;
  s->grace_ = grace;
  s->name_ = std::move(name);
  if (pty) {
    const int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0) return Errno("posix_openpt", errno);
    s->input_fd_ = s->output_fd_ = master;
    char slave_name[128];
    if (grantpt(master) != 0 || unlockpt(master) != 0 ||
        ptsname_r(master, slave_name, sizeof(slave_name)) != 0) {
      return Errno("a pty (grantpt, unlockpt, ptsname)", errno);
    }
    const int slave = open(slave_name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) return Errno(absl::StrCat("open ", slave_name), errno);
    // The user's terminal, as a login gives it: theirs, 0620 with group
    // tty (0600 without one).
    if (uid &&
        (fchown(slave, *uid, gid.value_or(static_cast<gid_t>(-1))) != 0 ||
         fchmod(slave, gid ? 0620 : 0600) != 0)) {
      const int error = errno;
      close(slave);
      return Errno(absl::StrCat("give ", slave_name, " to uid ", *uid), error);
    }
    // A usual default size until the caller says its own.
    struct winsize size = {};
    size.ws_row = 24;
    size.ws_col = 80;
    ioctl(master, TIOCSWINSZ, &size);
    s->child_fds_[0] = slave;
    // Close-on-exec: nothing else the agent runs may inherit the terminal.
    s->child_fds_[1] = fcntl(slave, F_DUPFD_CLOEXEC, 0);
    s->child_fds_[2] = fcntl(slave, F_DUPFD_CLOEXEC, 0);
    if (s->child_fds_[1] < 0 || s->child_fds_[2] < 0) {
      return Errno("dup", errno);
    }
  } else {
    int in[2], out[2], err[2];
    if (pipe2(in, O_CLOEXEC) != 0) return Errno("pipe", errno);
    s->child_fds_[0] = in[0];
    s->input_fd_ = in[1];
    if (pipe2(out, O_CLOEXEC) != 0) return Errno("pipe", errno);
    s->output_fd_ = out[0];
    s->child_fds_[1] = out[1];
    if (pipe2(err, O_CLOEXEC) != 0) return Errno("pipe", errno);
    s->error_fd_ = err[0];
    s->child_fds_[2] = err[1];
  }
  // Input never blocks the caller for long (see Input).
  fcntl(s->input_fd_, F_SETFL, fcntl(s->input_fd_, F_GETFL) | O_NONBLOCK);
  MutexLock lock(&s->mu_);
  s->alone_since_ = Clock::now();
  return s;
}

TaskIoSession::~TaskIoSession() {
  {
    MutexLock lock(&mu_);
    CloseFd(&log_fd_);
  }
  for (int& fd : child_fds_) CloseFd(&fd);
  if (input_fd_ != output_fd_) CloseFd(&input_fd_);
  CloseFd(&output_fd_);
  CloseFd(&error_fd_);
}

void TaskIoSession::Started(pid_t pgid, const std::string& log_path) {
  for (int& fd : child_fds_) CloseFd(&fd);
  {
    MutexLock lock(&mu_);
    pgid_ = pgid;
    // The agent's own log folder; never through a link.
    log_fd_ =
        open(log_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    alone_since_ = Clock::now();
    started_ = true;
  }
  // The thread holds the session until it has sent the task's end.
  std::thread([self = shared_from_this()] { self->Pump(); }).detach();
}

void TaskIoSession::Ended(std::optional<int> exit_code,
                          std::optional<int> signal) {
  std::vector<std::shared_ptr<Attachment>> gone;  // let go after mu_
  MutexLock lock(&mu_);
  if (ended_) return;
  ended_ = true;
  ended_at_ = Clock::now();
  end_.set_task_ended(true);
  if (exit_code) end_.set_exit_code(*exit_code);
  if (signal) end_.set_signal(*signal);
  cv_.SignalAll();
  // A started pump finishes once the output is drained.
  if (!started_) Finish(&gone);
}

void TaskIoSession::Notice(std::string_view text) {
  MutexLock lock(&mu_);
  for (auto& [raw, a] : attachments_) {
    v1::IoResponse r;
    r.set_notice(std::string(text));
    Queue(*a, std::move(r));
  }
  cv_.SignalAll();
}

std::shared_ptr<TaskIoSession::Attachment> TaskIoSession::Attach(bool replay) {
  auto a = std::make_shared<Attachment>();
  a->session_ = shared_from_this();
  MutexLock lock(&mu_);
  if (replay && log_fd_ >= 0) {
    // What the log holds now; everything after comes from Deliver, which
    // runs under the same lock: nothing is lost or sent twice.
    struct stat st;
    if (fstat(log_fd_, &st) == 0 && st.st_size > 0) {
      // The log is opened for appending only: read it by its path.
      const std::string path = absl::StrCat("/proc/self/fd/", log_fd_);
      const int in = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (in >= 0) {
        off_t from = std::max<off_t>(0, st.st_size - kIoReplayBytes);
        std::string buf(kIoChunkBytes, '\0');
        while (from < st.st_size) {
          const ssize_t n =
              pread(in, buf.data(),
                    std::min<size_t>(buf.size(), st.st_size - from), from);
          if (n <= 0) break;
          v1::IoResponse r;
          r.set_output(buf.substr(0, n));
          Queue(*a, std::move(r));
          from += n;
        }
        close(in);
      }
    }
  }
  if (finished_) {
    v1::IoResponse r;
    *r.mutable_end() = end_;
    Queue(*a, std::move(r));
    a->done_ = true;
    a->detached_ = true;  // never counted
    return a;
  }
  attachments_[a.get()] = a;  // a cycle until Detach or Finish
  ++attached_;
  hung_up_at_.reset();
  return a;
}

void TaskIoSession::Attachment::Detach() {
  if (session_ == nullptr) return;
  TaskIoSession& s = *session_;
  MutexLock lock(&s.mu_);
  if (detached_) return;
  detached_ = true;
  done_ = true;
  if (--s.attached_ == 0) s.alone_since_ = Clock::now();
  s.cv_.SignalAll();
  // Last: the map may hold the last reference to this attachment (its
  // holder still has one, so it cannot be destroyed here).
  s.attachments_.erase(this);
}

TaskIoSession::Attachment::Next TaskIoSession::Attachment::Pop(
    v1::IoResponse* out, std::chrono::milliseconds wait) {
  TaskIoSession& s = *session_;
  MutexLock lock(&s.mu_);
  const auto deadline = Clock::now() + wait;
  while (queue_.empty()) {
    if (done_) return Next::kDone;
    if (s.cv_.WaitUntil(&s.mu_, deadline) && queue_.empty()) {
      return done_ ? Next::kDone : Next::kTimeout;
    }
  }
  *out = std::move(queue_.front());
  queue_.pop_front();
  queued_bytes_ -= std::min(queued_bytes_, out->ByteSizeLong());
  return Next::kItem;
}

void TaskIoSession::Queue(Attachment& a, v1::IoResponse response) {
  if (a.done_) return;
  const bool end = response.has_end();
  a.queued_bytes_ += response.ByteSizeLong();
  a.queue_.push_back(std::move(response));
  if (a.queued_bytes_ > kIoMostQueuedBytes && !end) {
    // Too slow a reader: dropped, with a word why.
    v1::IoResponse end;
    end.mutable_end()->set_reason(
        "this attachment fell more than 8 MiB behind the task's output and "
        "was dropped; attach again (`tiresias logs` has it all)");
    a.queue_.push_back(std::move(end));
    a.done_ = true;
  }
}

void TaskIoSession::Deliver(const std::string& bytes, bool error_stream) {
  if (log_fd_ >= 0) {
    // Best effort: a full disk must not stop the terminal.
    WriteAll(log_fd_, bytes);
  }
  for (auto& [raw, a] : attachments_) {
    v1::IoResponse r;
    if (error_stream) {
      r.set_error_output(bytes);
    } else {
      r.set_output(bytes);
    }
    Queue(*a, std::move(r));
  }
  cv_.SignalAll();
}

void TaskIoSession::Finish(std::vector<std::shared_ptr<Attachment>>* gone) {
  if (finished_) return;
  finished_ = true;
  for (auto& [raw, a] : attachments_) {
    v1::IoResponse r;
    *r.mutable_end() = end_;
    Queue(*a, std::move(r));
    a->done_ = true;
    a->detached_ = true;  // no longer counted
    gone->push_back(std::move(a));
  }
  attachments_.clear();
  attached_ = 0;
  cv_.SignalAll();
}

void TaskIoSession::Log(std::string_view line) {
  const std::string text =
      absl::StrCat("\r\ntiresias agent: ", ToAbsl(line), "\r\n");
  if (log_fd_ >= 0) {
    WriteAll(log_fd_, text);
  }
}

void TaskIoSession::CheckHangUp() {
  if (ended_ || pgid_ <= 0 || grace_.count() <= 0) return;
  const auto now = Clock::now();
  if (hung_up_at_) {
    if (now - *hung_up_at_ >= kIoHangUpKill) {
      killpg(pgid_, SIGKILL);
      hung_up_at_ = now + std::chrono::hours(24 * 365);  // once
    }
    return;
  }
  if (attached_ > 0 || now - alone_since_ < grace_) return;
  hung_up_at_ = now;
  Log(absl::StrCat(name_, ": nobody attached for ", grace_.count() / 1000.0,
                   " s: hanging up (SIGHUP)"));
  // The terminal's foreground group by the kernel's own reckoning (no pgid
  // number looked up and sent to later, which could be reused).
  if (pty_) ioctl(output_fd_, TIOCSIG, SIGHUP);
  killpg(pgid_, SIGHUP);
}

void TaskIoSession::Pump() {
  std::string buf(kIoChunkBytes, '\0');
  bool out_open = true;
  bool err_open = error_fd_ >= 0;
  while (true) {
    {
      std::vector<std::shared_ptr<Attachment>> gone;  // let go after mu_
      MutexLock lock(&mu_);
      CheckHangUp();
      if ((!out_open && !err_open) ||
          (ended_ && Clock::now() - ended_at_ >= kDrainAfterEnd)) {
        if (ended_) {
          Finish(&gone);
          return;
        }
        // Output closed first (the task closed its stdout): wait for the
        // task's end to send it.
        cv_.WaitFor(&mu_, std::chrono::milliseconds(kPumpTickMs));
        continue;
      }
    }
    struct pollfd fds[2] = {{out_open ? output_fd_ : -1, POLLIN, 0},
                            {err_open ? error_fd_ : -1, POLLIN, 0}};
    const int ready = poll(fds, 2, kPumpTickMs);
    if (ready < 0 && errno != EINTR) {
      out_open = err_open = false;  // the end follows the task's
      continue;
    }
    if (ready <= 0) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        // EOF, or EIO: a pty whose slave ends are all closed.
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      MutexLock lock(&mu_);
      Deliver(buf.substr(0, static_cast<size_t>(n)), i == 1);
    }
  }
}

absl::Status TaskIoSession::Input(std::string_view bytes,
                                  const std::function<bool()>& cancelled) {
  MutexLock input(&input_mu_);
  const auto give_up = Clock::now() + kIoInputWait;
  while (!bytes.empty()) {
    if ((cancelled && cancelled()) || Clock::now() >= give_up) {
      return absl::DeadlineExceededError(
          "the task has not read its input: dropped");
    }
    {
      MutexLock lock(&mu_);
      if (ended_ || input_fd_ < 0) {
        return absl::FailedPreconditionError("the task has ended");
      }
    }
    const ssize_t n = write(input_fd_, bytes.data(), bytes.size());
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // The task is not reading: wait, checking for its end.
      struct pollfd p = {input_fd_, POLLOUT, 0};
      poll(&p, 1, kPumpTickMs);
      continue;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the task's input is closed: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

absl::Status TaskIoSession::CloseInput() {
  MutexLock input(&input_mu_);
  if (pty_) {
    // A terminal has no end of input but its EOF character (Ctrl-D), which
    // the line discipline turns into one for a reader in canonical mode.
    struct termios t;
    char eof = 4;
    if (tcgetattr(input_fd_, &t) == 0) eof = static_cast<char>(t.c_cc[VEOF]);
    if (write(input_fd_, &eof, 1) < 0 && errno != EAGAIN) {
      return Errno("write EOF", errno);
    }
    return absl::OkStatus();
  }
  CloseFd(&input_fd_);
  return absl::OkStatus();
}

absl::Status TaskIoSession::Resize(int rows, int cols) {
  if (!pty_) {
    return absl::FailedPreconditionError(
        "the task has no terminal (submit it with --pty)");
  }
  if (rows <= 0 || cols <= 0 || rows > 65535 || cols > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("window size: expected rows and columns 1 to 65535, got ",
                     rows, "x", cols));
  }
  struct winsize size = {};
  size.ws_row = static_cast<unsigned short>(rows);
  size.ws_col = static_cast<unsigned short>(cols);
  // The kernel sends SIGWINCH to the terminal's foreground group.
  if (ioctl(output_fd_, TIOCSWINSZ, &size) != 0) {
    return Errno("TIOCSWINSZ", errno);
  }
  return absl::OkStatus();
}

absl::Status TaskIoSession::Signal(int sig) {
  if (!IsIoSignal(sig)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "signal: expected INT, QUIT, TSTP, CONT, TERM, HUP, USR1, USR2 or "
        "WINCH (their numbers), got ",
        sig));
  }
  MutexLock lock(&mu_);
  if (ended_ || pgid_ <= 0) {
    return absl::FailedPreconditionError("the task is not running");
  }
  if (pty_) {
    // The terminal's foreground job (a shell's job control moves it), as
    // the kernel knows it.
    if (ioctl(output_fd_, TIOCSIG, sig) != 0) return Errno("TIOCSIG", errno);
    return absl::OkStatus();
  }
  if (sig == SIGTSTP || sig == SIGCONT) {
    // The shim leads the group and would stop with its task.
    return absl::FailedPreconditionError(
        "stopping and continuing need a terminal (--pty)");
  }
  if (killpg(pgid_, sig) != 0) return Errno("kill", errno);
  return absl::OkStatus();
}

void TaskIoRegistry::Add(const Key& key,
                         std::shared_ptr<TaskIoSession> session) {
  MutexLock lock(&mu_);
  sessions_[key] = std::move(session);
}

std::shared_ptr<TaskIoSession> TaskIoRegistry::Find(const Key& key) const {
  MutexLock lock(&mu_);
  auto it = sessions_.find(key);
  return it == sessions_.end() ? nullptr : it->second;
}

void TaskIoRegistry::Remove(const Key& key) {
  MutexLock lock(&mu_);
  sessions_.erase(key);
}

}  // namespace tiresias

#include "cli/job_io.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/write_all.h"

namespace tiresias::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int> g_pending_signal{0};
std::atomic<bool> g_winch{false};

extern "C" void OnSignal(int sig) { g_pending_signal.store(sig); }
extern "C" void OnWinch(int) { g_winch.store(true); }

// The local terminal in raw mode for its scope.
class RawTerminal {
 public:
  RawTerminal() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    struct termios raw = saved_;
    cfmakeraw(&raw);
    active_ = tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  }
  bool active() const { return active_; }

 private:
  struct termios saved_ = {};
  bool active_ = false;
};

// Signal handlers for the join's scope, the old ones back after.
class Handlers {
 public:
  explicit Handlers(bool terminal) {
    struct sigaction on = {};
    on.sa_handler = OnSignal;
    sigemptyset(&on.sa_mask);
    for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) {
      sigaction(sig, &on, &old_[sig]);
    }
    struct sigaction winch = {};
    winch.sa_handler = OnWinch;
    sigemptyset(&winch.sa_mask);
    if (terminal) sigaction(SIGWINCH, &winch, &old_[SIGWINCH]);
    terminal_ = terminal;
  }
  ~Handlers() {
    for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP}) {
      sigaction(sig, &old_[sig], nullptr);
    }
    if (terminal_) sigaction(SIGWINCH, &old_[SIGWINCH], nullptr);
  }

 private:
  struct sigaction old_[NSIG] = {};
  bool terminal_ = false;
};

bool WindowSize(int* rows, int* cols) {
  struct winsize w = {};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) != 0 || w.ws_row == 0) return false;
  *rows = w.ws_row;
  *cols = w.ws_col;
  return true;
}

}  // namespace

std::optional<int> TaskExitCode(const v1::IoEnd& end) {
  if (!end.task_ended()) return std::nullopt;
  if (end.signal() != 0) return 128 + end.signal();
  return end.exit_code();
}

IoResult JoinTask(MasterClient& client, v1::IoOpen open, bool input) {
  IoResult result;
  const bool local_tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
  int rows = 0, cols = 0;
  if (local_tty && WindowSize(&rows, &cols)) {
    open.set_rows(rows);
    open.set_cols(cols);
  }
  std::unique_ptr<grpc::ClientContext> ctx = client.StreamContext();
  auto stream = client.grpc_stub().JobIo(ctx.get());
  v1::IoRequest first;
  *first.mutable_open() = open;
  v1::IoResponse r;
  if (!stream->Write(first) || !stream->Read(&r)) {
    stream->WritesDone();
    result.status = stream->Finish();
    if (result.status.ok()) {
      result.status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "the master ended the stream at once");
    }
    return result;
  }
  result.opened = true;
  const bool tty = r.opened().tty();
  input = input && r.opened().interactive();
  // Raw only when both ends are terminals: then the task's terminal does
  // the echo, line editing and Ctrl-C.
  std::optional<RawTerminal> raw;
  if (tty && local_tty && input) raw.emplace();
  const bool raw_mode = raw && raw->active();
  Handlers handlers(raw_mode);
  g_pending_signal.store(0);
  g_winch.store(false);

  std::atomic<bool> done{false};
  std::thread down([&] {
    v1::IoResponse in;
    while (stream->Read(&in)) {
      if (in.has_output()) WriteAll(STDOUT_FILENO, in.output());
      if (in.has_error_output()) WriteAll(STDERR_FILENO, in.error_output());
      if (in.has_notice()) {
        WriteAll(STDERR_FILENO,
                 absl::StrCat(raw_mode ? "\r\n" : "", "tiresias: ", in.notice(),
                              raw_mode ? "\r\n" : "\n"));
      }
      if (in.has_end()) {
        result.end = in.end();
        break;
      }
    }
    done.store(true);
  });

  bool stdin_open = input;
  std::optional<Clock::time_point> last_interrupt;
  std::string buf(16 << 10, '\0');
  while (!done.load()) {
    if (const int sig = g_pending_signal.exchange(0); sig != 0) {
      const auto now = Clock::now();
      const bool twice = sig == SIGINT && last_interrupt &&
                         now - *last_interrupt < std::chrono::seconds(1);
      if (!input || twice || sig == SIGHUP) {
        result.detached = true;  // leave; the task goes on
        break;
      }
      if (sig == SIGINT) last_interrupt = now;
      v1::IoRequest req;
      req.set_signal(sig);
      if (!stream->Write(req)) break;
    }
    if (g_winch.exchange(false) && WindowSize(&rows, &cols)) {
      v1::IoRequest req;
      req.mutable_resize()->set_rows(rows);
      req.mutable_resize()->set_cols(cols);
      if (!stream->Write(req)) break;
    }
    struct pollfd p = {stdin_open ? STDIN_FILENO : -1, POLLIN, 0};
    const int ready = poll(&p, 1, 50);
    if (ready <= 0 || p.revents == 0) continue;
    const ssize_t n = read(STDIN_FILENO, buf.data(), buf.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      // End of our input: the task's too (with a terminal, its EOF
      // character).
      stdin_open = false;
      v1::IoRequest req;
      req.set_close_input(true);
      if (!stream->Write(req)) break;
      continue;
    }
    std::string bytes = buf.substr(0, static_cast<size_t>(n));
    if (raw_mode) {
      if (const size_t key = bytes.find(kDetachKey); key != std::string::npos) {
        bytes.resize(key);
        result.detached = true;
      }
    }
    if (!bytes.empty()) {
      v1::IoRequest req;
      req.set_input(std::move(bytes));
      if (!stream->Write(req)) break;
    }
    if (result.detached) break;
  }
  stream->WritesDone();
  // The master ends its side once it sees ours closed (at most a few
  // seconds); a detach need not wait for more output.
  if (result.detached) ctx->TryCancel();
  down.join();
  result.status = stream->Finish();
  if (result.detached || result.end) result.status = grpc::Status::OK;
  raw.reset();
  if (raw_mode && result.detached) {
    std::fprintf(stderr,
                 "\ntiresias: detached; the job goes on (attach "
                 "again with `tiresias attach %lld`)\n",
                 static_cast<long long>(open.job_id()));
  }
  return result;
}

}  // namespace tiresias::cli

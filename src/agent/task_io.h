// An interactive task's input and output (JobSpec.io, `tiresias run`): the
// agent holds a pseudo-terminal's master end (or the other ends of three
// pipes) whose slave ends are the task's stdin, stdout and stderr
// (SpawnRequest::stdio_fds). One pump thread per task (holding the session
// until the task's end) reads the output,
// appends it to the task's log (so `tiresias logs` keeps working) and hands
// it to every attachment (AgentLogService::TaskIo, which the master relays
// to `tiresias run` and `attach`).
//
// Hang-up: a task that has had nobody attached for its grace (JobSpec.
// io_grace_seconds; counted from its start and from each last detach) gets
// SIGHUP to its process group (with a pty, to the terminal's foreground
// group too), as a dropped ssh session does; if it is still there 10 s
// later, SIGKILL. The log says so.
//
// Interactive tasks do not survive their agent: the pty's master end dies
// with it, which hangs the task up (an adopted task has no session; its
// output after that goes nowhere and its stdin is at its end).
#ifndef TIRESIAS_AGENT_TASK_IO_H_
#define TIRESIAS_AGENT_TASK_IO_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

// What an attachment is sent at most once it attaches: the log's last
// bytes (IoOpen.replay).
inline constexpr int64_t kIoReplayBytes = 1 << 20;
// Output bytes one response carries at most.
inline constexpr size_t kIoChunkBytes = 32 << 10;
// An attachment that falls this far behind is dropped (its stream ends
// with a notice), so that a stalled client never holds the task up.
inline constexpr size_t kIoMostQueuedBytes = 8 << 20;
// How long input may wait for a task that does not read it.
inline constexpr std::chrono::seconds kIoInputWait{10};
// Between the hang-up's SIGHUP and its SIGKILL.
inline constexpr std::chrono::seconds kIoHangUpKill{10};

class TaskIoSession : public std::enable_shared_from_this<TaskIoSession> {
 public:
  // The task's end of the wiring is given to uid/gid (a pty's slave:
  // 0620, group gid); `grace`: see the file comment. `name` ("job 3
  // attempt 1 rank 0") is for the log's lines.
  static absl::StatusOr<std::shared_ptr<TaskIoSession>> Create(
      bool pty, std::optional<uid_t> uid, std::optional<gid_t> gid,
      std::chrono::milliseconds grace, std::string name);
  ~TaskIoSession();

  // The task's stdin, stdout and stderr (TaskSpec::stdio_fds), and whether
  // stdin is a terminal to make its controlling one.
  const int* child_fds() const { return child_fds_; }
  bool tty() const { return pty_; }

  // The task started, leading process group `pgid`, with `log_path` its
  // log: closes the task's ends here and starts the pump.
  void Started(pid_t pgid, const std::string& log_path);
  // The task ended (exit code or signal, when known): once its output is
  // drained (or 2 s later) every attachment gets `end` and is closed.
  void Ended(std::optional<int> exit_code, std::optional<int> signal);
  // Sent to every attachment now (e.g. "preempted"); not logged.
  void Notice(std::string_view text);

  class Attachment {
   public:
    enum class Next { kItem, kTimeout, kDone };
    // The next response, waiting at most `wait`; kDone once `end` was
    // returned or Detach was called.
    Next Pop(v1::IoResponse* out, std::chrono::milliseconds wait);
    // Stops the attachment: Pop answers kDone, and the session counts one
    // attachment less (the hang-up clock starts when none is left). The
    // holder must call it (the session holds the attachment until then,
    // or until the task's end).
    void Detach();

   private:
    friend class TaskIoSession;
    std::shared_ptr<TaskIoSession> session_;
    std::deque<v1::IoResponse> queue_;  // guarded by session_->mu_
    size_t queued_bytes_ = 0;
    bool done_ = false;  // end queued or detached
    bool detached_ = false;
  };

  // A new attachment; with `replay`, the log's last kIoReplayBytes first.
  // Any attachment, read-only too, keeps the task from being hung up:
  // someone is there.
  std::shared_ptr<Attachment> Attach(bool replay);

  // Input, end of input, window size, signals (IoRequest). Errors:
  // FailedPrecondition once the task ended or for what this wiring
  // cannot do (a resize without a pty).
  // Input waits for the task to read it at most kIoInputWait, and not
  // once `cancelled` says so (the caller's call ended): DeadlineExceeded.
  absl::Status Input(std::string_view bytes,
                     const std::function<bool()>& cancelled = nullptr);
  absl::Status CloseInput();
  absl::Status Resize(int rows, int cols);
  absl::Status Signal(int sig);

 private:
  TaskIoSession() = default;
  void Pump();
  // Appends to the log and queues for every attachment.
  void Deliver(const std::string& bytes, bool error_stream)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Queue(Attachment& a, v1::IoResponse response)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `end` for every attachment and lets go of them (into `*gone`,
  // released by the caller once it dropped mu_).
  void Finish(std::vector<std::shared_ptr<Attachment>>* gone)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void CheckHangUp() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Log(std::string_view line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  bool pty_ = false;
  std::string name_;
  std::chrono::milliseconds grace_{0};
  int child_fds_[3] = {-1, -1, -1};
  // Ours: a pty's master end (input, output, the only one), or the pipes'.
  int input_fd_ = -1;
  int output_fd_ = -1;
  int error_fd_ = -1;  // pipes only

  Mutex input_mu_;  // one writer of input at a time; a leaf
  mutable Mutex mu_;
  SteadyCondVar cv_;
  int log_fd_ ABSL_GUARDED_BY(mu_) = -1;
  pid_t pgid_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // the pump runs
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // `end` sent
  v1::IoEnd end_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point ended_at_ ABSL_GUARDED_BY(mu_);
  std::map<Attachment*, std::shared_ptr<Attachment>> attachments_
      ABSL_GUARDED_BY(mu_);
  int attached_ ABSL_GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point alone_since_ ABSL_GUARDED_BY(mu_);
  std::optional<std::chrono::steady_clock::time_point> hung_up_at_
      ABSL_GUARDED_BY(mu_);
};

// The agent's interactive tasks by (job, attempt, rank). Thread-safe.
class TaskIoRegistry {
 public:
  using Key = std::tuple<int64_t, int, int>;
  void Add(const Key& key, std::shared_ptr<TaskIoSession> session);
  std::shared_ptr<TaskIoSession> Find(const Key& key) const;
  void Remove(const Key& key);

 private:
  mutable Mutex mu_;
  std::map<Key, std::shared_ptr<TaskIoSession>> sessions_ ABSL_GUARDED_BY(mu_);
};

// Whether signal `sig` may be sent through IoRequest.signal (the list in
// proto/tiresias.proto).
bool IsIoSignal(int sig);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_TASK_IO_H_

// The agent's own small record of the tasks it runs, so that an agent that
// restarts (crash, upgrade) finds the tasks its predecessor left running and
// re-attaches to them or reports them to the master.
//
// One JSON file, rewritten whole and atomically (temporary file, fsync,
// rename) on every change:
//   {"version": 1, "tasks": [{"job_id": 7, "attempt": 0, "rank": 0,
//     "pid": 4242, "pgid": 4242, "start_time_unix_us": 1700000000000000,
//     "proc_start_ticks": 123456, "log_path": "/var/log/.../7.log",
//     "exit_path": "/var/lib/.../exits/...", "gpus": [0, 1],
//     "stop_requested": null | "preempt" | "cancel",
//     "stop_requested_unix_us": 1700000000654321, "uid": 1001}]}
// (exit_path and gpus may be absent, in records older than the task shim;
// uid, information only, is absent in older records and for tasks that run
// as the agent's own user.)
//
// Record a stop *before* signalling, so that a crash in between still knows
// the task was being stopped (and reports it preempted, not failed).
#ifndef TIRESIAS_AGENT_TASK_RECORD_H_
#define TIRESIAS_AGENT_TASK_RECORD_H_

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/file_store.h"
#include "agent/launcher.h"
#include "agent/proc_table.h"

namespace tiresias {

struct TaskRecordEntry {
  TaskHandle handle;
  std::optional<StopReason> stop_requested;
  // When the stop was recorded (just before it was signalled). A task whose
  // recorded end came earlier ended on its own: its own exit wins. The
  // epoch (absent, in older records) is unknown: every end counts as
  // stopped.
  std::chrono::system_clock::time_point stop_requested_at{};
};

// The file's text for `entries`. Pure.
std::string SerializeTaskRecord(const std::vector<TaskRecordEntry>& entries);
// The entries in `text`; InvalidArgument naming the task and field at fault.
// Pure.
absl::StatusOr<std::vector<TaskRecordEntry>> ParseTaskRecord(
    std::string_view text);

// The record file, loaded in memory; every change is on disk before the
// call returns (and is not made in memory if the write fails). Not
// thread-safe; the agent serializes access.
class TaskRecord {
 public:
  // Loads `path`; a missing file is an empty record. A corrupt file is
  // DataLoss naming it. `files` null: RealFileStore(); must outlive this.
  static absl::StatusOr<TaskRecord> Open(std::string path,
                                         FileStore* files = nullptr);

  const std::vector<TaskRecordEntry>& entries() const { return entries_; }

  // Inserts or replaces the entry of the same task (job_id, attempt, rank).
  absl::Status Put(const TaskRecordEntry& entry);
  // Marks the task as being stopped for `reason` at `at` (the first stop
  // recorded keeps its time). NotFound if absent.
  absl::Status MarkStopRequested(const TaskHandle& task, StopReason reason,
                                 std::chrono::system_clock::time_point at);
  // Forgets the task (it exited and was reported). Absent is fine.
  absl::Status Remove(const TaskHandle& task);

 private:
  TaskRecord(std::string path, FileStore* files,
             std::vector<TaskRecordEntry> entries)
      : path_(std::move(path)), files_(files), entries_(std::move(entries)) {}
  absl::Status Save(std::vector<TaskRecordEntry> entries);

  std::string path_;
  FileStore* files_;
  std::vector<TaskRecordEntry> entries_;
};

// A recorded task as found after a restart.
struct RecoveredTask {
  TaskRecordEntry entry;
  // Set when the task no longer runs: its process is gone, is a zombie, or
  // its pid now belongs to another process (different /proc start time).
  // Exit code or signal and end time come from the task's exit file; the
  // outcome is that of the requested stop, else follows the exit status.
  // Without an exit file the status is lost: kUnknown, no exit code.
  std::optional<TaskExit> exit;
  bool alive() const { return !exit.has_value(); }
};

// Checks each entry against the process table. `now` stamps the exits. An
// entry whose process cannot be read (permission) counts as alive.
std::vector<RecoveredTask> CheckRecordedTasks(
    const std::vector<TaskRecordEntry>& entries, ProcessTable& processes,
    std::chrono::system_clock::time_point now);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_TASK_RECORD_H_

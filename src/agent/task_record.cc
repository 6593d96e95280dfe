#include "agent/task_record.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "agent/exit_file.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

using nlohmann::json;
constexpr int kVersion = 1;

bool SameTask(const TaskHandle& a, const TaskHandle& b) {
  return a.job_id == b.job_id && a.attempt == b.attempt && a.rank == b.rank;
}

int64_t ToUnixMicros(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             t.time_since_epoch())
      .count();
}

// Reads field `name` of `task` into `out`; an error names task and field.
template <typename T>
absl::Status Get(const json& task, size_t index, const char* name, T& out) {
  auto it = task.find(name);
  const bool ok = it != task.end() &&
                  (std::is_same_v<T, std::string> ? it->is_string()
                                                  : it->is_number_integer());
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tasks[", index, "]: field '", name, "': expected ",
        std::is_same_v<T, std::string> ? "a string" : "an integer"));
  }
  out = it->template get<T>();
  return absl::OkStatus();
}

absl::StatusOr<TaskRecordEntry> ParseEntry(const json& task, size_t i) {
  if (!task.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tasks[", i, "]: expected an object"));
  }
  TaskRecordEntry entry;
  TaskHandle& h = entry.handle;
  int64_t start_us = 0;
  for (absl::Status s :
       {Get(task, i, "job_id", h.job_id), Get(task, i, "attempt", h.attempt),
        Get(task, i, "rank", h.rank), Get(task, i, "pid", h.pid),
        Get(task, i, "pgid", h.pgid),
        Get(task, i, "start_time_unix_us", start_us),
        Get(task, i, "proc_start_ticks", h.proc_start_ticks),
        Get(task, i, "log_path", h.log_path)}) {
    if (!s.ok()) return s;
  }
  if (h.pid <= 0 || h.pgid <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("tasks[", i, "]: pid and pgid must be positive"));
  }
  // Optional (records written before the task shim lack them).
  auto exit_path = task.find("exit_path");
  if (exit_path != task.end()) {
    if (!exit_path->is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tasks[", i, "]: field 'exit_path': expected a string"));
    }
    h.exit_path = exit_path->get<std::string>();
  }
  auto gpus = task.find("gpus");
  if (gpus != task.end()) {
    if (!gpus->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tasks[", i, "]: field 'gpus': expected an array of GPU indexes"));
    }
    for (const json& g : *gpus) {
      if (!g.is_number_integer() || g.get<int>() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tasks[", i, "]: field 'gpus': expected an array of GPU indexes"));
      }
      h.gpus.push_back(g.get<int>());
    }
  }
  // Optional (records written before tasks ran as their owners lack it;
  // absent too for a task that runs as the agent's own user).
  auto uid = task.find("uid");
  if (uid != task.end()) {
    if (!uid->is_number_unsigned() ||
        uid->get<uint64_t>() > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tasks[", i, "]: field 'uid': expected a uid"));
    }
    h.uid = uid->get<uint32_t>();
  }
  h.start_time = std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::microseconds(start_us)));
  auto stop = task.find("stop_requested");
  if (stop != task.end() && !stop->is_null()) {
    std::optional<StopReason> reason =
        stop->is_string() ? ParseStopReason(stop->get<std::string>())
                          : std::nullopt;
    if (!reason.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tasks[", i,
                       "]: field 'stop_requested': expected "
                       "null, \"preempt\" or \"cancel\""));
    }
    entry.stop_requested = reason;
    auto at = task.find("stop_requested_unix_us");
    if (at != task.end()) {
      if (!at->is_number_integer() || at->get<int64_t>() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tasks[", i,
            "]: field 'stop_requested_unix_us': expected Unix microseconds"));
      }
      entry.stop_requested_at = std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::microseconds(at->get<int64_t>())));
    }
  }
  return entry;
}

}  // namespace

std::string SerializeTaskRecord(const std::vector<TaskRecordEntry>& entries) {
  json tasks = json::array();
  for (const TaskRecordEntry& e : entries) {
    const TaskHandle& h = e.handle;
    json& task = tasks.emplace_back(json{
        {"job_id", h.job_id},
        {"attempt", h.attempt},
        {"rank", h.rank},
        {"pid", h.pid},
        {"pgid", h.pgid},
        {"start_time_unix_us", ToUnixMicros(h.start_time)},
        {"proc_start_ticks", h.proc_start_ticks},
        {"log_path", h.log_path},
        {"exit_path", h.exit_path},
        {"gpus", h.gpus},
        {"stop_requested", e.stop_requested.has_value()
                               ? json(StopReasonName(*e.stop_requested))
                               : json(nullptr)},
    });
    if (e.stop_requested.has_value() &&
        e.stop_requested_at != std::chrono::system_clock::time_point{}) {
      task["stop_requested_unix_us"] = ToUnixMicros(e.stop_requested_at);
    }
    if (h.uid.has_value()) task["uid"] = *h.uid;
  }
  return json({{"version", kVersion}, {"tasks", tasks}}).dump(2) + "\n";
}

absl::StatusOr<std::vector<TaskRecordEntry>> ParseTaskRecord(
    std::string_view text) {
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("not a JSON object");
  }
  auto version = doc.find("version");
  if (version == doc.end() || *version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat("field 'version': expected ", kVersion));
  }
  auto tasks = doc.find("tasks");
  if (tasks == doc.end() || !tasks->is_array()) {
    return absl::InvalidArgumentError("field 'tasks': expected an array");
  }
  std::vector<TaskRecordEntry> entries;
  for (size_t i = 0; i < tasks->size(); ++i) {
    absl::StatusOr<TaskRecordEntry> entry = ParseEntry((*tasks)[i], i);
    if (!entry.ok()) return entry.status();
    entries.push_back(std::move(*entry));
  }
  return entries;
}

absl::StatusOr<TaskRecord> TaskRecord::Open(std::string path,
                                            FileStore* files) {
  if (files == nullptr) files = RealFileStore();
  absl::StatusOr<std::optional<std::string>> text = files->Read(path);
  if (!text.ok()) return text.status();
  std::vector<TaskRecordEntry> entries;
  if (text->has_value()) {
    absl::StatusOr<std::vector<TaskRecordEntry>> parsed =
        ParseTaskRecord(**text);
    if (!parsed.ok()) {
      return absl::DataLossError(
          absl::StrCat("task record ", path, ": ", parsed.status().message()));
    }
    entries = std::move(*parsed);
  }
  return TaskRecord(std::move(path), files, std::move(entries));
}

absl::Status TaskRecord::Save(std::vector<TaskRecordEntry> entries) {
  absl::Status status =
      files_->WriteAtomically(path_, SerializeTaskRecord(entries));
  if (status.ok()) entries_ = std::move(entries);
  return status;
}

absl::Status TaskRecord::Put(const TaskRecordEntry& entry) {
  std::vector<TaskRecordEntry> entries = entries_;
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) {
    return SameTask(e.handle, entry.handle);
  });
  if (it != entries.end()) {
    *it = entry;
  } else {
    entries.push_back(entry);
  }
  return Save(std::move(entries));
}

absl::Status TaskRecord::MarkStopRequested(
    const TaskHandle& task, StopReason reason,
    std::chrono::system_clock::time_point at) {
  std::vector<TaskRecordEntry> entries = entries_;
  auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) {
    return SameTask(e.handle, task);
  });
  if (it == entries.end()) {
    return absl::NotFoundError(absl::StrCat("job ", task.job_id, " attempt ",
                                            task.attempt, " rank ", task.rank,
                                            " is not in the task record"));
  }
  if (!it->stop_requested.has_value()) it->stop_requested_at = at;
  it->stop_requested = reason;
  return Save(std::move(entries));
}

absl::Status TaskRecord::Remove(const TaskHandle& task) {
  std::vector<TaskRecordEntry> entries = entries_;
  const auto removed = std::erase_if(
      entries, [&](const auto& e) { return SameTask(e.handle, task); });
  if (removed == 0) return absl::OkStatus();
  return Save(std::move(entries));
}

std::vector<RecoveredTask> CheckRecordedTasks(
    const std::vector<TaskRecordEntry>& entries, ProcessTable& processes,
    std::chrono::system_clock::time_point now) {
  std::vector<RecoveredTask> found;
  for (const TaskRecordEntry& entry : entries) {
    RecoveredTask task{entry, std::nullopt};
    absl::StatusOr<std::optional<ProcStat>> stat =
        processes.Stat(entry.handle.pid);
    const bool dead =
        stat.ok() && (!stat->has_value() || (*stat)->exited() ||
                      (*stat)->start_ticks != entry.handle.proc_start_ticks);
    if (dead) {
      TaskExit exit;
      exit.handle = entry.handle;
      exit.outcome = entry.stop_requested == StopReason::kPreempt
                         ? TaskOutcome::kPreempted
                     : entry.stop_requested == StopReason::kCancel
                         ? TaskOutcome::kCancelled
                         : TaskOutcome::kUnknown;
      exit.end_time = now;
      // Its shim recorded how it ended (no file: the shim died with it, or
      // the task predates shims).
      absl::StatusOr<std::optional<RecordedExit>> recorded =
          entry.handle.exit_path.empty() ? std::optional<RecordedExit>()
                                         : ReadExitFile(entry.handle.exit_path);
      if (recorded.ok() && recorded->has_value()) {
        const RecordedExit& r = **recorded;
        exit.exit_code = r.exit_code;
        exit.signal = r.signal;
        exit.end_time = r.end_time;
        exit.fenced = r.fenced;
        // Ended before the stop was recorded: on its own (see
        // TaskRecordEntry::stop_requested_at).
        const bool stopped = entry.stop_requested.has_value() &&
                             r.end_time >= entry.stop_requested_at;
        if (!stopped) {
          exit.outcome = r.fenced ? TaskOutcome::kPreempted
                         : r.exit_code == 0 ? TaskOutcome::kFinished
                                            : TaskOutcome::kFailed;
        }
      }
      task.exit = exit;
    }
    found.push_back(std::move(task));
  }
  return found;
}

}  // namespace tiresias

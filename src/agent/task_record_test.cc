#include "agent/task_record.h"

#include <filesystem>

#include "agent/agent_testing.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tiresias {
namespace {

using agent_testing::ReadFile;
using agent_testing::TestDir;
using agent_testing::WaitUntil;
using ::testing::HasSubstr;

TaskHandle Handle(int64_t job, int rank, pid_t pid) {
  TaskHandle h;
  h.job_id = job;
  h.attempt = 1;
  h.rank = rank;
  h.pid = pid;
  h.pgid = pid;
  h.start_time = std::chrono::system_clock::time_point(
      std::chrono::microseconds(1'700'000'000'123'456));
  h.proc_start_ticks = 987654;
  h.log_path = "/logs/" + std::to_string(job) + ".log";
  return h;
}

void ExpectSame(const TaskRecordEntry& a, const TaskRecordEntry& b) {
  EXPECT_EQ(a.handle.job_id, b.handle.job_id);
  EXPECT_EQ(a.handle.attempt, b.handle.attempt);
  EXPECT_EQ(a.handle.rank, b.handle.rank);
  EXPECT_EQ(a.handle.pid, b.handle.pid);
  EXPECT_EQ(a.handle.pgid, b.handle.pgid);
  EXPECT_EQ(a.handle.start_time, b.handle.start_time);
  EXPECT_EQ(a.handle.proc_start_ticks, b.handle.proc_start_ticks);
  EXPECT_EQ(a.handle.log_path, b.handle.log_path);
  EXPECT_EQ(a.stop_requested, b.stop_requested);
}

TEST(TaskRecordTest, RoundTripsThroughTheFile) {
  TestDir dir;
  const std::string path = dir.File("state/tasks.json");
  absl::StatusOr<TaskRecord> record = TaskRecord::Open(path);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_TRUE(record->entries().empty());
  const TaskRecordEntry a{Handle(7, 0, 1001), std::nullopt};
  const TaskRecordEntry b{Handle(8, 1, 1002), std::nullopt};
  ASSERT_TRUE(record->Put(a).ok());
  ASSERT_TRUE(record->Put(b).ok());
  const auto stop_at = std::chrono::system_clock::time_point(
      std::chrono::microseconds(1'700'000'100'654'321));
  ASSERT_TRUE(
      record->MarkStopRequested(b.handle, StopReason::kPreempt, stop_at).ok());
  // A second stop keeps the first one's time.
  ASSERT_TRUE(record
                  ->MarkStopRequested(b.handle, StopReason::kPreempt,
                                      stop_at + std::chrono::seconds(5))
                  .ok());
  EXPECT_EQ(record
                ->MarkStopRequested(Handle(9, 0, 1), StopReason::kCancel,
                                    stop_at)
                .code(),
            absl::StatusCode::kNotFound);

  absl::StatusOr<TaskRecord> reloaded = TaskRecord::Open(path);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  ASSERT_EQ(reloaded->entries().size(), 2u);
  ExpectSame(reloaded->entries()[0], a);
  ExpectSame(reloaded->entries()[1],
             TaskRecordEntry{b.handle, StopReason::kPreempt});
  // The file is the documented JSON, and no temporary file is left over.
  const nlohmann::json doc = nlohmann::json::parse(ReadFile(path));
  EXPECT_EQ(doc["version"], 1);
  EXPECT_EQ(doc["tasks"][1]["stop_requested"], "preempt");
  EXPECT_EQ(doc["tasks"][1]["stop_requested_unix_us"], 1'700'000'100'654'321);
  EXPECT_EQ(reloaded->entries()[1].stop_requested_at, stop_at);
  EXPECT_EQ(doc["tasks"][0]["start_time_unix_us"], 1'700'000'000'123'456);
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(dir.File("state")),
                    std::filesystem::directory_iterator()),
      1);

  ASSERT_TRUE(reloaded->Remove(a.handle).ok());
  ASSERT_TRUE(reloaded->Remove(a.handle).ok());  // absent is fine
  EXPECT_EQ(TaskRecord::Open(path)->entries().size(), 1u);
}

TEST(TaskRecordTest, CorruptFileIsDataLossNamingTheFile) {
  TestDir dir;
  const std::string path = dir.Write("tasks.json", "{\"version\": 1, \"tas");
  absl::StatusOr<TaskRecord> record = TaskRecord::Open(path);
  EXPECT_EQ(record.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(record.status().message()), HasSubstr(path));

  nlohmann::json doc = nlohmann::json::parse(
      SerializeTaskRecord({{Handle(7, 0, 1001), StopReason::kCancel}}));
  doc["tasks"][0]["pid"] = "1001";
  absl::StatusOr<std::vector<TaskRecordEntry>> parsed =
      ParseTaskRecord(doc.dump());
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("tasks[0]: field 'pid': expected an integer"));
  doc["tasks"][0]["pid"] = 1001;
  doc["tasks"][0]["stop_requested"] = "pause";
  parsed = ParseTaskRecord(doc.dump());
  EXPECT_THAT(std::string(parsed.status().message()),
              HasSubstr("field 'stop_requested'"));
  doc["version"] = 2;
  EXPECT_THAT(std::string(ParseTaskRecord(doc.dump()).status().message()),
              HasSubstr("field 'version'"));
}

// The uid a task runs as is recorded for information; records without it
// (older agents, tasks run as the agent's own user) load as before.
TEST(TaskRecordTest, UidIsOptional) {
  TaskHandle as_account = Handle(7, 0, 1001);
  as_account.uid = 1234;
  const std::string text =
      SerializeTaskRecord({{as_account, std::nullopt},
                           {Handle(8, 0, 1002), std::nullopt}});
  nlohmann::json doc = nlohmann::json::parse(text);
  EXPECT_EQ(doc["tasks"][0]["uid"], 1234);
  EXPECT_FALSE(doc["tasks"][1].contains("uid"));
  absl::StatusOr<std::vector<TaskRecordEntry>> parsed = ParseTaskRecord(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)[0].handle.uid, 1234u);
  EXPECT_FALSE((*parsed)[1].handle.uid.has_value());

  doc["tasks"][0]["uid"] = -1;
  EXPECT_THAT(std::string(ParseTaskRecord(doc.dump()).status().message()),
              HasSubstr("tasks[0]: field 'uid': expected a uid"));
}

class FailingFileStore final : public FileStore {
 public:
  absl::StatusOr<std::optional<std::string>> Read(const std::string&) override {
    return std::nullopt;
  }
  absl::Status WriteAtomically(const std::string& path,
                               std::string_view) override {
    return absl::UnavailableError("disk full");
  }
};

TEST(TaskRecordTest, FailedWriteChangesNothing) {
  FailingFileStore files;
  absl::StatusOr<TaskRecord> record = TaskRecord::Open("tasks.json", &files);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->Put({Handle(7, 0, 1001), std::nullopt}).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(record->entries().empty());
}

TEST(ProcStatTest, ParsesFieldsAfterTheCommandName) {
  std::string text = "4242 (my (odd) name) S 1 4240 4240 0 -1";
  for (int field = 9; field <= 21; ++field) text += " 0";
  text += " 31415926 1000 2000\n";
  absl::StatusOr<ProcStat> stat = ParseProcStat(text);
  ASSERT_TRUE(stat.ok()) << stat.status();
  EXPECT_EQ(stat->state, 'S');
  EXPECT_EQ(stat->pgid, 4240);
  EXPECT_EQ(stat->start_ticks, 31415926u);
  EXPECT_FALSE(ParseProcStat("4242 (x) S 1 2").ok());
  EXPECT_FALSE(ParseProcStat("no paren").ok());
}

TEST(CheckRecordedTasksTest, TellsLiveTasksFromExitedAndReusedPids) {
  TestDir dir;
  // Tasks run as the test's own user (agent_testing::RootTasksAllowed).
  PosixLauncher launcher(agent_testing::RootTasksAllowed());
  TaskSpec spec = agent_testing::OwnedByRoot({});
  spec.log_path = dir.File("task.log");
  spec.argv = {"/bin/sh", "-c", "exec sleep 30"};
  const TaskHandle live = launcher.Start(spec).value();
  spec.job_id = 1;
  spec.argv = {"/bin/sh", "-c", "exit 0"};
  const TaskHandle exited = launcher.Start(spec).value();
  std::optional<TaskExit> reaped;
  ASSERT_TRUE(WaitUntil([&] {
    reaped = launcher.Poll(exited).value();
    return reaped.has_value();
  }));
  TaskHandle reused = live;  // same pid, another process's start time
  reused.job_id = 2;
  reused.proc_start_ticks += 1;

  const auto now = std::chrono::system_clock::now();
  const std::vector<RecoveredTask> found =
      CheckRecordedTasks({{live, std::nullopt},
                          {exited, std::nullopt},
                          {exited, StopReason::kPreempt},
                          {reused, StopReason::kCancel}},
                         *RealProcessTable(), now);
  ASSERT_EQ(found.size(), 4u);
  EXPECT_TRUE(found[0].alive());
  ASSERT_FALSE(found[1].alive());
  EXPECT_EQ(found[1].exit->outcome, TaskOutcome::kUnknown);
  EXPECT_FALSE(found[1].exit->exit_code.has_value());
  EXPECT_EQ(found[1].exit->end_time, now);
  ASSERT_FALSE(found[2].alive());
  EXPECT_EQ(found[2].exit->outcome, TaskOutcome::kPreempted);
  ASSERT_FALSE(found[3].alive());
  EXPECT_EQ(found[3].exit->outcome, TaskOutcome::kCancelled);

  EXPECT_TRUE(
      launcher.Stop(live, StopReason::kCancel, std::chrono::milliseconds(1000))
          .ok());
}

TEST(CheckRecordedTasksTest, ExitStatusOfADeadTaskComesFromItsExitFile) {
  TestDir dir;
  // Tasks run as the test's own user (agent_testing::RootTasksAllowed).
  PosixLauncher launcher(agent_testing::RootTasksAllowed());
  TaskSpec spec = agent_testing::OwnedByRoot({});
  spec.log_path = dir.File("task.log");
  spec.exit_path = dir.File("exits/task.exit");
  spec.gpus = {2, 5};
  spec.argv = {"/bin/sh", "-c", "exit 4"};
  const TaskHandle handle = launcher.Start(spec).value();
  EXPECT_EQ(handle.gpus, (std::vector<int>{2, 5}));
  ASSERT_TRUE(
      WaitUntil([&] { return launcher.Poll(handle).value().has_value(); }));

  const std::vector<RecoveredTask> found = CheckRecordedTasks(
      {{handle, std::nullopt}, {handle, StopReason::kPreempt}},
      *RealProcessTable(), std::chrono::system_clock::now());
  ASSERT_EQ(found.size(), 2u);
  ASSERT_FALSE(found[0].alive());
  EXPECT_EQ(found[0].exit->outcome, TaskOutcome::kFailed);
  EXPECT_EQ(found[0].exit->exit_code, 4);
  EXPECT_LE(found[0].exit->end_time, std::chrono::system_clock::now());
  ASSERT_FALSE(found[1].alive());
  EXPECT_EQ(found[1].exit->outcome, TaskOutcome::kPreempted);  // stop wins
  EXPECT_EQ(found[1].exit->exit_code, 4);

  // A stop recorded after the task's recorded end did not end it: its own
  // exit wins (a task that finished must not run again). One recorded
  // before its end did.
  const auto end = found[0].exit->end_time;
  const std::vector<RecoveredTask> timed = CheckRecordedTasks(
      {{handle, StopReason::kPreempt, end + std::chrono::milliseconds(1)},
       {handle, StopReason::kPreempt, end - std::chrono::milliseconds(1)}},
      *RealProcessTable(), std::chrono::system_clock::now());
  ASSERT_EQ(timed.size(), 2u);
  EXPECT_EQ(timed[0].exit->outcome, TaskOutcome::kFailed);
  EXPECT_EQ(timed[0].exit->exit_code, 4);
  EXPECT_EQ(timed[1].exit->outcome, TaskOutcome::kPreempted);

  // The record keeps the exit file and GPUs across a restart.
  absl::StatusOr<std::vector<TaskRecordEntry>> parsed =
      ParseTaskRecord(SerializeTaskRecord({{handle, std::nullopt}}));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ((*parsed)[0].handle.exit_path, spec.exit_path);
  EXPECT_EQ((*parsed)[0].handle.gpus, (std::vector<int>{2, 5}));
}

}  // namespace
}  // namespace tiresias

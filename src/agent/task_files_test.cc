// Files a task can write that the agent reads (issue 21): the traffic
// profile ($TIRESIAS_PROFILE_OUT, handed to the task's account), the
// task's log, served to the master, and the rules they are read by
// (task_file.h). A task running as another user must
// not balloon the root agent with them, nor point them elsewhere.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/agent_daemon_internal.h"
#include "agent/agent_testing.h"
#include "agent/log_service.h"
#include "agent/task_file.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "profiler/profiler.h"

namespace tiresias {
namespace {

using agent_internal::ReadTaskProfile;
using agent_testing::MessageOf;
using agent_testing::TestDir;
using ::testing::HasSubstr;
using ::testing::Not;

// A profile of 200 MB (sparse) is far more than the profiler's limits let
// a task's processes write: refused, without reading it into memory.
TEST(TaskProfileFileTest, OversizedProfileIsRefusedUnread) {
  TestDir dir;
  const std::string path = dir.File("job-1-attempt-1-rank-0.profile");
  agent_testing::MakeSparseFile(path, 200 << 20);
  agent_testing::ResetPeakRss();
  const long before_kib = agent_testing::PeakRssKiB();
  absl::StatusOr<std::optional<v1::TrafficProfile>> profile =
      ReadTaskProfile(path);
  const long grown_kib = agent_testing::PeakRssKiB() - before_kib;
  ASSERT_FALSE(profile.ok()) << "an oversized profile was kept";
  EXPECT_EQ(profile.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(MessageOf(profile.status()), HasSubstr(path));
  EXPECT_THAT(MessageOf(profile.status()), HasSubstr("209715200 bytes"));
  EXPECT_LT(grown_kib, 4 * 1024) << "the read allocated the file";
}

// What the profiler's limits let a task write is kept: the cap is not so
// tight that a real profile is refused.
TEST(TaskProfileFileTest, AProfileWithinTheLimitsIsRead) {
  TestDir dir;
  const std::string path = dir.File("job-1-attempt-1-rank-0.profile");
  std::ofstream(path) << "P 1 0 5 train\nC 1 1 tcp 10.0.0.1:5 10.0.0.2:6\n"
                         "M 1 1 10 4000\nE 1 20 exit\n";
  absl::StatusOr<std::optional<v1::TrafficProfile>> profile =
      ReadTaskProfile(path);
  ASSERT_TRUE(profile.ok()) << profile.status();
  EXPECT_TRUE(profile->has_value());
  EXPECT_FALSE(ReadTaskProfile(dir.File("none")).value_or(std::nullopt));
  // The cap holds 8 processes at the default limits, each of them 50,000
  // messages, and is nowhere near the 200 MB above.
  const uint64_t cap =
      profiler::MaxProfileFileBytes(profiler::RecordingLimits{});
  EXPECT_GE(cap, 8u * 50000u * 40u);
  EXPECT_LT(cap, 64u << 20);
}

// A task of the agent's own account (an agent not running as root) could
// put a link where its profile goes: not followed.
TEST(TaskProfileFileTest, SymlinkInPlaceOfTheProfileIsRefused) {
  TestDir dir;
  std::ofstream(dir.File("elsewhere")) << "P 1 0 5 train\nE 1 9 exit\n";
  const std::string path = dir.File("job-1-attempt-1-rank-0.profile");
  ASSERT_EQ(symlink(dir.File("elsewhere").c_str(), path.c_str()), 0);
  absl::StatusOr<std::optional<v1::TrafficProfile>> profile =
      ReadTaskProfile(path);
  ASSERT_FALSE(profile.ok()) << "followed the link";
  EXPECT_THAT(MessageOf(profile.status()), HasSubstr("symbolic link"));
}

// The task owns its log file; the folder is the agent's. A link in place
// of the log (the folder of an agent that does not run as root is its
// tasks' too) is not followed: the master is never served another file.
TEST(TaskLogFileTest, SymlinkInPlaceOfTheLogIsNotServed) {
  TestDir dir;
  std::ofstream(dir.File("secret")) << "root's secret\n";
  const std::string logs = dir.File("logs");
  std::filesystem::create_directories(logs);
  const std::string path = TaskLogPath(logs, 7, 1, 0);
  ASSERT_EQ(symlink(dir.File("secret").c_str(), path.c_str()), 0);
  AgentLogService service(logs, /*require_master=*/false);
  v1::ReadTaskLogRequest request;
  request.mutable_task()->set_job_id(7);
  request.mutable_task()->set_attempt(1);
  request.mutable_task()->set_rank(0);
  v1::ReadTaskLogResponse response;
  const grpc::Status status = service.ReadTaskLog(nullptr, &request, &response);
  EXPECT_FALSE(status.ok()) << "served: " << response.data();
  EXPECT_THAT(response.data(), Not(HasSubstr("secret")));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr(path));
  EXPECT_THAT(status.error_message(), HasSubstr("symbolic link"));
}

// The rules of task_file.h, one by one.
TEST(ReadTaskFileTest, ReadsAFileWithinTheCapWhole) {
  TestDir dir;
  std::ofstream(dir.File("f")) << "hello";
  EXPECT_EQ(ReadTaskFile(dir.File("f"), 5).value(), "hello");
  EXPECT_EQ(ReadTaskFile(dir.File("missing"), 5).value(), std::nullopt);
  const std::string big(200 << 10, 'x');  // more than one read's chunk
  std::ofstream(dir.File("big")) << big;
  EXPECT_EQ(ReadTaskFile(dir.File("big"), big.size()).value(), big);
}

TEST(ReadTaskFileTest, RefusesAFileOverTheCapSayingItsSize) {
  TestDir dir;
  std::ofstream(dir.File("f")) << "hello!";
  absl::StatusOr<std::optional<std::string>> read =
      ReadTaskFile(dir.File("f"), 5);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(MessageOf(read.status()),
              HasSubstr(dir.File("f") + ": 6 bytes, more than the 5"));
}

// A /proc file says size 0: the cap still holds, by reading one byte past
// it at most.
TEST(ReadTaskFileTest, AFileWhoseSizeIsUnknownIsStillCapped) {
  absl::StatusOr<std::optional<std::string>> read =
      ReadTaskFile("/proc/self/environ", 1);
  if (read.ok()) GTEST_SKIP() << "this process's environment is empty";
  EXPECT_EQ(read.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(MessageOf(read.status()), HasSubstr("at least 2 bytes"));
  ASSERT_TRUE(ReadTaskFile("/proc/self/environ", 8 << 20).ok());
}

// A FIFO in place of a file would block a reader forever (no writer) and
// a device could be read without end: refused at once.
TEST(ReadTaskFileTest, RefusesWhatIsNotARegularFile) {
  TestDir dir;
  const std::string fifo = dir.File("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  absl::StatusOr<std::optional<std::string>> read = ReadTaskFile(fifo, 100);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(MessageOf(read.status()), HasSubstr("not a regular file"));
  read = ReadTaskFile("/dev/zero", 100);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_EQ(symlink("/dev/zero", dir.File("zero").c_str()), 0);
  read = ReadTaskFile(dir.File("zero"), 100);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(MessageOf(read.status()), HasSubstr("symbolic link"));
}

}  // namespace
}  // namespace tiresias

// Files a task can write that the agent reads (issue 21): the traffic
// profile ($TIRESIAS_PROFILE_OUT, handed to the task's account) and the
// task's log, served to the master. A task running as another user must
// not balloon the root agent with them, nor point them elsewhere.
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/agent_daemon_internal.h"
#include "agent/agent_testing.h"
#include "agent/log_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using agent_internal::ReadTaskProfile;
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
  std::optional<v1::TrafficProfile> profile = ReadTaskProfile(path);
  const long grown_kib = agent_testing::PeakRssKiB() - before_kib;
  EXPECT_FALSE(profile.has_value()) << "an oversized profile was kept";
  EXPECT_LT(grown_kib, 4 * 1024) << "the read allocated the file";
}

// A task of the agent's own account (an agent not running as root) could
// put a link where its profile goes: not followed.
TEST(TaskProfileFileTest, SymlinkInPlaceOfTheProfileIsRefused) {
  TestDir dir;
  std::ofstream(dir.File("elsewhere")) << "P 1 0 5 train\nE 1 9 exit\n";
  const std::string path = dir.File("job-1-attempt-1-rank-0.profile");
  ASSERT_EQ(symlink(dir.File("elsewhere").c_str(), path.c_str()), 0);
  EXPECT_FALSE(ReadTaskProfile(path).has_value()) << "followed the link";
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
  EXPECT_THAT(status.error_message(), HasSubstr(path));
}

}  // namespace
}  // namespace tiresias

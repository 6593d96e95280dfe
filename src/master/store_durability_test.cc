// Durability: a job whose CreateJob returned is found by the next store on
// the same file, however the writer ended (destroyed, _exit, SIGKILL).
// A killed process leaves the OS page cache intact, so these check the
// store's commit protocol; fsync on power loss is SQLite's
// (synchronous = FULL).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::TestDir;

JobRequest Request(int i) {
  JobRequest r;
  r.name = "job-" + std::to_string(i);
  r.num_gpus = 1 + i % 4;
  r.command = {"/usr/bin/python3", "train.py"};
  return r;
}

// How a forked writer ends right after its last CreateJob returned.
enum class Ending { kExit, kSigkill };

// Forks a child that opens `path`, creates `jobs` jobs and writes each id to
// a pipe as soon as CreateJob returns, then ends as `ending` says. Returns
// the ids the parent received; the child is reaped.
std::vector<JobId> WriteInChild(const std::string& path, int jobs,
                                Ending ending) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto store = SqliteStore::Open(path);
    if (!store.ok()) _exit(2);
    for (int i = 0; i < jobs; ++i) {
      auto id = (*store)->CreateJob(Request(i), Seconds{1000.0 + i});
      if (!id.ok()) _exit(3);
      JobId value = *id;
      if (write(fds[1], &value, sizeof value) != sizeof value) _exit(4);
    }
    // No destructor, no close: the store is abandoned mid-life.
    if (ending == Ending::kSigkill) raise(SIGKILL);
    _exit(0);
  }
  close(fds[1]);
  std::vector<JobId> ids;
  JobId value;
  while (read(fds[0], &value, sizeof value) == sizeof value) {
    ids.push_back(value);
  }
  close(fds[0]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  if (ending == Ending::kSigkill) {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  } else {
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  return ids;
}

void ExpectJobsPresent(const std::string& path, const std::vector<JobId>& ids) {
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto job = (*store)->GetJob(ids[i]);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->spec, Request(static_cast<int>(i)));
    EXPECT_EQ(job->submit_time, Seconds{1000.0 + i});
    ASSERT_EQ(job->events.size(), 1u);
    EXPECT_EQ(job->events[0].kind, "submitted");
  }
}

TEST(SqliteStoreDurabilityTest, DestroyedStoreLeavesTheJob) {
  TestDir dir;
  std::string path = dir.File("state.db");
  JobId id;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    id = *(*store)->CreateJob(Request(0), Seconds{1000});
  }
  ExpectJobsPresent(path, {id});
}

TEST(SqliteStoreDurabilityTest, WriterThatExitsWithoutClosing) {
  TestDir dir;
  std::string path = dir.File("state.db");
  std::vector<JobId> ids = WriteInChild(path, 1, Ending::kExit);
  ASSERT_EQ(ids, std::vector<JobId>{1});
  ExpectJobsPresent(path, ids);
}

TEST(SqliteStoreDurabilityTest, WriterKilledRightAfterCreateJob) {
  TestDir dir;
  std::string path = dir.File("state.db");
  std::vector<JobId> ids = WriteInChild(path, 20, Ending::kSigkill);
  ASSERT_EQ(ids.size(), 20u);
  ExpectJobsPresent(path, ids);
  // The WAL the killed writer left is recovered and new ids follow on.
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ(*(*store)->CreateJob(Request(0), Seconds{1}), 21);
}

TEST(SqliteStoreDurabilityTest, WriterKilledAtAnArbitraryMoment) {
  TestDir dir;
  std::string path = dir.File("state.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    auto store = SqliteStore::Open(path);
    if (!store.ok()) _exit(2);
    for (int i = 0;; ++i) {
      auto id = (*store)->CreateJob(Request(i), Seconds{1000.0 + i});
      if (!id.ok()) _exit(3);
      JobId value = *id;
      if (write(fds[1], &value, sizeof value) != sizeof value) _exit(4);
    }
  }
  close(fds[1]);
  // Kill it while it is writing, after it has acknowledged some jobs.
  std::vector<JobId> acknowledged;
  JobId value;
  while (acknowledged.size() < 30 &&
         read(fds[0], &value, sizeof value) == sizeof value) {
    acknowledged.push_back(value);
  }
  kill(pid, SIGKILL);
  while (read(fds[0], &value, sizeof value) == sizeof value) {
    acknowledged.push_back(value);
  }
  close(fds[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_GE(acknowledged.size(), 30u);

  // Every acknowledged job is there, with ids 1..n and nothing half-written.
  ExpectJobsPresent(path, acknowledged);
  auto store = SqliteStore::Open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_GE(jobs->size(), acknowledged.size());
  for (size_t i = 0; i < jobs->size(); ++i) {
    EXPECT_EQ((*jobs)[i].id, static_cast<JobId>(i + 1));
    EXPECT_EQ((*store)->Events((*jobs)[i].id)->size(), 1u);
  }
}

}  // namespace
}  // namespace tiresias

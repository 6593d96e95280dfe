// Where the master tells a task to checkpoint when its job names no
// checkpoint dir: a per-user folder keyed by the cluster's id, which a
// fresh state never reuses and a restart keeps (MasterState with a real
// SQLite file, StartTask as an agent receives it).
#include <sqlite3.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_RUNNING;

class CheckpointDirTest : public MasterFixture {
 protected:
  // The StartTask of the first job submitted as `user` with `spec`.
  v1::StartTask StartOf(JobRequest spec, const std::string& user = "alice") {
    spec.user = user;
    const JobId id = Submit(spec);
    const int64_t node = Register("n1", 4);
    Pass();
    std::vector<v1::StartTask> starts = Starts(Beat(node));
    for (const v1::StartTask& s : starts) {
      if (s.task().job_id() == id) return s;
    }
    ADD_FAILURE() << "job " << id << " was not started";
    return {};
  }
};

bool IsHex(const std::string& text) {
  return !text.empty() &&
         text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

TEST_F(CheckpointDirTest, DefaultIsUnderTheOwnersHomeKeyedByTheCluster) {
  Open();
  const std::string cluster = master_->cluster_id();
  EXPECT_EQ(cluster.size(), 32u) << cluster;  // 128 bits, hex
  EXPECT_TRUE(IsHex(cluster)) << cluster;
  const v1::StartTask start = StartOf(Spec(1));
  // "~/" is the account's home, which the agent knows (the master does
  // not); never the master's state dir, which other users cannot write.
  EXPECT_EQ(start.checkpoint_dir(),
            absl::StrCat("~/.tiresias/checkpoints/", cluster, "/job-",
                         start.task().job_id()));
  EXPECT_EQ(start.checkpoint_base(), "");
  EXPECT_FALSE(absl::StrContains(start.checkpoint_dir(), options_.state_dir));
}

TEST_F(CheckpointDirTest, UnderTheBaseInAFolderOfTheOwner) {
  options_.checkpoint_base = "/shared/ckpt";
  Open();
  const v1::StartTask start = StartOf(Spec(1), "bob");
  EXPECT_EQ(start.checkpoint_dir(),
            absl::StrCat("/shared/ckpt/bob/", master_->cluster_id(), "/job-",
                         start.task().job_id()));
  EXPECT_EQ(start.checkpoint_base(), "/shared/ckpt");
}

TEST_F(CheckpointDirTest, TheUsersOwnStaysAsGiven) {
  options_.checkpoint_base = "/shared/ckpt";
  Open();
  JobRequest spec = Spec(1);
  spec.checkpoint_dir = "/data/alice/run-7";
  const v1::StartTask start = StartOf(spec);
  EXPECT_EQ(start.checkpoint_dir(), "/data/alice/run-7");
  EXPECT_EQ(start.checkpoint_base(), "");
}

TEST_F(CheckpointDirTest, ClusterIdSurvivesARestartNotAFreshState) {
  Open();
  const std::string first = master_->cluster_id();
  const v1::StartTask before = StartOf(Spec(1));
  master_.reset();
  Open();  // the same state dir
  EXPECT_EQ(master_->cluster_id(), first);
  master_.reset();

  // A fresh state dir: job 1 again, and a folder of its own.
  TestDir other;
  options_.state_dir = other.File("fresh");
  sessions_.clear();
  Open();
  EXPECT_NE(master_->cluster_id(), first);
  const v1::StartTask after = StartOf(Spec(1));
  EXPECT_EQ(after.task().job_id(), before.task().job_id());
  EXPECT_NE(after.checkpoint_dir(), before.checkpoint_dir());
}

// A store of an older build has no cluster id: it gets one at its next
// open, kept from then on.
TEST_F(CheckpointDirTest, StoreWithoutAnIdGetsOneOnce) {
  const std::string path = dir_.File("old.db");
  std::string made;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    made = (*store)->cluster_id();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "DELETE FROM meta WHERE key = 'cluster_id'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  std::string given;
  {
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    given = (*store)->cluster_id();
  }
  EXPECT_TRUE(IsHex(given)) << given;
  EXPECT_NE(given, made);
  auto again = SqliteStore::Open(path);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->cluster_id(), given);
}

}  // namespace
}  // namespace tiresias::master_testing

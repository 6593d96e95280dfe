// FaultStore over a real SqliteStore: which writes fail, what a failed one
// leaves in the inner store, and that reads always pass through.
#include "master/fault_store.h"

#include <memory>

#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using Effect = StoreFaults::Effect;

class FaultStoreTest : public testing::Test {
 protected:
  FaultStoreTest() {
    auto sqlite = SqliteStore::Open(dir_.File("state.db"));
    EXPECT_TRUE(sqlite.ok()) << sqlite.status();
    store_ = std::make_unique<FaultStore>(*std::move(sqlite), faults_);
  }
  absl::StatusOr<JobId> Create() {
    JobRequest spec;
    spec.command = {"train"};
    return store_->CreateJob(spec, Seconds{1000});
  }
  int64_t StoredJobs() { return store_->inner().ListJobs()->size(); }

  master_testing::TestDir dir_;
  std::shared_ptr<StoreFaults> faults_ = std::make_shared<StoreFaults>();
  std::unique_ptr<FaultStore> store_;
};

// The 2nd write from now fails, once, not applied; reads are not counted.
TEST_F(FaultStoreTest, TheNthWriteFailsOnceAndIsNotApplied) {
  faults_->FailNth(2);
  ASSERT_TRUE(Create().ok());
  absl::StatusOr<JobId> failed = Create();
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(failed.status().message(),
            "injected fault: CreateJobs: database or disk is full");
  EXPECT_EQ(StoredJobs(), 1);
  ASSERT_TRUE(Create().ok());
  EXPECT_EQ(StoredJobs(), 2);
  EXPECT_EQ(faults_->writes(), 3);
  EXPECT_EQ(faults_->failures(), 1);
}

// A lost acknowledgement: the inner store has the job, the caller an error.
TEST_F(FaultStoreTest, AnAppliedThenFailedWriteIsInTheInnerStore) {
  faults_->FailNth(1, Effect::kAppliedThenFailed);
  EXPECT_FALSE(Create().ok());
  EXPECT_EQ(StoredJobs(), 1);
}

// Every write of one kind fails until Heal; other kinds pass.
TEST_F(FaultStoreTest, EveryWriteOfAKindFailsUntilHealed) {
  absl::StatusOr<JobId> id = Create();
  ASSERT_TRUE(id.ok());
  faults_->FailEvery(StoreWriteKind::kWrite);
  EXPECT_FALSE(store_->AppendEvent(*id, Seconds{1001}, "x", "").ok());
  EXPECT_FALSE(store_->AppendEvent(*id, Seconds{1002}, "y", "").ok());
  EXPECT_TRUE(store_->UpsertNode({0, "n1", "n1.local", 1}).ok());
  EXPECT_EQ(store_->Events(*id)->size(), 1u);  // "submitted" only
  faults_->Heal();
  EXPECT_TRUE(store_->AppendEvent(*id, Seconds{1003}, "z", "").ok());
  EXPECT_EQ(store_->Events(*id)->size(), 2u);
  EXPECT_EQ(faults_->failures(), 2);
  const std::vector<StoreWriteKind> expected = {
      StoreWriteKind::kCreateJobs, StoreWriteKind::kWrite,
      StoreWriteKind::kWrite, StoreWriteKind::kUpsertNode,
      StoreWriteKind::kWrite};
  EXPECT_EQ(faults_->history(), expected);
}

}  // namespace
}  // namespace tiresias

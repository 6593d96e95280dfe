// Store::QueryJobs: filters and pages evaluated by SQLite, in id order.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"
#include "master/test_dir.h"

namespace tiresias {
namespace {

using master_testing::TestDir;
using ::testing::ElementsAre;

class StoreQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = SqliteStore::Open(dir_.File("state.db"));
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // Creates jobs 1..n in one batch: job i named "n<i % 3>", user "u<i % 2>",
  // submitted at 1000 + i.
  void CreateJobs(int n, int command_bytes = 0) {
    for (int i = 1; i <= n; ++i) {
      JobRequest spec;
      spec.name = absl::StrCat("n", i % 3);
      spec.user = absl::StrCat("u", i % 2);
      spec.command = {"run"};
      if (command_bytes > 0)
        spec.command.push_back(std::string(command_bytes, 'x'));
      auto created = store_->CreateJobs({{spec, ""}}, Seconds{1000.0 + i});
      ASSERT_TRUE(created.ok()) << created.status();
    }
  }

  std::vector<JobId> Ids(const JobQuery& query, bool* more = nullptr) {
    auto page = store_->QueryJobs(query);
    EXPECT_TRUE(page.ok()) << page.status();
    std::vector<JobId> ids;
    if (!page.ok()) return ids;
    for (const JobRecord& job : page->jobs) {
      EXPECT_TRUE(job.events.empty());
      ids.push_back(job.id);
    }
    if (more) *more = page->more;
    return ids;
  }

  TestDir dir_;
  std::unique_ptr<SqliteStore> store_;
};

TEST_F(StoreQueryTest, PagesFollowEachOtherInIdOrder) {
  CreateJobs(10);
  bool more = false;
  EXPECT_THAT(Ids({.limit = 4}, &more), ElementsAre(1, 2, 3, 4));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.after_id = 4, .limit = 4}, &more), ElementsAre(5, 6, 7, 8));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.after_id = 8, .limit = 4}, &more), ElementsAre(9, 10));
  EXPECT_FALSE(more);
  // Exactly the rest: no page is promised after it.
  EXPECT_THAT(Ids({.after_id = 6, .limit = 4}, &more),
              ElementsAre(7, 8, 9, 10));
  EXPECT_FALSE(more);
  EXPECT_THAT(Ids({.after_id = 10}, &more), ElementsAre());
  EXPECT_FALSE(more);
}

TEST_F(StoreQueryTest, FiltersCombine) {
  CreateJobs(9);
  EXPECT_THAT(Ids({.user = "u1"}), ElementsAre(1, 3, 5, 7, 9));
  EXPECT_THAT(Ids({.name = "n0"}), ElementsAre(3, 6, 9));
  EXPECT_THAT(Ids({.user = "u0", .name = "n0"}), ElementsAre(6));
  EXPECT_THAT(Ids({.submitted_since = Seconds{1007}}), ElementsAre(7, 8, 9));
  EXPECT_THAT(Ids({.user = "nobody"}), ElementsAre());
  JobRecord job = *store_->GetJob(4);
  job.state = JobRecordState::kCancelled;
  ASSERT_TRUE(store_->UpdateJob(job).ok());
  EXPECT_THAT(Ids({.states = {JobRecordState::kCancelled}}), ElementsAre(4));
  // Ended windows: job 4 ended at 2000, job 6 at 2010; the others have
  // not ended and match no window.
  job.end_time = Seconds{2000};
  ASSERT_TRUE(store_->UpdateJob(job).ok());
  JobRecord six = *store_->GetJob(6);
  six.state = JobRecordState::kFinished;
  six.end_time = Seconds{2010};
  ASSERT_TRUE(store_->UpdateJob(six).ok());
  EXPECT_THAT(Ids({.ended_since = Seconds{2000}}), ElementsAre(4, 6));
  EXPECT_THAT(Ids({.ended_since = Seconds{2000.5}}), ElementsAre(6));
  EXPECT_THAT(Ids({.ended_before = Seconds{2010}}), ElementsAre(4));
  EXPECT_THAT(Ids({.ended_since = Seconds{2001}, .ended_before = Seconds{2010}}),
              ElementsAre());
  EXPECT_THAT(Ids({.user = "u0", .ended_before = Seconds{3000}}),
              ElementsAre(4, 6));
  six.state = JobRecordState::kPending;
  six.end_time.reset();
  ASSERT_TRUE(store_->UpdateJob(six).ok());
  EXPECT_THAT(
      Ids({.states = {JobRecordState::kCancelled, JobRecordState::kPending},
           .after_id = 2,
           .user = "u0"}),
      ElementsAre(4, 6, 8));
  bool more = false;
  EXPECT_THAT(Ids({.after_id = 1, .user = "u1", .limit = 2}, &more),
              ElementsAre(3, 5));
  EXPECT_TRUE(more);
}

TEST_F(StoreQueryTest, APageStopsBeforeTheByteBudgetButHoldsAtLeastOneJob) {
  CreateJobs(10, 100 * 1024);
  bool more = false;
  // Three 100 KiB jobs fit in 350 KiB, a fourth would not.
  EXPECT_THAT(Ids({.max_bytes = 350 * 1024}, &more), ElementsAre(1, 2, 3));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.after_id = 3, .max_bytes = 1}, &more), ElementsAre(4));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.after_id = 8, .max_bytes = 350 * 1024}, &more),
              ElementsAre(9, 10));
  EXPECT_FALSE(more);
}

}  // namespace
}  // namespace tiresias

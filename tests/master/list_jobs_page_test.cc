// MasterState::ListJobsPage: a starting job (stored pending, shown starting)
// is listed under STARTING and not under PENDING, page after page, as the
// unpaged ListJobs always did.
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::ElementsAre;

class ListJobsPageTest : public MasterFixture {
 protected:
  std::vector<JobId> Ids(const MasterState::JobListQuery& query,
                         bool* more = nullptr) {
    auto page = master_->ListJobsPage(query);
    EXPECT_TRUE(page.ok()) << page.status();
    std::vector<JobId> ids;
    if (!page.ok()) return ids;
    for (const JobRecord& job : page->jobs) {
      EXPECT_EQ(job.state, query.state.value_or(job.state));
      ids.push_back(job.id);
    }
    if (more) *more = page->more;
    return ids;
  }
};

TEST_F(ListJobsPageTest, StartingJobsArePagedApartFromPendingOnes) {
  Open();
  Register("n1", 2);
  for (int i = 0; i < 6; ++i) {
    JobRequest spec = Spec(1);
    spec.user = i % 2 == 0 ? "even" : "odd";
    Submit(spec);
  }
  Pass();  // jobs 1 and 2 get the GPUs; no task reported running yet
  ASSERT_EQ(Get(1).state, JobRecordState::kStarting);
  ASSERT_EQ(Get(2).state, JobRecordState::kStarting);

  bool more = false;
  const auto pending = JobRecordState::kPending;
  const auto starting = JobRecordState::kStarting;
  // The page is filled past the starting jobs the store holds as pending.
  EXPECT_THAT(Ids({.state = pending, .limit = 2}, &more), ElementsAre(3, 4));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.state = pending, .after_id = 4, .limit = 2}, &more),
              ElementsAre(5, 6));
  EXPECT_FALSE(more);
  EXPECT_THAT(Ids({.state = starting, .limit = 1}, &more), ElementsAre(1));
  EXPECT_TRUE(more);
  EXPECT_THAT(Ids({.state = starting, .after_id = 1, .limit = 1}, &more),
              ElementsAre(2));
  EXPECT_FALSE(more);
  EXPECT_THAT(Ids({.state = starting, .user = "odd"}), ElementsAre(2));
  EXPECT_THAT(Ids({.state = pending, .user = "odd"}), ElementsAre(4, 6));
  // Without a state filter every job, each as shown.
  auto all = master_->ListJobsPage({});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->jobs.size(), 6u);
  EXPECT_EQ(all->jobs[0].state, starting);
  EXPECT_EQ(all->jobs[2].state, pending);
}

}  // namespace
}  // namespace tiresias::master_testing

// Idempotent submissions at the MasterState level: a retry with the same
// request id finds the job the first attempt created, also after a master
// restart; the same id with another spec is refused naming that job.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;

class SubmitIdempotencyTest : public MasterFixture {
 protected:
  MasterState::SubmitResult MustSubmit(const JobRequest& spec,
                                       const std::string& request_id) {
    auto result = master_->SubmitJob(spec, request_id);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : MasterState::SubmitResult{};
  }
};

TEST_F(SubmitIdempotencyTest, ARetryGetsTheSameJobAndTheStoreHoldsOne) {
  Open();
  const MasterState::SubmitResult first = MustSubmit(Spec(2), "req-1");
  EXPECT_EQ(first.id, 1);
  EXPECT_FALSE(first.existing);
  const MasterState::SubmitResult retry = MustSubmit(Spec(2), "req-1");
  EXPECT_EQ(retry.id, 1);
  EXPECT_TRUE(retry.existing);
  EXPECT_EQ(master_->ListJobs()->size(), 1u);
  EXPECT_EQ(Get(1).events.size(), 1u);  // one "submitted"
  // Another request id, or none, is another job.
  EXPECT_EQ(MustSubmit(Spec(2), "req-2").id, 2);
  EXPECT_EQ(MustSubmit(Spec(2), "").id, 3);
  EXPECT_EQ(MustSubmit(Spec(2), "").id, 4);
  EXPECT_EQ(master_->SnapshotMetrics()->jobs_submitted, 4);
}

TEST_F(SubmitIdempotencyTest, ARetryAfterAMasterRestartGetsTheSameJob) {
  Open();
  EXPECT_EQ(MustSubmit(Spec(1), "before-restart").id, 1);
  master_.reset();
  Open();
  const MasterState::SubmitResult retry = MustSubmit(Spec(1), "before-restart");
  EXPECT_EQ(retry.id, 1);
  EXPECT_TRUE(retry.existing);
  EXPECT_EQ(master_->ListJobs()->size(), 1u);
}

TEST_F(SubmitIdempotencyTest, TheSameRequestIdWithAnotherSpecIsAlreadyExists) {
  Open();
  EXPECT_EQ(MustSubmit(Spec(1), "req"), (MasterState::SubmitResult{1, false}));
  JobRequest other = Spec(1);
  other.name = "renamed";
  auto refused = master_->SubmitJob(other, "req");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("request_id \"req\": already used for job 1"));
  EXPECT_EQ(master_->ListJobs()->size(), 1u);
}

TEST_F(SubmitIdempotencyTest,
       AMalformedRequestIdIsRefusedBeforeAnythingIsStored) {
  Open();
  auto refused = master_->SubmitJob(Spec(1), std::string(129, 'x'));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("request_id: expected at most 128 bytes"));
  refused = master_->SubmitJob(Spec(1), "tab\there");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(master_->ListJobs()->empty());
}

}  // namespace
}  // namespace tiresias::master_testing

// Request ids belong to their user (issue 21, finding 8a), over real gRPC
// with TLS and tokens and real SQLite: a request id another user used first
// neither blocks a submission nor answers it with the other user's job; each
// user's retry finds their own job, for SubmitJob, SubmitJobs and job
// arrays. An admin submitting for a user (spec.user) uses that user's ids.
#include <string>
#include <vector>

#include "secure_master_test_util.h"

namespace tiresias::master_testing {
namespace {

class RequestIdScopeTest : public SecureMasterTest {
 protected:
  static v1::JobSpec Spec(const std::string& user = "") {
    v1::JobSpec spec;
    spec.set_gpus(1);
    spec.add_command("true");
    spec.set_user(user);
    return spec;
  }
  // SubmitJob by `token`; the response, or a failed test.
  v1::SubmitJobResponse Submit(const std::string& token,
                               const std::string& request_id,
                               const v1::JobSpec& spec) {
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    req.set_request_id(request_id);
    v1::SubmitJobResponse resp;
    grpc::Status s = Client()->SubmitJob(Ctx(token).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return resp;
  }
  std::string OwnerOf(JobId id) { return Get(id).spec.user; }
};

// "Mallory squats alice's request id": alice's submission then failed
// (ALREADY_EXISTS naming mallory's job). Now alice gets her own new job.
TEST_F(RequestIdScopeTest, AnotherUsersRequestIdIsNotSquatted) {
  const v1::SubmitJobResponse mallorys = Submit(mallory_, "nightly-1", Spec());
  ASSERT_GT(mallorys.job_id(), 0);
  EXPECT_FALSE(mallorys.existing());

  const v1::SubmitJobResponse alices = Submit(alice_, "nightly-1", Spec());
  ASSERT_GT(alices.job_id(), 0);
  EXPECT_NE(alices.job_id(), mallorys.job_id());
  EXPECT_FALSE(alices.existing());
  EXPECT_EQ(OwnerOf(alices.job_id()), "alice");

  // Each retry finds its own user's job.
  const v1::SubmitJobResponse alice_again = Submit(alice_, "nightly-1", Spec());
  EXPECT_EQ(alice_again.job_id(), alices.job_id());
  EXPECT_TRUE(alice_again.existing());
  const v1::SubmitJobResponse mallory_again =
      Submit(mallory_, "nightly-1", Spec());
  EXPECT_EQ(mallory_again.job_id(), mallorys.job_id());
  EXPECT_TRUE(mallory_again.existing());
}

// Mallory cannot learn alice's job either: with alice's id first, mallory's
// submission is a new job of mallory's, not an answer naming alice's.
TEST_F(RequestIdScopeTest, AUsersRequestIdNeverAnswersWithTheirJob) {
  const v1::SubmitJobResponse alices = Submit(alice_, "r-7", Spec());
  const v1::SubmitJobResponse mallorys = Submit(mallory_, "r-7", Spec());
  EXPECT_NE(mallorys.job_id(), alices.job_id());
  EXPECT_FALSE(mallorys.existing());
  EXPECT_EQ(OwnerOf(mallorys.job_id()), "mallory");
}

TEST_F(RequestIdScopeTest, SubmitJobsIdsAreScopedToTheirUser) {
  auto submit_jobs = [&](const std::string& token) {
    v1::SubmitJobsRequest req;
    *req.add_jobs() = Spec();
    *req.add_jobs() = Spec();
    req.set_request_id("batch");
    v1::SubmitJobsResponse resp;
    grpc::Status s = Client()->SubmitJobs(Ctx(token).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_code() << ": " << s.error_message();
    return resp;
  };
  const v1::SubmitJobsResponse mallorys = submit_jobs(mallory_);
  const v1::SubmitJobsResponse alices = submit_jobs(alice_);
  ASSERT_EQ(mallorys.job_ids_size(), 2);
  ASSERT_EQ(alices.job_ids_size(), 2);
  EXPECT_FALSE(alices.existing());
  for (int i = 0; i < 2; ++i) {
    EXPECT_NE(alices.job_ids(i), mallorys.job_ids(i));
    EXPECT_EQ(OwnerOf(alices.job_ids(i)), "alice");
  }
  const v1::SubmitJobsResponse alice_again = submit_jobs(alice_);
  EXPECT_TRUE(alice_again.existing());
  EXPECT_EQ(alice_again.job_ids(0), alices.job_ids(0));
  const v1::SubmitJobsResponse mallory_again = submit_jobs(mallory_);
  EXPECT_TRUE(mallory_again.existing());
  EXPECT_EQ(mallory_again.job_ids(1), mallorys.job_ids(1));
}

TEST_F(RequestIdScopeTest, ArrayIdsAreScopedToTheirUser) {
  v1::JobSpec spec = Spec();
  spec.mutable_array()->set_indices("0-2");
  const v1::SubmitJobResponse mallorys = Submit(mallory_, "sweep", spec);
  const v1::SubmitJobResponse alices = Submit(alice_, "sweep", spec);
  ASSERT_EQ(mallorys.array_job_ids_size(), 3);
  ASSERT_EQ(alices.array_job_ids_size(), 3);
  EXPECT_FALSE(alices.existing());
  EXPECT_NE(alices.job_id(), mallorys.job_id());
  EXPECT_EQ(OwnerOf(alices.array_job_ids(2)), "alice");
  const v1::SubmitJobResponse alice_again = Submit(alice_, "sweep", spec);
  EXPECT_TRUE(alice_again.existing());
  EXPECT_EQ(alice_again.job_id(), alices.job_id());
  const v1::SubmitJobResponse mallory_again = Submit(mallory_, "sweep", spec);
  EXPECT_TRUE(mallory_again.existing());
  EXPECT_EQ(mallory_again.job_id(), mallorys.job_id());
}

// An admin submitting for alice (spec.user) uses alice's request ids: the
// job is alice's, so alice's retry of the same submission finds it, and
// mallory's same id is mallory's own. The admin's own ids (no spec.user)
// are the admin's.
TEST_F(RequestIdScopeTest, AnAdminSubmittingForAUserUsesThatUsersIds) {
  const v1::SubmitJobResponse for_alice =
      Submit(admin_, "on-behalf", Spec("alice"));
  EXPECT_EQ(OwnerOf(for_alice.job_id()), "alice");
  const v1::SubmitJobResponse alices = Submit(alice_, "on-behalf", Spec());
  EXPECT_EQ(alices.job_id(), for_alice.job_id());
  EXPECT_TRUE(alices.existing());
  const v1::SubmitJobResponse mallorys = Submit(mallory_, "on-behalf", Spec());
  EXPECT_NE(mallorys.job_id(), for_alice.job_id());
  EXPECT_FALSE(mallorys.existing());
  const v1::SubmitJobResponse admins = Submit(admin_, "on-behalf", Spec());
  EXPECT_NE(admins.job_id(), for_alice.job_id());
  EXPECT_FALSE(admins.existing());
  EXPECT_EQ(OwnerOf(admins.job_id()), "ops");
}

}  // namespace
}  // namespace tiresias::master_testing

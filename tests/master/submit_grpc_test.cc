// SubmitJob over real gRPC: what a client outside the master sees of the
// validation at the door, idempotent retries and group commit.
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "front_door_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class SubmitGrpcTest : public FrontDoorTest {};

// A name that is not UTF-8 reaches the master (JobSpec's text fields are
// bytes on the wire) and gets a message, not INTERNAL with none.
TEST_F(SubmitGrpcTest, NonUtf8NameIsInvalidArgumentNamingSpecName) {
  Start();
  v1::SubmitJobResponse resp;
  grpc::Status status = Submit(Request("bad\xff\xfename"), &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              StartsWith("spec.name: expected valid UTF-8"));
  v1::ListJobsResponse list;
  ASSERT_TRUE(
      stub_->ListJobs(Context().get(), v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 0);
}

// The agent cannot set such a variable; refused at once, not after three
// failed starts with "exit code 127".
TEST_F(SubmitGrpcTest, EnvKeyWithEqualsIsInvalidArgumentNamingTheKey) {
  Start();
  v1::SubmitJobRequest req = Request("job");
  ::tiresias::master_testing::AddEnv(&req, "A=B", "c");
  v1::SubmitJobResponse resp;
  grpc::Status status = Submit(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("spec.env key \"A=B\""));
  EXPECT_THAT(status.error_message(), HasSubstr("[A-Za-z_][A-Za-z0-9_]*"));
}

TEST_F(SubmitGrpcTest, ARetryWithTheSameRequestIdGetsTheSameJobAcrossRestarts) {
  Start();
  v1::SubmitJobRequest req = Request("train");
  req.set_request_id("0123456789abcdef0123456789abcdef");
  v1::SubmitJobResponse first;
  ASSERT_TRUE(Submit(req, &first).ok());
  EXPECT_EQ(first.job_id(), 1);
  EXPECT_FALSE(first.existing());
  v1::SubmitJobResponse retry;
  ASSERT_TRUE(Submit(req, &retry).ok());
  EXPECT_EQ(retry.job_id(), 1);
  EXPECT_TRUE(retry.existing());

  // The master restarts between the attempt and the retry.
  Stop();
  Start();
  v1::SubmitJobResponse after_restart;
  ASSERT_TRUE(Submit(req, &after_restart).ok());
  EXPECT_EQ(after_restart.job_id(), 1);
  EXPECT_TRUE(after_restart.existing());
  v1::ListJobsResponse list;
  ASSERT_TRUE(
      stub_->ListJobs(Context().get(), v1::ListJobsRequest(), &list).ok());
  EXPECT_EQ(list.jobs_size(), 1);

  // The same id for another spec is refused, naming the job.
  req.mutable_spec()->set_gpus(2);
  v1::SubmitJobResponse refused;
  grpc::Status status = Submit(req, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(status.error_message(), HasSubstr("already used for job 1"));
}

// N clients, each on its own channel, submit back to back: every one gets
// distinct ids, every job is in the store after reopening it, and fewer
// transactions than jobs were written.
TEST_F(SubmitGrpcTest,
       ConcurrentClientsGetDistinctDurableIdsInSharedTransactions) {
  Start();
  constexpr int kClients = 8, kEach = 25;
  std::vector<std::vector<int64_t>> ids(kClients);
  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      std::unique_ptr<v1::Tiresias::Stub> stub = NewStub();
      for (int i = 0; i < kEach; ++i) {
        v1::SubmitJobResponse resp;
        grpc::Status status = stub->SubmitJob(
            Context().get(), Request(absl::StrCat("c", c, "-", i)), &resp);
        if (status.ok()) ids[c].push_back(resp.job_id());
      }
    });
  }
  for (std::thread& client : clients) client.join();
  std::set<int64_t> all;
  for (const auto& list : ids) {
    EXPECT_EQ(list.size(), static_cast<size_t>(kEach));
    all.insert(list.begin(), list.end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kClients * kEach));
  const MasterState::SubmitStats stats = state_->submit_stats();
  EXPECT_EQ(stats.jobs, kClients * kEach);
  EXPECT_LT(stats.batches, stats.jobs);
  Stop();

  auto store = SqliteStore::Open(options_.state_dir + "/state.db");
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->ListJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  std::set<int64_t> stored;
  for (const JobRecord& job : *jobs) stored.insert(job.id);
  EXPECT_EQ(stored, all);
}

}  // namespace
}  // namespace tiresias::master_testing

namespace tiresias::master_testing {
namespace {

// UpdateJobs over real gRPC: a malformed request is INVALID_ARGUMENT with
// the field named, and the master goes on serving; a good one acts.
TEST_F(SubmitGrpcTest, UpdateJobsRefusesMalformedRequestsAndKeepsServing) {
  Start();
  v1::SubmitJobResponse submitted;
  v1::SubmitJobRequest held = Request("held");
  held.mutable_spec()->set_hold(true);
  ASSERT_TRUE(Submit(held, &submitted).ok());
  auto call = [&](const v1::UpdateJobsRequest& req,
                  v1::UpdateJobsResponse* resp) {
    return stub_->UpdateJobs(Context().get(), req, resp);
  };
  struct Case {
    std::string what;
    v1::UpdateJobsRequest req;
    std::string says;
  };
  std::vector<Case> cases(5);
  cases[0] = {"no action", {}, "action:"};
  cases[0].req.add_job_ids(1);
  cases[1] = {"neither ids nor filter", {}, "got neither"};
  cases[1].req.set_action(v1::JOB_ACTION_CANCEL);
  cases[2] = {"both", {}, "not both"};
  cases[2].req.set_action(v1::JOB_ACTION_CANCEL);
  cases[2].req.add_job_ids(1);
  cases[2].req.set_name("held");
  cases[3] = {"negative id", {}, "job_ids: expected job ids >= 1"};
  cases[3].req.set_action(v1::JOB_ACTION_HOLD);
  cases[3].req.add_job_ids(-4);
  cases[4] = {"unknown state", {}, "state:"};
  cases[4].req.set_action(v1::JOB_ACTION_CANCEL);
  cases[4].req.set_state(static_cast<v1::JobState>(99));
  for (const Case& c : cases) {
    v1::UpdateJobsResponse resp;
    grpc::Status status = call(c.req, &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << c.what;
    EXPECT_THAT(status.error_message(), HasSubstr(c.says)) << c.what;
  }
  v1::UpdateJobsRequest release;
  release.set_action(v1::JOB_ACTION_RELEASE);
  release.add_job_ids(submitted.job_id());
  release.add_job_ids(77);
  v1::UpdateJobsResponse resp;
  ASSERT_TRUE(call(release, &resp).ok());
  ASSERT_EQ(resp.results_size(), 2);
  EXPECT_EQ(resp.results(0).code(), 0);
  EXPECT_FALSE(resp.results(0).held());
  EXPECT_EQ(resp.results(0).state(), v1::JOB_STATE_PENDING);
  EXPECT_EQ(resp.results(1).code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
}

}  // namespace
}  // namespace tiresias::master_testing

// SubmitJobs over real gRPC on loopback with a real SQLite file: all or
// nothing, consecutive ids in one transaction, the job at fault named by its
// index, idempotent retries, and requests past the limits refused without
// harming the master.
#include <algorithm>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "front_door_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/job_limits.h"
#include "master/sqlite_store.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class SubmitBulkGrpcTest : public FrontDoorTest {
 protected:
  static v1::SubmitJobsRequest Jobs(int n, const std::string& prefix = "j") {
    v1::SubmitJobsRequest req;
    for (int i = 0; i < n; ++i) {
      *req.add_jobs() = Request(absl::StrCat(prefix, i)).spec();
    }
    return req;
  }
  grpc::Status SubmitAll(const v1::SubmitJobsRequest& req,
                         v1::SubmitJobsResponse* resp) {
    return stub_->SubmitJobs(Context().get(), req, resp);
  }
  // Every job the master lists, in id order.
  std::vector<v1::Job> Listed() {
    v1::ListJobsRequest req;
    req.set_page_size(5000);
    v1::ListJobsResponse list;
    EXPECT_TRUE(stub_->ListJobs(Context().get(), req, &list).ok());
    return {list.jobs().begin(), list.jobs().end()};
  }
  // The jobs in the state file, read back after the master stopped.
  std::vector<JobRecord> Stored() {
    Stop();
    auto store = SqliteStore::Open(options_.state_dir + "/state.db");
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return {};
    auto jobs = (*store)->ListJobs();
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<JobRecord>{};
  }
};

TEST_F(SubmitBulkGrpcTest, AGoodRequestIsOneTransactionWithIdsInOrder) {
  Start();
  v1::SubmitJobResponse single;
  ASSERT_TRUE(Submit(Request("before"), &single).ok());  // job 1
  const MasterState::SubmitStats before = state_->submit_stats();
  v1::SubmitJobsResponse resp;
  grpc::Status status = SubmitAll(Jobs(500), &resp);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(resp.job_ids_size(), 500);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(resp.job_ids(i), i + 2);
  EXPECT_FALSE(resp.existing());
  const MasterState::SubmitStats after = state_->submit_stats();
  EXPECT_EQ(after.batches, before.batches + 1);
  EXPECT_EQ(after.jobs, before.jobs + 500);
  // Pending in the master's memory, on disk in the request's order.
  std::vector<v1::Job> listed = Listed();
  ASSERT_EQ(listed.size(), 501u);
  EXPECT_EQ(listed[500].state(), v1::JOB_STATE_PENDING);
  std::vector<JobRecord> stored = Stored();
  ASSERT_EQ(stored.size(), 501u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(stored[i + 1].id, i + 2);
    EXPECT_EQ(stored[i + 1].spec.name, absl::StrCat("j", i));
  }
}

TEST_F(SubmitBulkGrpcTest, ABadJobInTheMiddleCreatesNoJobAndIsNamedByIndex) {
  Start();
  v1::SubmitJobsRequest req = Jobs(5);
  req.mutable_jobs(3)->set_gpus(0);  // and no CPUs
  v1::SubmitJobsResponse resp;
  grpc::Status status = SubmitAll(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "jobs[3].cpus: a job without GPUs (gpus 0) needs 1 to 1024 CPUs, "
            "got 0");
  req.mutable_jobs(3)->set_gpus(1);
  req.mutable_jobs(4)->set_name("bad\xff");
  status = SubmitAll(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              StartsWith("jobs[4].name: expected valid UTF-8"));
  EXPECT_TRUE(Listed().empty());
  // The master still serves, and the next id is 1: nothing was used.
  v1::SubmitJobResponse single;
  ASSERT_TRUE(Submit(Request("after"), &single).ok());
  EXPECT_EQ(single.job_id(), 1);
  EXPECT_EQ(Stored().size(), 1u);
}

TEST_F(SubmitBulkGrpcTest, AnEmptyRequestIsRefused) {
  Start();
  v1::SubmitJobsResponse resp;
  grpc::Status status = SubmitAll(v1::SubmitJobsRequest(), &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "jobs: expected at least one job");
}

TEST_F(SubmitBulkGrpcTest, ARetryGetsTheSameJobsAlsoAfterARestart) {
  Start();
  v1::SubmitJobsRequest req = Jobs(3);
  req.set_request_id("0123456789abcdef0123456789abcdef");
  v1::SubmitJobsResponse first, retry;
  ASSERT_TRUE(SubmitAll(req, &first).ok());
  EXPECT_FALSE(first.existing());
  Stop();
  Start();
  ASSERT_TRUE(SubmitAll(req, &retry).ok());
  EXPECT_TRUE(retry.existing());
  EXPECT_EQ(std::vector<int64_t>(retry.job_ids().begin(),
                                 retry.job_ids().end()),
            (std::vector<int64_t>{1, 2, 3}));
  // The same id with other specs: refused, and nothing created.
  req.mutable_jobs(0)->set_gpus(2);
  v1::SubmitJobsResponse refused;
  grpc::Status status = SubmitAll(req, &refused);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS);
  EXPECT_THAT(status.error_message(),
              HasSubstr("jobs[0]: request_id "
                        "\"0123456789abcdef0123456789abcdef#0\": already "
                        "used for job 1"));
  EXPECT_EQ(Listed().size(), 3u);
}

// Past the count: refused with a message; past the byte limit: refused by
// gRPC before the master reads it. Either way the master serves on.
TEST_F(SubmitBulkGrpcTest, RequestsPastTheLimitsAreRefusedAndTheMasterServesOn) {
  Start();
  v1::SubmitJobsRequest too_many =
      Jobs(static_cast<int>(job_limits::kMaxJobsPerSubmission) + 1);
  v1::SubmitJobsResponse resp;
  grpc::Status status = SubmitAll(too_many, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            absl::StrCat("jobs: ", job_limits::kMaxJobsPerSubmission + 1,
                         " jobs; at most ", job_limits::kMaxJobsPerSubmission,
                         " in one request"));

  // 600 jobs of 120 KiB commands: about 70 MiB.
  v1::SubmitJobsRequest too_big;
  const std::string arg(120 * 1024, 'x');
  for (int i = 0; i < 600; ++i) {
    v1::JobSpec* spec = too_big.add_jobs();
    spec->set_gpus(1);
    spec->add_command("/bin/echo");
    spec->add_command(arg);
  }
  ASSERT_GT(too_big.ByteSizeLong(), job_limits::kMaxRequestBytes);
  status = SubmitAll(too_big, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  EXPECT_TRUE(Listed().empty());
  ASSERT_TRUE(SubmitAll(Jobs(2), &resp).ok());
  EXPECT_EQ(resp.job_ids(1), 2);
}

// Single submissions keep flowing while a large request is written; the
// large one's ids stay consecutive, and no id is given twice.
TEST_F(SubmitBulkGrpcTest, SingleSubmissionsInterleaveWithALargeRequest) {
  Start();
  std::vector<int64_t> singles;
  std::thread client([&] {
    std::unique_ptr<v1::Tiresias::Stub> stub = NewStub();
    for (int i = 0; i < 40; ++i) {
      v1::SubmitJobResponse one;
      if (stub->SubmitJob(Context().get(), Request(absl::StrCat("s", i)), &one)
              .ok()) {
        singles.push_back(one.job_id());
      }
    }
  });
  v1::SubmitJobsResponse bulk;
  grpc::Status status = SubmitAll(Jobs(10000), &bulk);
  client.join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(bulk.job_ids_size(), 10000);
  for (int i = 1; i < bulk.job_ids_size(); ++i) {
    ASSERT_EQ(bulk.job_ids(i), bulk.job_ids(0) + i);
  }
  EXPECT_EQ(singles.size(), 40u);
  std::set<int64_t> all(bulk.job_ids().begin(), bulk.job_ids().end());
  all.insert(singles.begin(), singles.end());
  EXPECT_EQ(all.size(), 10040u);
  EXPECT_EQ(Stored().size(), 10040u);
}

}  // namespace
}  // namespace tiresias::master_testing

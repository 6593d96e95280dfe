// ListJobs over real gRPC: pages in id order, none twice, however many jobs
// and however big; filters evaluated by the master; bad paging arguments
// refused naming the field.
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "front_door_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/sqlite_store.h"

namespace tiresias::master_testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class ListJobsGrpcTest : public FrontDoorTest {
 protected:
  // Creates `count` jobs straight in the state dir's store, in batches of
  // 1,000 (one transaction each), before the master opens it. Job i (from
  // 1) is named Name(i), owned by "u<i % 3>", submitted at 1000 + i.
  void CreateStoredJobs(int count, size_t command_bytes = 0) {
    std::filesystem::create_directories(options_.state_dir);
    auto store = SqliteStore::Open(options_.state_dir + "/state.db");
    ASSERT_TRUE(store.ok()) << store.status();
    for (int first = 1; first <= count; first += 1000) {
      std::vector<NewJob> batch;
      for (int i = first; i < first + 1000 && i <= count; ++i) {
        NewJob job;
        job.spec.name = Name(i);
        job.spec.user = absl::StrCat("u", i % 3);
        job.spec.command = {"/bin/true"};
        if (command_bytes > 0) {
          job.spec.command.push_back(std::string(command_bytes, 'x'));
        }
        batch.push_back(std::move(job));
      }
      // One submit time per batch: job i of a batch of 1,000 at 1000 + its
      // batch's first id.
      auto created = (*store)->CreateJobs(batch, Seconds{1000.0 + first});
      ASSERT_TRUE(created.ok()) << created.status();
    }
  }
  // 200 bytes: 20,000 of them pass gRPC's 4 MiB in one message.
  static std::string Name(int i) {
    std::string name = absl::StrCat("job-", i, "-");
    name.resize(200, 'n');
    return name;
  }

  // Every job the requests' filters select, page by page; the number of
  // pages in *pages.
  std::vector<int64_t> ListAll(v1::ListJobsRequest req, int* pages = nullptr) {
    std::vector<int64_t> ids;
    int count = 0;
    while (true) {
      v1::ListJobsResponse resp;
      grpc::Status status = stub_->ListJobs(Context().get(), req, &resp);
      EXPECT_TRUE(status.ok()) << status.error_message();
      if (!status.ok()) break;
      ++count;
      for (const v1::Job& job : resp.jobs()) ids.push_back(job.id());
      if (resp.next_page_token().empty()) break;
      req.set_page_token(resp.next_page_token());
    }
    if (pages) *pages = count;
    return ids;
  }
};

TEST_F(ListJobsGrpcTest,
       TwentyThousandJobsComeBackPageByPageInIdOrderNoneTwice) {
  CreateStoredJobs(20000);
  Start();
  int pages = 0;
  std::vector<int64_t> ids = ListAll(v1::ListJobsRequest(), &pages);
  ASSERT_EQ(ids.size(), 20000u);
  for (size_t i = 0; i < ids.size(); ++i) ASSERT_EQ(ids[i], int64_t(i + 1));
  EXPECT_EQ(pages, 40);  // the default page size is 500

  v1::ListJobsRequest big;
  big.set_page_size(100000);  // more than the most: 5,000
  ids = ListAll(big, &pages);
  EXPECT_EQ(ids.size(), 20000u);
  EXPECT_EQ(pages, 4);
  v1::ListJobsResponse first;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), big, &first).ok());
  EXPECT_EQ(first.jobs_size(), 5000);
  EXPECT_EQ(first.jobs(4999).spec().name(), Name(5000));
}

TEST_F(ListJobsGrpcTest, BigJobsComeBackOverSeveralPagesWithinTheMessageLimit) {
  // 60 jobs of 100 KiB commands: 6 MiB in all, more than one message holds.
  CreateStoredJobs(60, 100 * 1024);
  Start();
  v1::ListJobsRequest req;
  req.set_page_size(5000);
  int pages = 0;
  std::vector<int64_t> ids = ListAll(req, &pages);
  ASSERT_EQ(ids.size(), 60u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], int64_t(i + 1));
  EXPECT_GE(pages, 3);
  v1::ListJobsResponse resp;
  ASSERT_TRUE(stub_->ListJobs(Context().get(), req, &resp).ok());
  EXPECT_LE(resp.ByteSizeLong(), 3u << 20);
  EXPECT_EQ(resp.jobs(0).spec().command(1).size(), 100u * 1024);
}

TEST_F(ListJobsGrpcTest, FiltersSelectByUserNameSubmitTimeEndTimeAndState) {
  CreateStoredJobs(3000);
  Start();
  v1::ListJobsRequest req;
  req.set_user("u1");
  std::vector<int64_t> ids = ListAll(req);
  ASSERT_EQ(ids.size(), 1000u);
  EXPECT_EQ(ids.front(), 1);
  EXPECT_EQ(ids.back(), 2998);

  req = v1::ListJobsRequest();
  req.set_name(Name(2500));
  EXPECT_THAT(ListAll(req), ElementsAre(2500));
  req.set_user("u0");  // job 2500 is u1's
  EXPECT_THAT(ListAll(req), ElementsAre());

  req = v1::ListJobsRequest();
  req.set_submitted_since(1000.0 + 2001);  // the third batch
  ids = ListAll(req);
  ASSERT_EQ(ids.size(), 1000u);
  EXPECT_EQ(ids.front(), 2001);

  for (int64_t id : {7, 9}) {
    v1::CancelJobRequest cancel;
    cancel.set_job_id(id);
    v1::CancelJobResponse cancelled;
    ASSERT_TRUE(stub_->CancelJob(Context().get(), cancel, &cancelled).ok());
  }
  req = v1::ListJobsRequest();
  req.set_state(v1::JOB_STATE_CANCELLED);
  EXPECT_THAT(ListAll(req), ElementsAre(7, 9));
  req.set_user("u0");
  EXPECT_THAT(ListAll(req), ElementsAre(9));
  // Only the cancelled jobs have ended: any window that holds their end
  // holds only them, and a window before it holds none.
  req = v1::ListJobsRequest();
  req.set_ended_since(0);
  EXPECT_THAT(ListAll(req), ElementsAre(7, 9));
  req.set_ended_before(1);
  EXPECT_THAT(ListAll(req), ElementsAre());
  req = v1::ListJobsRequest();
  req.set_ended_before(1e12);
  req.set_state(v1::JOB_STATE_PENDING);
  EXPECT_THAT(ListAll(req), ElementsAre());
  req = v1::ListJobsRequest();
  req.set_state(v1::JOB_STATE_PENDING);
  req.set_page_size(5000);
  EXPECT_EQ(ListAll(req).size(), 2998u);
}

TEST_F(ListJobsGrpcTest, BadPagingArgumentsAreInvalidArgumentNamingTheField) {
  CreateStoredJobs(3);
  Start();
  for (const char* token : {"garbage", "1500", "ajE6LTE"}) {
    v1::ListJobsRequest req;
    req.set_page_token(token);
    v1::ListJobsResponse resp;
    grpc::Status status = stub_->ListJobs(Context().get(), req, &resp);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), StartsWith("page_token: "));
  }
  for (const char* field : {"submitted_since", "ended_since", "ended_before"}) {
    v1::ListJobsRequest bad;
    const double nan = std::nan("");
    if (std::string(field) == "submitted_since") bad.set_submitted_since(nan);
    if (std::string(field) == "ended_since") bad.set_ended_since(nan);
    if (std::string(field) == "ended_before") bad.set_ended_before(nan);
    v1::ListJobsResponse none;
    grpc::Status status = stub_->ListJobs(Context().get(), bad, &none);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(),
                StartsWith(std::string(field) + ": expected Unix seconds"));
  }
  v1::ListJobsRequest req;
  req.set_page_size(-1);
  v1::ListJobsResponse resp;
  grpc::Status status = stub_->ListJobs(Context().get(), req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("page_size: expected 0"));
  // A page of 2 of the 3 jobs: its token leads to the third.
  req.set_page_size(2);
  ASSERT_TRUE(stub_->ListJobs(Context().get(), req, &resp).ok());
  ASSERT_EQ(resp.jobs_size(), 2);
  ASSERT_FALSE(resp.next_page_token().empty());
  req.set_page_token(resp.next_page_token());
  resp.Clear();
  ASSERT_TRUE(stub_->ListJobs(Context().get(), req, &resp).ok());
  ASSERT_EQ(resp.jobs_size(), 1);
  EXPECT_EQ(resp.jobs(0).id(), 3);
  EXPECT_EQ(resp.next_page_token(), "");
}

}  // namespace
}  // namespace tiresias::master_testing

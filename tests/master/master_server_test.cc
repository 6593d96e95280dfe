// MasterServer over real gRPC on loopback, with a real client stub and real
// SQLite files.
#include "master/server.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master_test_util.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias::master_testing {
namespace {

class MasterServerTest : public MasterFixture {};

TEST_F(MasterServerTest, SubmitListAndRejectOverGrpc) {
  master::RealClock clock;
  auto state = MasterState::Open(options_, &clock);
  ASSERT_TRUE(state.ok()) << state.status();
  auto server = MasterServer::Start(state->get(), &clock, "127.0.0.1:0");
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  auto channel = grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*server)->port()),
      grpc::InsecureChannelCredentials());
  auto stub = v1::Tiresias::NewStub(channel);
  auto agents = v1::AgentRegistry::NewStub(channel);

  auto submit = [&](int gpus, std::vector<std::string> command,
                    v1::SubmitJobResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() +
                     std::chrono::seconds(10));
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(gpus);
    for (auto& arg : command) req.mutable_spec()->add_command(arg);
    return stub->SubmitJob(&ctx, req, resp);
  };

  v1::SubmitJobResponse first;
  ASSERT_TRUE(submit(1, {"sleep", "1"}, &first).ok());
  EXPECT_GT(first.job_id(), 0);

  v1::SubmitJobResponse bad;
  grpc::Status status = submit(0, {"sleep"}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("spec.gpus"), std::string::npos);
  status = submit(1, {}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest req;
    req.set_job_id(12345);
    v1::GetJobResponse resp;
    EXPECT_EQ(stub->GetJob(&ctx, req, &resp).error_code(),
              grpc::StatusCode::NOT_FOUND);
  }
  {  // an agent with 2 GPUs; the scheduling thread starts the job
    grpc::ClientContext ctx;
    v1::RegisterRequest req;
    req.set_name("n1");
    req.set_address("127.0.0.1");
    req.set_gpus(2);
    v1::RegisterResponse resp;
    ASSERT_TRUE(agents->Register(&ctx, req, &resp).ok());
    EXPECT_GT(resp.node_id(), 0);
  }
  v1::SubmitJobResponse second;
  ASSERT_TRUE(submit(2, {"sleep", "2"}, &second).ok());  // still serving
  status = submit(3, {"sleep"}, &bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);

  grpc::ClientContext ctx;
  v1::ListJobsResponse list;
  ASSERT_TRUE(stub->ListJobs(&ctx, v1::ListJobsRequest(), &list).ok());
  ASSERT_EQ(list.jobs_size(), 2);
  EXPECT_EQ(list.jobs(0).id(), first.job_id());
  EXPECT_EQ(list.jobs(1).id(), second.job_id());
  EXPECT_EQ(list.jobs(1).spec().gpus(), 2);
  EXPECT_EQ(list.jobs(0).events_size(), 0);

  grpc::ClientContext nodes_ctx;
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(stub->ListNodes(&nodes_ctx, v1::ListNodesRequest(), &nodes).ok());
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).state(), v1::NODE_STATE_UP);
  (*server)->Shutdown();
  (*server)->Shutdown();  // idempotent
}

}  // namespace
}  // namespace tiresias::master_testing

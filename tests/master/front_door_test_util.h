// A MasterServer on loopback over a fresh state dir, with a client stub: for
// tests of the client API over real gRPC.
#ifndef TIRESIAS_TESTS_MASTER_FRONT_DOOR_TEST_UTIL_H_
#define TIRESIAS_TESTS_MASTER_FRONT_DOOR_TEST_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/server.h"
#include "master/test_dir.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias::master_testing {

inline void AddEnv(v1::SubmitJobRequest* req, const std::string& key,
                   const std::string& value) {
  v1::EnvVar* var = req->mutable_spec()->add_env();
  var->set_key(key);
  var->set_value(value);
}

class FrontDoorTest : public testing::Test {
 protected:
  FrontDoorTest() { options_.state_dir = dir_.File("state"); }
  ~FrontDoorTest() override { Stop(); }

  // Opens the master over options_.state_dir and serves it on loopback.
  void Start() {
    auto state = MasterState::Open(options_, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    state_ = std::move(*state);
    auto server = MasterServer::Start(state_.get(), &clock_, "127.0.0.1:0");
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    address_ = absl::StrCat("127.0.0.1:", server_->port());
    stub_ = NewStub();
  }
  // Stops serving and closes the state (as a master exit would).
  void Stop() {
    if (server_) server_->Shutdown();
    server_.reset();
    state_.reset();
  }
  // A stub on a channel of its own.
  std::unique_ptr<v1::Tiresias::Stub> NewStub() const {
    return v1::Tiresias::NewStub(
        grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  static std::unique_ptr<grpc::ClientContext> Context() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::seconds(30));
    return ctx;
  }
  static v1::SubmitJobRequest Request(const std::string& name) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_name(name);
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("/bin/true");
    return req;
  }
  grpc::Status Submit(const v1::SubmitJobRequest& req,
                      v1::SubmitJobResponse* resp) {
    return stub_->SubmitJob(Context().get(), req, resp);
  }

  TestDir dir_;
  master::RealClock clock_;
  MasterOptions options_;
  std::unique_ptr<MasterState> state_;
  std::unique_ptr<MasterServer> server_;
  std::string address_;
  std::unique_ptr<v1::Tiresias::Stub> stub_;
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_TESTS_MASTER_FRONT_DOOR_TEST_UTIL_H_

// Test helpers for the master: a MasterState over a temporary state dir with
// a fake clock, and builders for agent messages.
#ifndef TIRESIAS_TESTS_MASTER_MASTER_TEST_UTIL_H_
#define TIRESIAS_TESTS_MASTER_MASTER_TEST_UTIL_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master/test_dir.h"

namespace tiresias::master_testing {

inline v1::TaskStatus Task(JobId job, int attempt, int rank,
                           v1::TaskState state, std::vector<int> gpus,
                           std::optional<int> exit_code = std::nullopt,
                           std::optional<double> start = std::nullopt) {
  v1::TaskStatus t;
  t.mutable_task()->set_job_id(job);
  t.mutable_task()->set_attempt(attempt);
  t.mutable_task()->set_rank(rank);
  t.set_state(state);
  for (int g : gpus) t.add_gpu_indexes(g);
  if (exit_code) t.set_exit_code(*exit_code);
  if (start) t.set_start_time(*start);
  return t;
}

inline JobRequest Spec(int gpus, std::vector<std::string> command = {"train"}) {
  JobRequest spec;
  spec.name = "job";
  spec.num_gpus = gpus;
  spec.command = std::move(command);
  return spec;
}

// The tasks an answer's desired state says should run on the node (all of
// them, running ones included: the state is level-triggered).
template <typename Response>
std::vector<v1::StartTask> Starts(const Response& resp) {
  return {resp.desired().run().begin(), resp.desired().run().end()};
}

// The launches an answer's desired state says are being stopped there.
template <typename Response>
std::vector<v1::StopTask> Stops(const Response& resp) {
  return {resp.desired().stop().begin(), resp.desired().stop().end()};
}

// An agent token (the agent's identity) for a node name.
inline std::string TokenFor(const std::string& name) {
  return "token-of-agent-" + name;
}

class MasterFixture : public testing::Test {
 protected:
  MasterFixture() { options_.state_dir = dir_.File("state"); }

  void Open() {
    auto state = MasterState::Open(options_, &clock_);
    ASSERT_TRUE(state.ok()) << state.status();
    master_ = std::move(*state);
  }
  static v1::RegisterRequest RegisterRequest(
      const std::string& name, int gpus,
      std::vector<v1::TaskStatus> tasks = {}) {
    v1::RegisterRequest req;
    req.set_name(name);
    req.set_address(name + ".local");
    req.set_gpus(gpus);
    req.set_agent_token(TokenFor(name));
    req.set_grace_seconds(1);
    req.set_boot_id("test-boot");
    req.set_report_seq(NextSeq());
    for (auto& t : tasks) *req.add_tasks() = t;
    return req;
  }
  int64_t Register(const std::string& name, int gpus,
                   std::vector<v1::TaskStatus> tasks = {},
                   v1::RegisterResponse* out = nullptr) {
    auto resp = master_->Register(RegisterRequest(name, gpus, tasks));
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return 0;
    sessions_[resp->node_id()] = resp->session();
    if (out) *out = *resp;
    return resp->node_id();
  }
  // A heartbeat of the node's current session.
  v1::HeartbeatResponse Beat(int64_t node,
                             std::vector<v1::TaskStatus> tasks = {},
                             bool leaving = false) {
    auto resp = master_->Heartbeat(BeatRequest(node, tasks, leaving));
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : v1::HeartbeatResponse();
  }
  v1::HeartbeatRequest BeatRequest(int64_t node,
                                   std::vector<v1::TaskStatus> tasks = {},
                                   bool leaving = false) {
    v1::HeartbeatRequest req;
    req.set_node_id(node);
    req.set_session(sessions_[node]);
    req.set_leaving(leaving);
    req.set_boot_id("test-boot");
    req.set_report_seq(NextSeq());
    for (auto& t : tasks) *req.add_tasks() = t;
    return req;
  }
  JobId Submit(const JobRequest& spec) {
    auto id = master_->SubmitJob(spec);
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : 0;
  }
  JobRecord Get(JobId id) {
    auto rec = master_->GetJob(id);
    EXPECT_TRUE(rec.ok()) << rec.status();
    return rec.ok() ? *rec : JobRecord();
  }
  void Pass() { ASSERT_TRUE(master_->RunPass().ok()); }

  TestDir dir_;
  master::FakeClock clock_{Seconds{1000}};
  MasterOptions options_;
  std::unique_ptr<MasterState> master_;
  std::map<int64_t, uint64_t> sessions_;  // node id -> its session
  // Reports are ordered per boot (RegisterRequest.report_seq).
  static uint64_t NextSeq() {
    static uint64_t seq = 0;
    return ++seq;
  }
};

}  // namespace tiresias::master_testing

#endif  // TIRESIAS_TESTS_MASTER_MASTER_TEST_UTIL_H_

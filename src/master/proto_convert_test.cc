#include "master/proto_convert.h"

#include <cctype>
#include <string>

#include "gtest/gtest.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {
namespace {

JobRecord FullRecord() {
  JobRecord r;
  r.id = 123456789012;
  r.spec.name = "resnet";
  r.spec.user = "bob";
  r.spec.num_gpus = 8;
  r.spec.command = {"/usr/bin/python3", "train.py", "--steps", "1000", ""};
  r.spec.env = {{"A", "1"}, {"B", "two words"}, {"EMPTY", ""}};
  r.spec.checkpoint_dir = "/ckpt/resnet";
  r.spec.model = "resnet50";
  r.state = JobRecordState::kPreempted;
  r.queue = 1;
  r.attained_gpu_seconds = 8 * 3601.125;
  r.executed = Seconds{3601.125};
  r.total_executed = Seconds{7000.5};
  r.submit_time = Seconds{1.7e9 + 0.001};
  r.first_start_time = Seconds{1.7e9 + 5.5};
  r.end_time = Seconds{1.7e9 + 9000.25};
  r.last_stop_time = Seconds{1.7e9 + 8000};
  r.preemptions = 2;
  r.promotions = 1;
  r.restarts = 2;
  r.attempt = 3;
  r.nodes = {"node-1", "node-2"};
  r.exit_code = 143;
  r.events = {JobEvent{r.id, 1, Seconds{1.7e9}, "submitted", "8 GPUs"},
              JobEvent{r.id, 9, Seconds{1.7e9 + 5.5}, "started", "node-1"}};
  return r;
}

// Through the wire format, as a client would see it.
v1::Job ThroughWire(const v1::Job& job) {
  std::string bytes;
  EXPECT_TRUE(job.SerializeToString(&bytes));
  v1::Job parsed;
  EXPECT_TRUE(parsed.ParseFromString(bytes));
  return parsed;
}

TEST(ProtoConvertTest, FullJobRecordRoundTrips) {
  JobRecord record = FullRecord();
  v1::Job message;
  JobToProto(record, &message);
  EXPECT_EQ(message.state(), v1::JOB_STATE_PREEMPTED);
  EXPECT_EQ(message.spec().gpus(), 8);
  EXPECT_EQ(message.spec().env().at("B"), "two words");
  EXPECT_TRUE(message.has_first_start_time());
  auto back = JobFromProto(ThroughWire(message));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);
}

TEST(ProtoConvertTest, AbsentOptionalsStayAbsent) {
  JobRecord record = FullRecord();
  record.state = JobRecordState::kPending;
  record.first_start_time.reset();
  record.end_time.reset();
  record.exit_code.reset();
  record.nodes.clear();
  record.events.clear();
  v1::Job message;
  JobToProto(record, &message);
  EXPECT_FALSE(message.has_first_start_time());
  EXPECT_FALSE(message.has_end_time());
  EXPECT_FALSE(message.has_exit_code());
  auto back = JobFromProto(ThroughWire(message));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);

  // An exit code of 0 is present, not absent.
  record.exit_code = 0;
  JobToProto(record, &message);
  EXPECT_TRUE(message.has_exit_code());
  EXPECT_EQ(JobFromProto(message)->exit_code, 0);
}

TEST(ProtoConvertTest, EveryJobStateMapsBothWays) {
  for (JobRecordState state :
       {JobRecordState::kPending, JobRecordState::kRunning,
        JobRecordState::kPreempted, JobRecordState::kFinished,
        JobRecordState::kFailed, JobRecordState::kCancelled,
        JobRecordState::kStarting}) {
    v1::JobState proto = JobStateToProto(state);
    EXPECT_NE(proto, v1::JOB_STATE_UNSPECIFIED);
    EXPECT_EQ(*JobStateFromProto(proto), state);
    EXPECT_EQ(v1::JobState_Name(proto),
              "JOB_STATE_" + [&] {
                std::string name(JobRecordStateName(state));
                for (char& c : name) c = std::toupper(c);
                return name;
              }());
  }
}

TEST(ProtoConvertTest, UnspecifiedOrUnknownStateIsAnError) {
  v1::Job message;
  JobToProto(FullRecord(), &message);
  message.set_state(v1::JOB_STATE_UNSPECIFIED);
  auto record = JobFromProto(message);
  EXPECT_EQ(record.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(record.status().message(),
            "job 123456789012: state: expected a job state, got 0 "
            "(unspecified)");
  EXPECT_FALSE(JobStateFromProto(static_cast<v1::JobState>(42)).ok());
  EXPECT_FALSE(NodeStateFromProto(v1::NODE_STATE_UNSPECIFIED).ok());
}

TEST(ProtoConvertTest, NodeRoundTrips) {
  NodeRecord node{7, "node-7", "10.1.2.3", 8, NodeState::kDown,
                  Seconds{1.7e9 + 0.5}};
  v1::Node message;
  NodeToProto(node, &message);
  EXPECT_EQ(message.state(), v1::NODE_STATE_DOWN);
  EXPECT_EQ(*NodeFromProto(message), node);
}

TEST(ProtoConvertTest, DesiredStateRoundTrips) {
  v1::HeartbeatResponse response;
  v1::DesiredState* desired = response.mutable_desired();
  desired->set_session(9);
  desired->set_version(4);
  v1::StartTask* start = desired->add_run();
  start->mutable_task()->set_job_id(5);
  start->mutable_task()->set_attempt(2);
  start->mutable_task()->set_rank(1);
  start->add_gpu_indexes(3);
  v1::StopTask* stop = desired->add_stop();
  stop->set_reason(v1::STOP_REASON_ORPHAN);
  std::string bytes;
  ASSERT_TRUE(response.SerializeToString(&bytes));
  v1::HeartbeatResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.desired().version(), 4u);
  ASSERT_EQ(parsed.desired().run_size(), 1);
  EXPECT_EQ(parsed.desired().run(0).task().rank(), 1);
  EXPECT_EQ(parsed.desired().stop(0).reason(), v1::STOP_REASON_ORPHAN);
}

TEST(ProtoConvertTest, AgentStringsAreBytesSoBadUtf8ReachesTheMaster) {
  // proto3 refuses to parse a `string` field holding invalid UTF-8 (gRPC
  // then answers INTERNAL with no message); the agent's name is `bytes`,
  // so the master gets it and can say what is wrong with it.
  v1::RegisterRequest req;
  req.set_name(std::string("node-\xff\xfe", 7));
  std::string wire;
  ASSERT_TRUE(req.SerializeToString(&wire));
  v1::RegisterRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_EQ(parsed.name(), req.name());
  EXPECT_STREQ(v1::AgentRegistry::service_full_name(),
               "tiresias.v1.AgentRegistry");
}

}  // namespace
}  // namespace tiresias

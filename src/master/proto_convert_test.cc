#include "master/proto_convert.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/message_differencer.h>

#include <cctype>
#include <string>

#include "gtest/gtest.h"
#include "master/job_validation.h"
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
  r.spec.workdir = "/home/bob/runs";
  r.spec.output = "out-%j-%r.txt";
  r.spec.error = "err-%j.txt";
  r.spec.time_limit = Seconds{5400.5};
  r.spec.no_preempt = true;
  r.spec.hold = true;
  r.spec.dependencies = {{DependencyKind::kAfterOk, 7},
                         {DependencyKind::kAfterNotOk, 9}};
  r.held = true;
  r.waiting_on_dependencies = true;
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
  r.profile = JobProfile{.periodic = true,
                         .tensor_skew = 0.0923,
                         .iteration_s = 0.5,
                         .bytes_per_iteration = 1.0e8,
                         .messages_per_iteration = 161,
                         .measured_job_id = 77};
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
  ASSERT_EQ(message.spec().env_size(), 3);
  EXPECT_EQ(message.spec().env(1).key(), "B");
  EXPECT_EQ(message.spec().env(1).value(), "two words");
  EXPECT_TRUE(message.has_first_start_time());
  auto back = JobFromProto(ThroughWire(message));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, record);
}

// A dependency kind this build does not know becomes 0, which validation
// refuses (it never aliases a known kind).
TEST(ProtoConvertTest, UnknownDependencyKindIsRefusedByValidation) {
  v1::JobSpec spec;
  spec.set_gpus(1);
  spec.add_command("true");
  v1::JobDependency* dep = spec.add_dependencies();
  dep->set_kind(static_cast<v1::DependencyKind>(257));
  dep->set_job_id(3);
  const JobRequest request = JobSpecFromProto(spec);
  ASSERT_EQ(request.dependencies.size(), 1u);
  absl::Status refused = ValidateJobRequest(request);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("spec.dependencies[0].kind"),
            std::string::npos)
      << refused;
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

// JobSpec's text fields became bytes and its env map a list of EnvVar: a
// message encoded with the old schema (strings and map<string, string>, as
// an older client sends) parses into the new one with the same values, and
// back.
TEST(ProtoConvertTest, JobSpecIsWireCompatibleWithItsStringAndMapSchema) {
  namespace pb = google::protobuf;
  pb::FileDescriptorProto file;
  file.set_name("old_spec.proto");
  file.set_package("old");
  file.set_syntax("proto3");
  pb::DescriptorProto* spec = file.add_message_type();
  spec->set_name("JobSpec");
  auto field = [](pb::DescriptorProto* message, const char* name, int number,
                  pb::FieldDescriptorProto::Type type, bool repeated) {
    pb::FieldDescriptorProto* f = message->add_field();
    f->set_name(name);
    f->set_number(number);
    f->set_type(type);
    f->set_label(repeated ? pb::FieldDescriptorProto::LABEL_REPEATED
                          : pb::FieldDescriptorProto::LABEL_OPTIONAL);
    return f;
  };
  using T = pb::FieldDescriptorProto;
  field(spec, "name", 1, T::TYPE_STRING, false);
  field(spec, "gpus", 3, T::TYPE_INT32, false);
  field(spec, "command", 4, T::TYPE_STRING, true);
  pb::DescriptorProto* entry = spec->add_nested_type();
  entry->set_name("EnvEntry");
  entry->mutable_options()->set_map_entry(true);
  field(entry, "key", 1, T::TYPE_STRING, false);
  field(entry, "value", 2, T::TYPE_STRING, false);
  field(spec, "env", 5, T::TYPE_MESSAGE, true)
      ->set_type_name(".old.JobSpec.EnvEntry");
  pb::DescriptorPool pool;
  const pb::FileDescriptor* old_file = pool.BuildFile(file);
  ASSERT_NE(old_file, nullptr);
  pb::DynamicMessageFactory factory(&pool);
  std::unique_ptr<pb::Message> old(
      factory.GetPrototype(old_file->FindMessageTypeByName("JobSpec"))->New());
  ASSERT_TRUE(pb::TextFormat::ParseFromString(
      R"(name: "train" gpus: 2 command: "python3" command: "t.py"
         env { key: "LR" value: "0.1" } env { key: "A" value: "b" })",
      old.get()));

  v1::JobSpec parsed;
  ASSERT_TRUE(parsed.ParseFromString(old->SerializeAsString()));
  JobRequest request = JobSpecFromProto(parsed);
  EXPECT_EQ(request.name, "train");
  EXPECT_EQ(request.num_gpus, 2);
  EXPECT_EQ(request.command, (std::vector<std::string>{"python3", "t.py"}));
  EXPECT_EQ(request.env,
            (std::map<std::string, std::string>{{"A", "b"}, {"LR", "0.1"}}));

  std::unique_ptr<pb::Message> back(old->New());
  ASSERT_TRUE(back->ParseFromString(parsed.SerializeAsString()));
  EXPECT_TRUE(pb::util::MessageDifferencer::Equals(*back, *old))
      << back->DebugString();
}

TEST(ProtoConvertTest, ARepeatedEnvNameKeepsTheLastValue) {
  v1::JobSpec spec;
  for (const char* value : {"1", "2"}) {
    v1::EnvVar* var = spec.add_env();
    var->set_key("X");
    var->set_value(value);
  }
  EXPECT_EQ(JobSpecFromProto(spec).env,
            (std::map<std::string, std::string>{{"X", "2"}}));
}

TEST(ProtoConvertTest, EveryJobStateMapsBothWays) {
  for (JobRecordState state :
       {JobRecordState::kPending, JobRecordState::kRunning,
        JobRecordState::kPreempted, JobRecordState::kFinished,
        JobRecordState::kFailed, JobRecordState::kCancelled,
        JobRecordState::kStarting, JobRecordState::kTimeout}) {
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

TEST(ProtoConvertTest, ALeaderCarriesItsStandbysAndTheStoresHealth) {
  StoreHealth store{.kind = "etcd",
                    .where = "etcd://a:1/t/",
                    .log_index = 9,
                    .checked = 1500.5};
  store.members.push_back({.endpoint = "a:1",
                           .in_use = true,
                           .version = "3.4.23",
                           .db_size = 4096,
                           .raft_leader = true,
                           .has_leader = true,
                           .raft_index = 77,
                           .alarms = {"NOSPACE"}});
  store.members.push_back({.endpoint = "b:2", .error = "refused"});
  v1::MasterLeader out;
  LeaderToProto({.epoch = 12, .pid = 34, .host = "h", .since = 5.5},
                {"1@x", "2@y"}, store, &out);
  EXPECT_EQ(out.epoch(), 12u);
  EXPECT_EQ(out.pid(), 34);
  EXPECT_EQ(out.host(), "h");
  EXPECT_EQ(out.since(), 5.5);
  ASSERT_EQ(out.standbys_size(), 2);
  EXPECT_EQ(out.standbys(1), "2@y");
  EXPECT_EQ(out.store().kind(), "etcd");
  EXPECT_EQ(out.store().where(), "etcd://a:1/t/");
  EXPECT_EQ(out.store().log_index(), 9);
  EXPECT_EQ(out.store().checked(), 1500.5);
  ASSERT_EQ(out.store().members_size(), 2);
  const v1::StoreMember& a = out.store().members(0);
  EXPECT_TRUE(a.in_use() && a.raft_leader() && a.has_leader());
  EXPECT_EQ(a.version(), "3.4.23");
  EXPECT_EQ(a.db_size(), 4096);
  EXPECT_EQ(a.raft_index(), 77u);
  ASSERT_EQ(a.alarms_size(), 1);
  EXPECT_EQ(out.store().members(1).error(), "refused");
}

TEST(ProtoConvertTest, DrainedNodeRoundTrips) {
  NodeRecord node{3, "node-3", "10.1.2.4", 4, NodeState::kUp, Seconds{5}};
  node.drained = true;
  node.drain_reason = "swap PSU";
  v1::Node message;
  NodeToProto(node, &message);
  EXPECT_TRUE(message.drained());
  EXPECT_EQ(message.drain_reason(), "swap PSU");
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

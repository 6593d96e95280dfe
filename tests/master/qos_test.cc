// Priority levels (QOS) in the master (issue 24): a high level preempts
// through the agent protocol, QOS are durable across a restart and
// refusals change nothing; over real gRPC with TLS and tokens, who may set
// them, use them and ask never to be preempted.
#include <set>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master/metrics.h"
#include "master_test_util.h"
#include "sched/pending_reason.h"
#include "secure_master_test_util.h"

namespace tiresias::master_testing {
namespace {

using v1::TASK_STATE_RUNNING;

JobRequest UserSpec(int gpus, std::string user, std::string qos) {
  JobRequest spec = Spec(gpus);
  spec.user = std::move(user);
  spec.qos = std::move(qos);
  return spec;
}

class QosMasterTest : public MasterFixture {
 protected:
  std::vector<v1::TaskStatus> RunAll(int64_t node) {
    for (const v1::StartTask& s : Starts(Beat(node, running_))) {
      std::vector<int> gpus(s.gpu_indexes().begin(), s.gpu_indexes().end());
      running_.push_back(Task(s.task().job_id(), s.task().attempt(), 0,
                              TASK_STATE_RUNNING, gpus, {}, 1000.0));
    }
    Beat(node, running_);
    return running_;
  }
  std::vector<v1::TaskStatus> running_;
};

// One node of 2 GPUs. bob's two 1-GPU jobs run; alice's job of QOS high
// (priority 10, at most 1 GPU per user) preempts one of them in the pass
// it arrives; her second waits naming the limit. After a restart the QOS
// is there and still orders the jobs: nothing is stopped.
TEST_F(QosMasterTest, AHighLevelPreemptsAndQosSurviveARestart) {
  Open();
  int64_t node = Register("n1", 2);
  ASSERT_TRUE(master_
                  ->SetQos(QosRecord{.name = "high",
                                     .priority = 10,
                                     .max_gpus_per_user = 1,
                                     .users = {"alice"}},
                           true)
                  .ok());
  const JobId b1 = Submit(UserSpec(1, "bob", ""));
  const JobId b2 = Submit(UserSpec(1, "bob", ""));
  Pass();
  ASSERT_EQ(RunAll(node).size(), 2u);
  const JobId a1 = Submit(UserSpec(1, "alice", "high"));
  const JobId a2 = Submit(UserSpec(1, "alice", "high"));
  Pass();
  std::set<JobId> stopped;
  for (const v1::StopTask& stop : Stops(Beat(node, running_))) {
    stopped.insert(stop.job_id());
  }
  ASSERT_EQ(stopped.size(), 1u);
  EXPECT_TRUE(stopped.contains(b1) || stopped.contains(b2));
  const JobRecord waiting = Get(a2);
  EXPECT_EQ(waiting.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kQosLimit));
  EXPECT_EQ(waiting.pending_reason,
            "qos high: alice's running jobs hold 1 of at most 1 GPU per user "
            "(needs 1 GPU)");
  // a1 holds its GPU in the scheduler while bob's job checkpoints.
  EXPECT_EQ(Get(a1).state, JobRecordState::kStarting);
  auto views = master_->ListQos();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].running_jobs, 1);
  EXPECT_EQ(views[0].waiting_jobs, 1);
  EXPECT_EQ(views[0].gpus, 1);
  absl::StatusOr<MasterState::Metrics> m =
      master_->SnapshotMetrics(/*with_vcs=*/true);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string text = RenderPrometheusMetrics(*m);
  for (const char* line :
       {"tiresias_qos_jobs{qos=\"high\",state=\"running\"} 1\n",
        "tiresias_qos_jobs{qos=\"high\",state=\"waiting\"} 1\n",
        "tiresias_qos_gpus{qos=\"high\"} 1\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
  master_.reset();

  clock_.Advance(Seconds{5});
  Open();
  views = master_->ListQos();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].qos.priority, 10);
  EXPECT_EQ(views[0].qos.users, std::vector<std::string>{"alice"});
  EXPECT_EQ(Get(a2).spec.qos, "high");
}

// Refusals name the reason and change nothing: a bad field, an existing
// or missing QOS, a stale read, removing one in use.
TEST_F(QosMasterTest, RefusalsNameTheReasonAndChangeNothing) {
  Open();
  Register("n1", 2);
  ASSERT_TRUE(
      master_->SetQos(QosRecord{.name = "q", .priority = 1}, true).ok());
  absl::Status s = master_->SetQos(QosRecord{.name = "q"}, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  s = master_->SetQos(QosRecord{.name = "nope"}, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  s = master_->SetQos(QosRecord{.name = "q", .priority = 5000}, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "qos.priority: expected -1000 to 1000, got 5000");
  s = master_->SetQos(QosRecord{.name = "q", .users = {"bad user"}}, false);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message().substr(0, 10), "qos.users:");
  const QosRecord read = master_->ListQos()[0].qos;
  QosRecord stale = read;
  stale.priority = 7;
  s = master_->SetQos(QosRecord{.name = "q", .priority = 2}, false, stale);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(master_->ListQos()[0].qos, read);
  const JobId id = Submit(UserSpec(1, "al", "q"));
  s = master_->RemoveQos("q");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(absl::StrCat("job ", id)), std::string::npos);
  ASSERT_TRUE(master_->CancelJob(id).ok());
  ASSERT_TRUE(master_->RemoveQos("q").ok());
  EXPECT_EQ(master_->RemoveQos("q").code(), absl::StatusCode::kNotFound);
  master_.reset();
  Open();
  EXPECT_TRUE(master_->ListQos().empty());
}

// Over real gRPC on a secure master: only admins set QOS; a user may name
// only a QOS open to them or to their VC; --no-preempt needs an admin or
// a QOS that allows it, and each refusal says which QOS would do.
class QosGrpcTest : public SecureMasterTest {};

TEST_F(QosGrpcTest, UsersUseOnlyTheirQosAndNoPreemptNeedsOne) {
  auto set = [&](const std::string& token, const std::string& name,
                 bool no_preempt, const std::string& user) {
    v1::SetQosRequest req;
    req.set_create(true);
    req.mutable_qos()->set_name(name);
    req.mutable_qos()->set_priority(5);
    req.mutable_qos()->set_max_gpus_per_user(-1);
    req.mutable_qos()->set_allow_no_preempt(no_preempt);
    req.mutable_qos()->add_users(user);
    v1::SetQosResponse resp;
    return AdminClient()->SetQos(Ctx(token).get(), req, &resp);
  };
  grpc::Status s = set(mallory_, "mine", true, "mallory");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(set(admin_, "high", false, "alice").ok());
  ASSERT_TRUE(set(admin_, "urgent", true, "alice").ok());

  auto submit = [&](const std::string& token, const std::string& qos,
                    bool no_preempt, v1::SubmitJobResponse* resp) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("true");
    req.mutable_spec()->set_qos(qos);
    req.mutable_spec()->set_no_preempt(no_preempt);
    return Client()->SubmitJob(Ctx(token).get(), req, resp);
  };
  v1::SubmitJobResponse resp;
  ASSERT_TRUE(submit(alice_, "high", false, &resp).ok());
  EXPECT_EQ(Get(resp.job_id()).spec.qos, "high");
  s = submit(mallory_, "high", false, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "SubmitJob: spec.qos: mallory may not use QOS \"high\" (mallory's: "
            "none)");
  {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(3);
    req.mutable_spec()->add_command("true");
    req.mutable_spec()->set_qos("capped");
    v1::SetQosRequest capped;
    capped.set_create(true);
    capped.mutable_qos()->set_name("capped");
    capped.mutable_qos()->set_max_gpus_per_user(2);
    capped.mutable_qos()->add_users("*");
    v1::SetQosResponse set_resp;
    ASSERT_TRUE(
        AdminClient()->SetQos(Ctx(admin_).get(), capped, &set_resp).ok());
    s = Client()->SubmitJob(Ctx(alice_).get(), req, &resp);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message(),
              "spec.qos: the job needs 3 GPUs, more than QOS "
              "\"capped\" lets one user's jobs hold (2): it could never start");
  }
  s = submit(alice_, "nosuch", false, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("alice's: capped, high, urgent"),
            std::string::npos)
      << s.error_message();
  s = submit(alice_, "high", true, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "SubmitJob: spec.no_preempt: QOS \"high\" does not allow "
            "--no-preempt; QOS that allow it for alice: urgent (submit --qos "
            "NAME)");
  s = submit(mallory_, "", true, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("--no-preempt-for"), std::string::npos);
  EXPECT_NE(s.error_message().find("--add-user mallory"), std::string::npos)
      << s.error_message();
  ASSERT_TRUE(submit(alice_, "urgent", true, &resp).ok());
  EXPECT_TRUE(Get(resp.job_id()).spec.no_preempt);
  ASSERT_TRUE(submit(admin_, "", true, &resp).ok());  // admins: always

  v1::ListQosResponse levels;
  ASSERT_TRUE(Client()->ListQos(Ctx(mallory_).get(), {}, &levels).ok());
  ASSERT_EQ(levels.qos_size(), 3);
  EXPECT_EQ(levels.qos(0).qos().name(), "high");
  EXPECT_EQ(levels.qos(0).waiting_jobs(), 1);
  EXPECT_EQ(AuditCount("CreateQos ", "ok"), 3);
  // mallory's SetQos and QOS, both no-preempts
  EXPECT_GE(AuditCount("", "denied"), 4);
}

}  // namespace
}  // namespace tiresias::master_testing

// Virtual clusters in the master (issue 24): reclaim of borrowed GPUs
// through the agent protocol, durable VCs across a restart with running
// jobs kept on their quota, and over real gRPC with TLS and tokens who may
// set VCs and submit to them.
#include <algorithm>
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

using v1::TASK_STATE_PREEMPTED;
using v1::TASK_STATE_RUNNING;

VcRecord Vc(std::string name, std::string quota,
            std::vector<std::string> members) {
  return VcRecord{.name = std::move(name),
                  .quota = std::move(quota),
                  .members = std::move(members)};
}

JobRequest UserSpec(int gpus, std::string user, std::string vc) {
  JobRequest spec = Spec(gpus);
  spec.user = std::move(user);
  spec.vc = std::move(vc);
  return spec;
}

class VcMasterTest : public MasterFixture {
 protected:
  // Every task of `ids` (one rank each) reported running on `node`, on
  // the GPUs its start named.
  std::vector<v1::TaskStatus> RunAll(int64_t node) {
    std::vector<v1::TaskStatus> tasks;
    for (const v1::StartTask& s : Starts(Beat(node, running_))) {
      std::vector<int> gpus(s.gpu_indexes().begin(), s.gpu_indexes().end());
      tasks.push_back(Task(s.task().job_id(), s.task().attempt(), 0,
                           TASK_STATE_RUNNING, gpus, {}, 1000.0));
    }
    running_ = tasks;
    Beat(node, running_);
    return tasks;
  }
  const MasterState::VcView* View(const std::vector<MasterState::VcView>& all,
                                  const std::string& name) {
    for (const auto& v : all) {
      if (v.vc.name == name) return &v;
    }
    return nullptr;
  }
  std::vector<v1::TaskStatus> running_;
};

// One node of 4 GPUs; a and b own 2 each. bob (b) runs four 1-GPU jobs:
// two on b's quota, two borrowing a's idle one. alice's 2-GPU job (a)
// takes a's quota back in the pass it arrives: exactly the two borrowers
// are told to stop (checkpoint), and once they have, alice's job starts.
TEST_F(VcMasterTest, ALendersJobReclaimsItsQuotaFromBorrowersInOnePass) {
  Open();
  const int64_t node = Register("n1", 4);
  ASSERT_TRUE(master_->SetVc(Vc("a", "1x2", {"alice"}), true).ok());
  ASSERT_TRUE(master_->SetVc(Vc("b", "1x2", {"bob"}), true).ok());
  std::vector<JobId> bobs;
  for (int i = 0; i < 4; ++i) bobs.push_back(Submit(UserSpec(1, "bob", "b")));
  Pass();
  ASSERT_EQ(RunAll(node).size(), 4u);
  std::set<JobId> borrowing;
  for (JobId id : bobs) {
    ASSERT_EQ(Get(id).state, JobRecordState::kRunning);
    if (Get(id).borrowing) borrowing.insert(id);
  }
  EXPECT_EQ(borrowing.size(), 2u);
  auto views = master_->ListVcs();
  ASSERT_NE(View(views, "b"), nullptr);
  EXPECT_EQ(View(views, "b")->guaranteed_gpus, 2);
  EXPECT_EQ(View(views, "b")->borrowed_gpus, 2);
  EXPECT_EQ(View(views, "b")->running_jobs, 4);
  EXPECT_EQ(View(views, "a")->bound_cells.size(), 0u);

  const JobId alices = Submit(UserSpec(2, "alice", "a"));
  Pass();
  v1::HeartbeatResponse resp = Beat(node, running_);
  std::set<JobId> stopped;
  for (const v1::StopTask& stop : Stops(resp)) {
    EXPECT_EQ(stop.reason(), v1::STOP_REASON_PREEMPT);
    stopped.insert(stop.job_id());
  }
  EXPECT_EQ(stopped, borrowing);
  for (JobId id : borrowing) {
    EXPECT_EQ(Get(id).state, JobRecordState::kPreempted) << id;
  }
  // The borrowers checkpoint and exit; alice's job is released then.
  std::vector<v1::TaskStatus> reports;
  for (v1::TaskStatus t : running_) {
    if (borrowing.contains(t.task().job_id())) {
      t.set_state(TASK_STATE_PREEMPTED);
      t.set_exit_code(143);
    }
    reports.push_back(t);
  }
  resp = Beat(node, reports);
  bool started = false;
  for (const v1::StartTask& s : Starts(resp)) {
    started = started || s.task().job_id() == alices;
  }
  EXPECT_TRUE(started) << resp.DebugString();
  views = master_->ListVcs();
  ASSERT_EQ(View(views, "a")->bound_cells.size(), 1u);
  EXPECT_EQ(View(views, "a")->bound_cells[0].substr(0, 3), "n1:");
  EXPECT_EQ(View(views, "b")->borrowed_gpus, 0);
  EXPECT_EQ(View(views, "b")->waiting_jobs, 2);
}

// VCs are durable; after a restart the running jobs are adopted back onto
// the quota they held (no borrower appears, nothing is stopped).
TEST_F(VcMasterTest, VcsAndQuotaHoldersSurviveARestart) {
  Open();
  int64_t node = Register("n1", 4);
  ASSERT_TRUE(master_->SetVc(Vc("a", "1x2", {"alice"}), true).ok());
  ASSERT_TRUE(master_->SetVc(Vc("b", "1x2", {"*"}), true).ok());
  const JobId a = Submit(UserSpec(2, "alice", "a"));
  const JobId b = Submit(UserSpec(2, "bob", "b"));
  Pass();
  ASSERT_EQ(RunAll(node).size(), 2u);
  ASSERT_FALSE(Get(a).borrowing);
  ASSERT_FALSE(Get(b).borrowing);
  master_.reset();

  clock_.Advance(Seconds{5});
  Open();
  auto views = master_->ListVcs();
  ASSERT_EQ(views.size(), 2u);
  EXPECT_EQ(views[0].vc, Vc("a", "1x2", {"alice"}));
  EXPECT_EQ(views[1].vc.members, std::vector<std::string>{"*"});
  node = Register("n1", 4, running_);
  Pass();
  v1::HeartbeatResponse resp = Beat(node, running_);
  EXPECT_TRUE(Stops(resp).empty()) << resp.DebugString();
  EXPECT_EQ(Get(a).state, JobRecordState::kRunning);
  EXPECT_FALSE(Get(a).borrowing);
  EXPECT_FALSE(Get(b).borrowing);
  views = master_->ListVcs();
  EXPECT_EQ(views[0].guaranteed_gpus, 2);
  EXPECT_EQ(views[1].guaranteed_gpus, 2);
  // A third job of b's must wait (b's quota is full, a lends nothing
  // idle), not displace anyone.
  const JobId c = Submit(UserSpec(1, "bob", "b"));
  Pass();
  EXPECT_TRUE(Stops(Beat(node, running_)).empty());
  EXPECT_EQ(Get(c).state, JobRecordState::kPending);
}

// What admins may not do: a VC in use cannot go, quotas must fit the
// registered nodes together, a user has one default; refusals change
// nothing, durable or not.
TEST_F(VcMasterTest, RefusalsNameTheReasonAndChangeNothing) {
  Open();
  Register("n1", 4);
  ASSERT_TRUE(master_
                  ->SetVc(VcRecord{.name = "a",
                                   .quota = "1x4",
                                   .members = {"al"},
                                   .default_for = {"al"}},
                          true)
                  .ok());
  absl::Status s = master_->SetVc(Vc("b", "1x1", {"bo"}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("do not fit the cluster's 1 registered nodes"),
            std::string::npos)
      << s;
  s = master_->SetVc(VcRecord{.name = "a", .quota = "2x2"}, true);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  // A change from a stale read is refused; from the VC as it is, made.
  const VcRecord read = master_->ListVcs()[0].vc;
  VcRecord stale = read;
  stale.weight = 3;
  s = master_->SetVc(Vc("a", "1x4", {"al", "bo"}), false, stale);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_EQ(master_->ListVcs()[0].vc, read);
  s = master_->SetVc(Vc("a", "1x4", {"al", "bo"}), false, read);
  ASSERT_TRUE(s.ok()) << s;  // a change (al's default dropped with it)
  s = master_->SetVc(Vc("bad name", "1x1", {}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("vc.name"), std::string::npos);
  s = master_->SetVc(Vc("c", "3x1", {}), true);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  const JobId id = Submit(UserSpec(1, "al", "a"));
  s = master_->RemoveVc("a");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find(absl::StrCat("job ", id)), std::string::npos);
  ASSERT_TRUE(master_->CancelJob(id).ok());
  ASSERT_TRUE(master_->RemoveVc("a").ok());
  EXPECT_EQ(master_->RemoveVc("a").code(), absl::StatusCode::kNotFound);
  master_.reset();
  Open();
  EXPECT_TRUE(master_->ListVcs().empty());
}

// What a VC's waiting job, a listing and /metrics say: b (2 GPUs, no
// borrowing) runs two of bob's three jobs; the third waits naming b's
// quota; `jobs --vc` (ListJobsPage) finds b's jobs alone; the metrics
// count b's GPUs and jobs, and a's empty quota.
TEST_F(VcMasterTest, ReasonsListingsAndMetricsNameTheVc) {
  Open();
  const int64_t node = Register("n1", 4);
  ASSERT_TRUE(master_->SetVc(Vc("a", "1x2", {"alice"}), true).ok());
  VcRecord b = Vc("b", "1x2", {"bob"});
  b.borrow_limit = 0;
  ASSERT_TRUE(master_->SetVc(b, true).ok());
  std::vector<JobId> bobs;
  for (int i = 0; i < 3; ++i) bobs.push_back(Submit(UserSpec(1, "bob", "b")));
  Pass();
  ASSERT_EQ(RunAll(node).size(), 2u);
  const JobRecord waiting = Get(bobs[2]);
  EXPECT_EQ(waiting.pending_reason_kind,
            static_cast<int>(PendingReasonKind::kVcQuota));
  EXPECT_EQ(waiting.pending_reason,
            "vc b: 2 of 2 GPUs of its quota in use; needs 1 GPU and may not "
            "borrow (borrowing limit 0)");
  const JobId alices = Submit(UserSpec(1, "alice", "a"));

  MasterState::JobListQuery query;
  query.vc = "b";
  absl::StatusOr<JobPage> page = master_->ListJobsPage(query);
  ASSERT_TRUE(page.ok()) << page.status();
  std::vector<JobId> listed;
  for (const JobRecord& rec : page->jobs) listed.push_back(rec.id);
  EXPECT_EQ(listed, bobs);
  query.vc = "a";
  page = master_->ListJobsPage(query);
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].id, alices);
  query.state = JobRecordState::kRunning;
  query.vc = "b";
  page = master_->ListJobsPage(query);
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_EQ(page->jobs.size(), 2u);

  absl::StatusOr<MasterState::Metrics> m =
      master_->SnapshotMetrics(/*with_vcs=*/true);
  ASSERT_TRUE(m.ok()) << m.status();
  const std::string text = RenderPrometheusMetrics(*m);
  for (const char* line : {"tiresias_vc_quota_gpus{vc=\"a\"} 2\n",
                           "tiresias_vc_gpus{vc=\"b\",kind=\"guaranteed\"} 2\n",
                           "tiresias_vc_gpus{vc=\"b\",kind=\"borrowed\"} 0\n",
                           "tiresias_vc_jobs{vc=\"b\",state=\"running\"} 2\n",
                           "tiresias_vc_jobs{vc=\"b\",state=\"waiting\"} 1\n",
                           "tiresias_vc_jobs{vc=\"a\",state=\"waiting\"} 1\n",
                           "tiresias_vc_reclaims_total 0\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << text;
  }
}

// Over real gRPC on a secure master: only admins set VCs (a refusal is
// audited); a user's job goes to their VC and may name only their own;
// someone in no VC is told so.
class VcGrpcTest : public SecureMasterTest {};

TEST_F(VcGrpcTest, UsersSubmitOnlyToTheirVcsAndOnlyAdminsSetThem) {
  auto set = [&](const std::string& token, const std::string& name,
                 const std::string& member) {
    v1::SetVcRequest req;
    req.set_create(true);
    req.mutable_vc()->set_name(name);
    req.mutable_vc()->set_quota("1x1");
    req.mutable_vc()->set_borrow_limit(-1);
    req.mutable_vc()->set_lend_limit(-1);
    req.mutable_vc()->add_members(member);
    v1::SetVcResponse resp;
    return AdminClient()->SetVc(Ctx(token).get(), req, &resp);
  };
  grpc::Status s = set(mallory_, "mine", "mallory");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(set(admin_, "vision", "alice").ok());
  ASSERT_TRUE(set(admin_, "speech", "bob").ok());

  auto submit = [&](const std::string& token, const std::string& vc,
                    v1::SubmitJobResponse* resp) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_gpus(1);
    req.mutable_spec()->add_command("true");
    req.mutable_spec()->set_vc(vc);
    return Client()->SubmitJob(Ctx(token).get(), req, resp);
  };
  v1::SubmitJobResponse resp;
  ASSERT_TRUE(submit(alice_, "", &resp).ok());
  EXPECT_EQ(Get(resp.job_id()).spec.vc, "vision");
  s = submit(alice_, "speech", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(s.error_message(),
            "SubmitJob: spec.vc: alice is not a member of \"speech\" "
            "(alice's: vision)");
  s = submit(mallory_, "", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_NE(s.error_message().find("mallory is in no virtual cluster"),
            std::string::npos)
      << s.error_message();
  s = submit(alice_, "nosuch", &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  // An admin may submit anywhere, for anyone.
  ASSERT_TRUE(submit(admin_, "speech", &resp).ok());
  EXPECT_EQ(Get(resp.job_id()).spec.vc, "speech");

  v1::ListVcsResponse vcs;
  ASSERT_TRUE(Client()->ListVcs(Ctx(alice_).get(), {}, &vcs).ok());
  ASSERT_EQ(vcs.vcs_size(), 2);
  EXPECT_EQ(vcs.vcs(1).vc().name(), "vision");
  EXPECT_EQ(vcs.vcs(1).waiting_jobs(), 1);
  EXPECT_EQ(AuditCount("CreateVc ", "ok"), 2);
  // SetVc by mallory, alice to speech, mallory's job
  EXPECT_GE(AuditCount("", "denied"), 3);
}

}  // namespace
}  // namespace tiresias::master_testing

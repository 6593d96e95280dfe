// Scheduling settings changed at run time (SetTuning, `tiresias tune
// --apply`): applied at once through the agent protocol, kept over the
// flags across a restart, shown in /metrics; refusals change nothing; the
// drift test against the window tuned on.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "master/master_state.h"
#include "master/metrics.h"
#include "master_test_util.h"

namespace tiresias::master_testing {
namespace {

using ::testing::HasSubstr;
using v1::TASK_STATE_EXITED;
using v1::TASK_STATE_RUNNING;

v1::SetTuningRequest Request(std::vector<double> thresholds, double knob,
                             std::string order, std::string placement = "") {
  v1::SetTuningRequest req;
  for (double t : thresholds) req.mutable_tuning()->add_thresholds(t);
  req.mutable_tuning()->set_promote_knob(knob);
  req.mutable_tuning()->set_queue_order(std::move(order));
  req.mutable_tuning()->set_placement(std::move(placement));
  return req;
}

class TuningMasterTest : public MasterFixture {
 protected:
  // Every task the node is told to run reports running from now.
  void RunAll(int64_t node) {
    for (const v1::StartTask& s : Starts(Beat(node, running_))) {
      std::vector<int> gpus(s.gpu_indexes().begin(), s.gpu_indexes().end());
      running_.push_back(Task(s.task().job_id(), s.task().attempt(), 0,
                              TASK_STATE_RUNNING, gpus, {},
                              clock_.NowUnixSeconds().count()));
    }
    Beat(node, running_);
  }
  v1::TuningStatus Status() {
    absl::StatusOr<MasterState::Metrics> m = master_->SnapshotMetrics();
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->tuning : v1::TuningStatus();
  }
  std::vector<v1::TaskStatus> running_;
};

// One node of 2 GPUs, the paper's defaults (3600, no knob). A and B run
// from t; C waits (all in Q0, where running jobs keep their place). 100 s
// later the bound becomes 10 GPU-seconds: A and B are in Q1 now, and the
// pass stops one of them for C. /metrics shows the new settings, and a
// restarted master keeps them over its flags.
TEST_F(TuningMasterTest, AppliedAtOnceShownAndKeptOverTheFlags) {
  Open();
  const int64_t node = Register("n1", 2);
  const JobId a = Submit(Spec(1));
  const JobId b = Submit(Spec(1));
  Pass();
  RunAll(node);
  ASSERT_EQ(running_.size(), 2u);
  const JobId c = Submit(Spec(1));
  Pass();
  EXPECT_TRUE(Stops(Beat(node, running_)).empty());
  EXPECT_EQ(Status().source(), "flags");

  clock_.Advance(Seconds{100});
  absl::StatusOr<v1::TuningStatus> set =
      master_->SetTuning(Request({10}, 4, "start-time"), "root");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->source(), "applied");
  EXPECT_EQ(set->applied_by(), "root");
  EXPECT_EQ(set->tuning().placement(), "profiled");  // the policy's
  Pass();
  EXPECT_EQ(Stops(Beat(node, running_)).size(), 1u);
  EXPECT_EQ(Get(c).queue, 0);
  // The records follow at once: both in Q1, an event saying why, and no
  // promotion counted.
  for (JobId id : {a, b}) {
    const JobRecord rec = Get(id);
    EXPECT_EQ(rec.queue, 1) << id;
    EXPECT_EQ(rec.promotions, 0);
    absl::StatusOr<std::vector<JobEvent>> events =
        master_->EventsAfter(0, 10000);
    ASSERT_TRUE(events.ok());
    bool said = false;
    for (const JobEvent& e : *events) {
      said |= e.job_id == id && e.kind == "demoted" &&
              e.detail == "queue 0 -> 1: the scheduling settings changed";
    }
    EXPECT_TRUE(said) << id;
  }

  absl::StatusOr<MasterState::Metrics> m = master_->SnapshotMetrics();
  ASSERT_TRUE(m.ok());
  const std::string text = RenderPrometheusMetrics(*m);
  for (const char* line :
       {"tiresias_queue_threshold_gpu_seconds{queue=\"0\",source=\"applied\"} "
        "10\n",
        "tiresias_promote_knob{queue_order=\"start-time\"} 4\n",
        "tiresias_tuning_applied_timestamp_seconds 1100\n",
        "tiresias_tuning_drift 0\n"}) {
    EXPECT_THAT(text, HasSubstr(line));
  }

  master_.reset();
  clock_.Advance(Seconds{5});
  Open();
  const v1::TuningStatus after = Status();
  EXPECT_EQ(after.source(), "applied");
  ASSERT_EQ(after.tuning().thresholds_size(), 1);
  EXPECT_EQ(after.tuning().thresholds(0), 10);
  EXPECT_EQ(after.tuning().promote_knob(), 4);
  EXPECT_EQ(after.tuning().queue_order(), "start-time");
  EXPECT_EQ(after.applied_at(), 1100);
  EXPECT_EQ(Get(a).queue, 1);  // stored, not rebuilt from the flags

  // Back to the flags: at once, and at the next start.
  v1::SetTuningRequest reset;
  reset.set_reset(true);
  absl::StatusOr<v1::TuningStatus> back = master_->SetTuning(reset, "root");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->source(), "flags");
  EXPECT_EQ(back->tuning().thresholds(0), 3600);
  EXPECT_EQ(back->tuning().promote_knob(), 0);
  master_.reset();
  Open();
  EXPECT_EQ(Status().source(), "flags");
  EXPECT_EQ(Status().tuning().thresholds(0), 3600);
}

// Bad values name their field and change nothing; a change decided on
// settings that were replaced meanwhile is ABORTED.
TEST_F(TuningMasterTest, RefusalsNameTheFieldAndChangeNothing) {
  Open();
  struct Case {
    v1::SetTuningRequest req;
    const char* field;
  };
  std::vector<Case> cases = {
      {Request({3600, 100}, 0, "stable"), "tuning.thresholds"},
      {Request({-1}, 0, "stable"), "tuning.thresholds"},
      {Request({0.5}, 0, "stable"), "tuning.thresholds"},
      {Request({100}, 0.001, "stable"), "tuning.promote_knob"},
      {Request({100}, 1e7, "stable"), "tuning.promote_knob"},
      {Request({NAN}, 0, "stable"), "tuning.thresholds"},
      {Request({100}, -2, "stable"), "tuning.promote_knob"},
      {Request({100}, NAN, "stable"), "tuning.promote_knob"},
      {Request({100}, 0, "sideways"), "tuning.queue_order"},
      {Request({100}, 0, "stable", "nowhere"), "tuning.placement"},
  };
  Case note{Request({100}, 0, "stable"), "note"};
  note.req.set_note(std::string(1001, 'x'));
  cases.push_back(note);
  Case sizes{Request({100}, 0, "stable"), "window_sizes"};
  for (int i = 0; i < 2001; ++i) sizes.req.add_window_sizes(i);
  cases.push_back(sizes);
  Case bad_size{Request({100}, 0, "stable"), "window_sizes"};
  bad_size.req.add_window_sizes(-5);
  cases.push_back(bad_size);
  for (const Case& c : cases) {
    absl::StatusOr<v1::TuningStatus> s = master_->SetTuning(c.req, "root");
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(c.field));
    EXPECT_EQ(Status().source(), "flags");
  }
  v1::SetTuningRequest stale = Request({100}, 0, "stable");
  *stale.mutable_expected() = Request({7200}, 0, "stable").tuning();
  absl::StatusOr<v1::TuningStatus> s = master_->SetTuning(stale, "root");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(Status().source(), "flags");
  // The expected settings as they are: applied (placement left empty
  // means the one in force).
  v1::SetTuningRequest fresh = Request({100}, 0, "stable");
  *fresh.mutable_expected() = Request({3600}, 0, "stable").tuning();
  EXPECT_TRUE(master_->SetTuning(fresh, "root").ok());
  EXPECT_EQ(Status().source(), "applied");
}

// Tuned on 40 jobs of 1 to 40 GPU-seconds; then 40 jobs of about 1,000
// GPU-seconds finish: drift (KS D = 1). Before they finish there is none,
// and a new SetTuning starts the count again.
TEST_F(TuningMasterTest, DriftWhenFinishedJobsDifferFromTheWindowTunedOn) {
  Open();
  const int64_t node = Register("n1", 8);
  v1::SetTuningRequest req = Request({3600}, 0, "stable");
  for (int i = 1; i <= 40; ++i) req.add_window_sizes(i);
  ASSERT_TRUE(master_->SetTuning(req, "root").ok());
  EXPECT_FALSE(Status().drift());
  EXPECT_EQ(Status().drift_jobs_before(), 40);
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 8; ++i) Submit(Spec(1));
    Pass();
    RunAll(node);
    clock_.Advance(Seconds{1000});
    std::vector<v1::TaskStatus> ended = running_;
    for (v1::TaskStatus& t : ended)
      t.set_state(TASK_STATE_EXITED), t.set_exit_code(0);
    Beat(node, ended);
    running_.clear();
    Pass();
    Beat(node, {});
    if (round == 0) {
      EXPECT_EQ(Status().drift_jobs_recent(), 8);
      EXPECT_FALSE(Status().drift());  // 8 jobs: too few to say
    }
  }
  const v1::TuningStatus s = Status();
  EXPECT_EQ(s.drift_jobs_recent(), 40);
  EXPECT_DOUBLE_EQ(s.drift_statistic(), 1.0);
  EXPECT_LT(s.drift_p_value(), 1e-6);
  EXPECT_TRUE(s.drift());
  absl::StatusOr<MasterState::Metrics> m = master_->SnapshotMetrics();
  ASSERT_TRUE(m.ok());
  EXPECT_THAT(RenderPrometheusMetrics(*m),
              HasSubstr("tiresias_tuning_drift 1\n"));
  // Tuned again: the jobs since are counted from here.
  ASSERT_TRUE(master_->SetTuning(req, "root").ok());
  EXPECT_EQ(Status().drift_jobs_recent(), 0);
  EXPECT_FALSE(Status().drift());
}

}  // namespace
}  // namespace tiresias::master_testing

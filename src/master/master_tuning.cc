// MasterState: the scheduler's tuned settings (the K queues, PROMOTEKNOB,
// the order within a queue, placement), applied at run time by an admin
// (`tiresias tune --apply`: SetTuning), kept in the store over the flags,
// and judged against the jobs that finish since (drift: a two-sample KS
// test of job sizes against those of the window tuned on).
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/utf8.h"
#include "master/master_state.h"
#include "master/tuning_convert.h"
#include "tune/drift.h"

namespace tiresias {
namespace {

constexpr char kTuningSetting[] = "tuning";
constexpr int kMaxWindowSizes = 2000;
constexpr int kMaxRecentSizes = 2000;
constexpr size_t kMaxNoteBytes = 1000;
// Drift is looked at every this many finished jobs (and at every status).
constexpr int64_t kDriftCheckEvery = 25;

}  // namespace

Scheduler::Tuning MasterState::FlagsTuning() const { return flags_tuning_; }

absl::StatusOr<bool> MasterState::SetFlagsTuning(
    const Scheduler::Tuning& tuning) {
  v1::SetTuningRequest reset;
  reset.set_reset(true);
  {
    MutexLock lock(&mu_);
    flags_tuning_ = tuning;
    if (tuning_) return false;  // the applied settings stay in force
    v1::TuningStatus now;
    FillTuningStatus(&now);
    *reset.mutable_expected() = now.tuning();
  }
  absl::StatusOr<v1::TuningStatus> s =
      SetTuning(reset, "SIGHUP (configuration file)");
  // An admin applied settings meanwhile: theirs stay.
  if (absl::IsAborted(s.status())) return false;
  RETURN_IF_ERROR(s.status());
  return true;
}

absl::Status MasterState::LoadTuning() {
  ASSIGN_OR_RETURN(std::optional<std::string> bytes,
                   store_->GetSetting(kTuningSetting));
  if (!bytes || bytes->empty()) return absl::OkStatus();  // empty: reset
  v1::StoredTuning stored;
  const std::string where =
      absl::StrCat(options_.state_dir, "/state.db: settings \"tuning\"");
  if (!stored.ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrCat(where, ": not a serialized StoredTuning"));
  }
  if (absl::StatusOr<Scheduler::Tuning> t =
          TuningFromProto(stored.request().tuning());
      !t.ok()) {
    return absl::DataLossError(absl::StrCat(where, ": ", t.status().message()));
  }
  const std::string& placement = stored.request().tuning().placement();
  if (!placement.empty()) {
    if (absl::Status s =
            MakePlacer(placement, options_.placement_options).status();
        !s.ok()) {
      return absl::DataLossError(absl::StrCat(where, ": ", s.message()));
    }
  }
  std::string flags_placement = options_.placement;
  if (flags_placement.empty()) {
    if (absl::StatusOr<std::unique_ptr<Policy>> policy =
            MakePolicy(options_.policy, PolicyOptions{});
        policy.ok()) {
      flags_placement = std::string((*policy)->traits().default_placement);
    }
  }
  v1::Tuning flags;
  TuningToProto(FlagsTuning(), flags_placement, &flags);
  v1::Tuning in_force = stored.request().tuning();
  if (in_force.placement().empty()) in_force.set_placement(flags_placement);
  if (!SameTuning(flags, in_force)) {
    std::fprintf(stderr,
                 "tiresias master: the scheduling settings %s applied by %s "
                 "(tune) are in force over the flags' (%s)\n",
                 DescribeTuning(in_force).c_str(), stored.applied_by().c_str(),
                 DescribeTuning(flags).c_str());
  }
  tuning_ = std::move(stored);
  return absl::OkStatus();
}

absl::StatusOr<v1::TuningStatus> MasterState::SetTuning(
    const v1::SetTuningRequest& req, const std::string& who) {
  if (req.reset()) {
    // Back to the flags: their settings, and no stored ones.
    v1::SetTuningRequest flags;
    {
      MutexLock lock(&mu_);
      TuningToProto(FlagsTuning(), options_.placement, flags.mutable_tuning());
    }
    if (req.has_expected()) *flags.mutable_expected() = req.expected();
    return ApplyTuning(flags, who, /*store=*/false);
  }
  return ApplyTuning(req, who, /*store=*/true);
}

absl::StatusOr<v1::TuningStatus> MasterState::ApplyTuning(
    const v1::SetTuningRequest& req, const std::string& who, bool store) {
  ASSIGN_OR_RETURN(Scheduler::Tuning tuning, TuningFromProto(req.tuning()));
  const std::string& placement = req.tuning().placement();
  if (!placement.empty()) {
    if (absl::Status s =
            MakePlacer(placement, options_.placement_options).status();
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuning.placement: ", s.message()));
    }
  }
  if (req.note().size() > kMaxNoteBytes ||
      FirstInvalidUtf8(req.note()) != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "note: expected at most ", kMaxNoteBytes, " bytes of UTF-8"));
  }
  if (req.window_sizes_size() > kMaxWindowSizes) {
    return absl::InvalidArgumentError(
        absl::StrCat("window_sizes: ", req.window_sizes_size(),
                     " sizes; expected at most ", kMaxWindowSizes));
  }
  for (double size : req.window_sizes()) {
    if (!std::isfinite(size) || size < 0) {
      return absl::InvalidArgumentError(
          "window_sizes: expected non-negative, finite GPU-seconds");
    }
  }
  MutexLock lock(&mu_);
  v1::TuningStatus before;
  FillTuningStatus(&before);
  v1::Tuning expected = req.expected();
  if (expected.placement().empty()) expected.set_placement(placement_);
  if (req.has_expected() && !SameTuning(expected, before.tuning())) {
    return absl::AbortedError(
        absl::StrCat("the scheduling settings were changed meanwhile (now ",
                     DescribeTuning(before.tuning()),
                     "): tune again on the settings in force"));
  }
  v1::StoredTuning stored;
  *stored.mutable_request() = req;
  stored.mutable_request()->clear_expected();
  stored.mutable_request()->DiscardUnknownFields();
  stored.set_applied_at(clock_->NowUnixSeconds().count());
  stored.set_applied_by(who);
  // A reset stores nothing (an empty row: the flags' at the next start).
  RETURN_IF_ERROR(store_->PutSetting(
      kTuningSetting, store ? stored.SerializeAsString() : std::string()));
  // Durable: now in force. Neither step can fail on checked settings.
  const Seconds now = clock_->NowUnixSeconds();
  RETURN_IF_ERROR(scheduler_->Retune(tuning, now));
  // Records follow the queues the new bounds gave (an event each, not
  // counted as a promotion: the job's service did not change).
  for (auto& [id, rec] : records_) {
    if (IsFinal(rec.state)) continue;
    const Job* job = scheduler_->Find(id);
    if (job == nullptr || job->queue() == rec.queue) continue;
    AddEvent(
        id, now,
        job->queue() < rec.queue ? EventKind::kPromoted : EventKind::kDemoted,
        absl::StrCat("queue ", rec.queue, " -> ", job->queue(),
                     ": the scheduling settings changed"));
    rec.queue = job->queue();
    MarkDirty(id);
  }
  if (store) {
    tuning_ = std::move(stored);
  } else {
    tuning_.reset();
  }
  const std::string new_placement =
      placement.empty()
          ? std::string(scheduler_->policy().traits().default_placement)
          : placement;
  if (new_placement != placement_) {
    ASSIGN_OR_RETURN(std::unique_ptr<Placer> placer,
                     MakePlacer(new_placement, options_.placement_options));
    scheduler_->SetPlacer(std::move(placer));
    placement_ = new_placement;
    RETURN_IF_ERROR(ApplyPackLimit());  // profiled: the learnt PACKLIMIT
  }
  // Drift is judged from here on against the new window.
  recent_sizes_.clear();
  drift_.reset();
  finished_since_drift_check_ = 0;
  drift_said_ = false;
  reasons_pass_ = -1;
  pass_wanted_ = true;
  v1::TuningStatus status;
  FillTuningStatus(&status);
  return status;
}

void MasterState::FillTuningStatus(v1::TuningStatus* out) {
  TuningToProto(scheduler_->tuning(), placement_, out->mutable_tuning());
  if (!tuning_) {
    out->set_source("flags");
    return;
  }
  out->set_source("applied");
  out->set_applied_at(tuning_->applied_at());
  out->set_applied_by(tuning_->applied_by());
  out->set_note(tuning_->request().note());
  const auto& window = tuning_->request().window_sizes();
  if (!drift_) {
    drift_ = TestDrift(
        std::vector<double>(window.begin(), window.end()),
        std::vector<double>(recent_sizes_.begin(), recent_sizes_.end()));
  }
  const DriftTest& drift = *drift_;
  out->set_drift_jobs_before(drift.n_before);
  out->set_drift_jobs_recent(drift.n_recent);
  out->set_drift_statistic(drift.statistic);
  out->set_drift_p_value(drift.p_value);
  out->set_drift(drift.drift);
}

void MasterState::NoteFinishedForDrift(const JobRecord& rec) {
  // As `tune` takes its baseline: finished jobs that hold GPUs.
  if (!tuning_ || rec.spec.num_gpus <= 0) return;
  recent_sizes_.push_back(rec.spec.num_gpus * rec.total_executed.count());
  drift_.reset();
  if (static_cast<int>(recent_sizes_.size()) > kMaxRecentSizes) {
    recent_sizes_.pop_front();
  }
  if (++finished_since_drift_check_ < kDriftCheckEvery) return;
  finished_since_drift_check_ = 0;
  v1::TuningStatus status;
  FillTuningStatus(&status);
  if (status.drift() && !drift_said_) {
    std::fprintf(stderr,
                 "tiresias master: drift: the sizes of the last %lld finished "
                 "jobs differ from the %lld the scheduling settings were "
                 "tuned on (KS D = %.3f, p = %.2g): tune again "
                 "(`tiresias tune`)\n",
                 static_cast<long long>(status.drift_jobs_recent()),
                 static_cast<long long>(status.drift_jobs_before()),
                 status.drift_statistic(), status.drift_p_value());
  }
  drift_said_ = status.drift();
}

}  // namespace tiresias

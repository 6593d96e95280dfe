// MasterState: PACKLIMIT learnt from the cluster's own runs (Tiresias,
// NSDI'19, Section 4.2). Each launch that ran under the traffic profiler
// gives a run: its job's signature, tensor skew, placement (spread over
// servers or not) and iteration time. Runs are stored as they are measured
// (Store::AddPlacementRun), so a restarted master refits on all of them;
// place/pack_limit_runs.h pairs runs of a signature measured both ways into
// classifier samples. With `profiled` placement the scheduler's placer is
// replaced when the learnt PACKLIMIT moves.
#include <cstdio>

#include "absl/strings/str_format.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

bool MasterState::LearnsPackLimit() const {
  return options_.learn_pack_limit && placement_ == kProfiledPlacement;
}

absl::Status MasterState::LoadPlacementRuns() {
  PackLimitOptions learning = options_.pack_limit_learning;
  learning.start = options_.placement_options.pack_limit;
  ASSIGN_OR_RETURN(PackLimitRuns runs, PackLimitRuns::Create(learning));
  ASSIGN_OR_RETURN(std::vector<PlacementRunRecord> stored,
                   store_->ListPlacementRuns());
  for (const PlacementRunRecord& r : stored) {
    // The store refuses what Add would: a bad row is a damaged file.
    if (absl::Status added = runs.Add({r.job, r.attempt}, r.run);
        !added.ok()) {
      return absl::DataLossError(absl::StrCat(
          options_.state_dir, "/state.db: placement_runs: ", added.message()));
    }
  }
  runs.Refit();
  pack_runs_ = std::move(runs);
  last_pack_refit_ = clock_->NowMonotonic();
  return ApplyPackLimit();
}

absl::Status MasterState::ApplyPackLimit() {
  if (!LearnsPackLimit()) return absl::OkStatus();
  PlacementOptions placement = options_.placement_options;
  placement.pack_limit = pack_runs_->pack_limit();
  ASSIGN_OR_RETURN(std::unique_ptr<Placer> placer,
                   MakePlacer(kProfiledPlacement, placement));
  scheduler_->SetPlacer(std::move(placer));
  return absl::OkStatus();
}

bool MasterState::WantsProfile(const JobRecord& rec, bool spread) const {
  if (!PlacementSkew(rec.profile)) return true;
  return pack_runs_->RunsOf(JobSignature(rec.spec), spread) <
         options_.profiled_runs_per_placement;
}

void MasterState::RecordPlacementRun(Launch& launch, const JobProfile& measured,
                                     Seconds now) {
  if (!measured.periodic || !measured.tensor_skew || !measured.iteration_s ||
      *measured.iteration_s <= 0) {
    return;
  }
  if (launch.measured && !BetterProfile(measured, *launch.measured)) return;
  auto rec = records_.find(launch.job);
  if (rec == records_.end()) return;
  launch.measured = measured;
  PlacementRunRecord run{
      .job = launch.job,
      .attempt = launch.attempt,
      .time = now,
      .run = {.signature = JobSignature(rec->second.spec),
              .skew = *measured.tensor_skew,
              .spread = launch.parts.size() > 1,
              .iteration_s = *measured.iteration_s}};
  // Checked by OnProfile (a finite skew in [0, 1], a finite time): Add
  // cannot refuse it. A failed write loses this run's sample only.
  if (absl::Status added = pack_runs_->Add({run.job, run.attempt}, run.run);
      !added.ok()) {
    return;
  }
  if (absl::Status saved = store_->AddPlacementRun(run); !saved.ok()) {
    std::fprintf(stderr, "tiresias master: placement run of job %lld: %s\n",
                 static_cast<long long>(run.job), saved.ToString().c_str());
  }
}

void MasterState::MaybeRefitPackLimit() {
  if (!pack_runs_->dirty()) return;
  const Seconds now = clock_->NowMonotonic();
  if (now - last_pack_refit_ < options_.pack_limit_refresh) return;
  last_pack_refit_ = now;
  const double before = pack_runs_->pack_limit();
  if (!pack_runs_->Refit() || !LearnsPackLimit()) return;
  if (absl::Status applied = ApplyPackLimit(); !applied.ok()) {
    std::fprintf(stderr, "tiresias master: PACKLIMIT: %s\n",
                 applied.ToString().c_str());
    return;
  }
  std::fprintf(stderr,
               "tiresias master: PACKLIMIT %.4f -> %.4f (%lld samples, %s)\n",
               before, pack_runs_->pack_limit(),
               static_cast<long long>(pack_runs_->samples()),
               std::string(PackLimitFitName(pack_runs_->fit())).c_str());
  pass_wanted_ = true;
}

}  // namespace tiresias

// MasterState: job arrays stored as one record (issue 28), as Slurm keeps
// an array until its tasks split off. `submit --array 1-10000` writes one
// row, its first job's, and admits that job alone; the other jobs exist as
// the row's count (Store::SplitArray): every read shows them as pending
// jobs, they count as unfinished jobs of their array (dependencies on the
// array wait for them), and `jobs`, `job N`, metrics and history see them
// as any waiting job.
//
// They are written and admitted (split off, in index order) when needed:
//   - by the scheduler: before and after every pass, an array not
//     submitted held keeps enough written jobs waiting that the pass could
//     start as many as the cluster has room for (SplitWindow), so the
//     array's order and the scheduler's decisions are those of the whole
//     array: its unwritten jobs are identical to its last written one and
//     behind it in the queue, and a pass cannot start more jobs of N GPUs
//     than the cluster's GPUs / N;
//   - by a user's action on one of them (cancel, hold, release, requeue,
//     update; `cancel --array` and the like act on all of them): the array
//     is split through that job first, so every action sees an ordinary
//     job in memory. Splitting a prefix keeps the unwritten jobs a suffix
//     of the array: ids array + split .. array + count - 1.
// A split is one store transaction; a master that restarts reloads the
// arrays with unwritten jobs (Load) and goes on.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/job_array.h"
#include "core/status_macros.h"
#include "master/master_state.h"

namespace tiresias {

namespace {

// How many of an array's jobs wait written for a pass: one more than the
// cluster could start at once (by GPUs, or by spare CPUs for a CPU-only
// job), so that a pass that starts all it can still finds one left behind
// them.
int SplitWindow(const ArraySplits::Array& a, const Cluster* cluster) {
  constexpr int kMinWindow = 2;
  if (cluster == nullptr) return kMinWindow;
  int could_start = 0;
  if (a.gpus > 0) {
    could_start = cluster->total_gpus() / a.gpus;
  } else {
    const Topology& topology = cluster->topology();
    int64_t cpus = 0;
    for (int s = 0; s < topology.num_servers(); ++s) {
      cpus += topology.server(s).spare_cpus;
    }
    could_start = static_cast<int>(
        std::min<int64_t>(cpus / std::max(a.cpus, 1), kMaxArrayJobs));
  }
  return std::max(kMinWindow, could_start + 1);
}

}  // namespace

void MasterState::AddSplittingLocked(const JobRecord& head) {
  if (!splits_.Add(head, scheduler_->back_position())) return;
  // The array's unwritten jobs have not ended (AdmitLocked counted the
  // first).
  deps_.AddArrayJobs(head.id, head.array_count - std::max(head.array_split, 1));
}

absl::Status MasterState::SplitArrayLocked(JobId array_id, int split_to,
                                           Seconds now) {
  auto known = splits_.arrays().find(array_id);
  if (known == splits_.arrays().end()) return absl::OkStatus();
  const ArraySplits::Array a = known->second;
  ASSIGN_OR_RETURN(std::vector<JobRecord> jobs,
                   store_->SplitArray(array_id, a.split, split_to));
  splits_.Split(array_id, split_to);
  // Counted unfinished already (AddSplittingLocked) and as accepted; each
  // joins the queue where it would have at the array's submission. Every
  // one is admitted: only a broken invariant fails, and a job left out
  // would not run until a restart.
  absl::Status admitted;
  for (JobRecord& rec : jobs) {
    const double position =
        a.anchor + static_cast<double>(rec.id - array_id) / a.count;
    const JobId id = rec.id;
    if (absl::Status one = AdmitRecordLocked(std::move(rec), now, position);
        !one.ok()) {
      std::fprintf(stderr, "tiresias master: invariant: job %lld: %s\n",
                   static_cast<long long>(id),
                   std::string(one.message()).c_str());
      admitted.Update(one);
    }
  }
  if (!jobs.empty()) {
    pass_wanted_ = true;
    EventsWritten();  // their "submitted" events
  }
  return admitted;
}

absl::Status MasterState::SplitThroughLocked(JobId job, Seconds now) {
  const std::optional<JobId> array = splits_.Holding(job);
  if (!array) return absl::OkStatus();
  return SplitArrayLocked(*array, static_cast<int>(job - *array) + 1, now);
}

void MasterState::UnwrittenView(JobRecord& rec, JobId array,
                                Seconds now) const {
  auto a = splits_.arrays().find(array);
  if (!rec.held && a != splits_.arrays().end()) {
    // The array's written jobs, newest first: the first one waiting and not
    // held by its user (a few steps back at most: the window).
    constexpr int kLookBack = 64;
    const JobId last = array + a->second.split - 1;
    for (JobId id = last; id >= array && id > last - kLookBack; --id) {
      auto it = records_.find(id);
      if (it == records_.end() || it->second.held ||
          it->second.state != JobRecordState::kPending ||
          IsStarting(it->second)) {
        continue;
      }
      std::optional<PendingReason> reason = PendingReasonOf(it->second, now);
      if (!reason) break;
      // Behind that job in the queue: waiting for GPUs, it waits behind it
      // and the jobs between them as well.
      const int between = static_cast<int>(rec.id - id);
      switch (reason->kind) {
        case PendingReasonKind::kNextPass:
        case PendingReasonKind::kResources:
        case PendingReasonKind::kPlacement:
          reason->kind = PendingReasonKind::kPriority;
          reason->ahead = between;
          break;
        case PendingReasonKind::kPriority:
          reason->ahead += between;
          break;
        default:
          break;
      }
      rec.waiting_on_dependencies = deps_.Waiting(id);
      rec.pending_reason = FormatPendingReason(*reason);
      rec.pending_reason_kind = static_cast<int>(reason->kind);
      return;
    }
  }
  FillPendingReason(rec, now);
}

bool MasterState::TopUpSplitsLocked(Seconds now) {
  std::vector<std::pair<JobId, int>> splits;
  for (const auto& [array_id, a] : splits_.arrays()) {
    if (a.held) continue;  // its unwritten jobs wait for a user's release
    const int window = SplitWindow(a, cluster_.get());
    // The written jobs that wait to start for the first time: unfinished
    // ones of the array are in records_, by id.
    int waiting = 0;
    for (auto it = records_.lower_bound(array_id);
         it != records_.end() && it->first < array_id + a.split &&
         waiting < window;
         ++it) {
      const JobRecord& rec = it->second;
      if (rec.state == JobRecordState::kPending && rec.attempt == 0 &&
          !rec.held && !rec.cancel_requested) {
        ++waiting;
      }
    }
    if (waiting < window) {
      splits.emplace_back(array_id,
                          std::min(a.count, a.split + window - waiting));
    }
  }
  bool any = false;
  for (const auto& [array_id, split_to] : splits) {
    if (absl::Status split = SplitArrayLocked(array_id, split_to, now);
        !split.ok()) {
      // Left unwritten: the next pass tries again.
      std::fprintf(stderr, "tiresias master: array %lld: %s\n",
                   static_cast<long long>(array_id),
                   std::string(split.message()).c_str());
      continue;
    }
    any = true;
  }
  return any;
}

}  // namespace tiresias

// The scheduling core ("one brain, two bodies"): decides which jobs run on
// which GPUs and which running jobs are preempted. The simulator and the
// master daemon drive this same class.
//
// Pure: it reads no clock, opens no socket, spawns no thread; time comes in
// as `now`, randomness from a generator seeded at construction. Jobs are
// kept in priority order incrementally (O(log n) per change), so a pass costs
// O(jobs that fit + jobs skipped) plus O(log n) per decision, not a sort of
// every job.
//
// A host calls Submit / Finish as those events happen, and Schedule after
// each batch of events at one instant and at NextWakeup() (a demotion or
// promotion instant). Schedule applies its decisions to the job records and
// to the cluster's allocation, and returns them so the host can act (start
// or stop processes). Not thread-safe.
//
// One pass, for a preemptive policy: walk the jobs in priority order. A
// running job keeps its GPUs unless a higher-priority job took them. A
// waiting job is placed on the free GPUs if it can; if not, the
// lowest-priority running jobs behind it are set aside one at a time until
// it fits, and only those whose GPUs it takes are preempted. A job that
// cannot fit even so (or by GPU count) is skipped, so smaller jobs behind
// it can run: no head-of-line blocking, and a job that fragmentation keeps
// out preempts no one.
// A non-preemptive policy only walks waiting jobs over the free GPUs.
//
// CPU-only jobs (JobSpec::cpu_only: no GPU, some CPUs) are outside the GPU
// queues, first come first served for spare CPUs (FillSpareCpus).
#ifndef TIRESIAS_SCHED_SCHEDULER_H_
#define TIRESIAS_SCHED_SCHEDULER_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cells.h"
#include "core/cluster.h"
#include "core/free_counts.h"
#include "core/job.h"
#include "core/placer.h"
#include "core/rng.h"
#include "core/server_set.h"
#include "sched/policy.h"
#include "sched/queues.h"
#include "sched/scheduler_options.h"
#include "sched/vcs.h"
#include "sched/walk_kept.h"
#include "sched/walk_left.h"

namespace tiresias {

struct StartDecision {
  JobId job;
  std::vector<GpuId> gpus;
  bool resumed;  // it had run before (restore from a checkpoint)
  int cpu_server = -1;  // a CPU-only job: the server whose spare CPUs
};

struct Decisions {
  std::vector<JobId> preempted;
  std::vector<StartDecision> started;
  // Jobs whose queue changed at this pass's wakeups (demoted, or promoted
  // with their executed time reset): a host that mirrors jobs need re-read
  // only these and the ones above.
  std::vector<JobId> requeued;
  bool empty() const { return preempted.empty() && started.empty(); }
};

class Scheduler {
 public:
  Scheduler(std::unique_ptr<Policy> policy, std::unique_ptr<Placer> placer,
            SchedulerOptions options);

  const Policy& policy() const { return *policy_; }
  const Placer& placer() const { return *placer_; }
  // Swaps the placement scheme (a refreshed PACKLIMIT): every unfinished
  // job's scheme is read again from `placer`, so the next pass places by it.
  // Call between passes. O(jobs).
  void SetPlacer(std::unique_ptr<Placer> placer);
  const SchedulerOptions& options() const { return options_; }

  // What `tiresias tune` changes on a live scheduler (scheduler_tuning.cc).
  struct Tuning {
    QueueConfig queues = QueueConfig::PaperDefault();
    double promote_knob = std::numeric_limits<double>::infinity();
    QueueOrder queue_order = QueueOrder::kStable;
  };
  Tuning tuning() const {
    return {options_.queues, options_.promote_knob, options_.queue_order};
  }
  // Changes them at `now`, between passes: every unfinished job goes to
  // the queue its attained service falls in under the new bounds, keeping
  // its relative order; wakeups and the policy's per-queue state
  // (Policy::SetQueues) are redone; the next pass may preempt. Jobs whose
  // queue changed are in the next pass's Decisions::requeued. Fails,
  // changing nothing, on a knob that is not positive. O(jobs log jobs).
  absl::Status Retune(const Tuning& tuning, Seconds now);

  // A new job, waiting in queue 0 (a CPU-only one in the CPU-only queue).
  // Fails on a duplicate id, a negative GPU count, no GPU and no CPU, or a
  // missing duration under an oracle policy.
  absl::Status Submit(JobSpec spec, Seconds now);
  // The last back-of-list place given (Job::queue_position, stable order):
  // a job Restored between it and the next place sorts there.
  double back_position() const { return back_pos_; }
  // Adds a job record as it stands (from a snapshot or a restarted master).
  // A running job must already hold its GPUs in the cluster it will be
  // scheduled with; with VCs it borrows until ChangeVcs adopts it.
  absl::Status Restore(const Job& job, Seconds now);
  // Swaps in a corrected record for the unfinished job `job.id()` (the
  // master's accounting from agents' reported times), re-keying it and its
  // wakeups. Leaves the cluster alone: a running record must keep the GPUs
  // the old one holds. O(log n).
  absl::Status Replace(const Job& job, Seconds now);
  // The running job `id` ended at `now`; its GPUs go back to `cluster`.
  absl::Status Finish(JobId id, Seconds now, Cluster& cluster);
  // Removes an unfinished job (cancelled, failed) at `now`, freeing its GPUs.
  absl::Status Remove(JobId id, Seconds now, Cluster& cluster);
  // Holds a waiting job: it keeps its record, queue and place in its queue
  // but is never started (nor promoted) until Release. FailedPrecondition
  // for a running or finished job; holding a held job changes nothing.
  // Replace keeps a held job held. O(log n).
  absl::Status Hold(JobId id);
  // A held job waits again from its place (its key as if never held, its
  // promotion wakeup re-armed). Releasing one not held changes nothing.
  absl::Status Release(JobId id, Seconds now);
  bool held(JobId id) const;
  // Stops a running job at `now` as a preemption (a user's requeue): its
  // GPUs go back to `cluster` and it waits again with its counters. The
  // host stops its tasks. FailedPrecondition unless it runs.
  absl::Status Requeue(JobId id, Seconds now, Cluster& cluster);

  // The cluster's capacity changed other than through Finish or Remove (a
  // new Cluster with more servers, a server cordoned or uncordoned): the
  // next pass walks the jobs even if no job changed. A pass with nothing
  // changed since the last one is otherwise skipped.
  void CapacityChanged() { dirty_ = true; }

  // For tests: the preemptive walk keeps the running jobs ahead of every
  // waiting job it visits, not only of those it may place (see
  // PreemptiveWalk), so that a test can hold both to the same decisions.
  void KeepEagerlyForTesting() { eager_keep_ = true; }

  // One scheduling pass at `now` (see the file comment). `now` must not go
  // backwards between calls.
  Decisions Schedule(Seconds now, Cluster& cluster);
  // The next instant the policy wants a pass even if nothing else happens
  // (a demotion or promotion); kNever if none.
  Seconds NextWakeup() const;

  // The job's record; nullptr if unknown. Valid until the next Submit or
  // Restore.
  const Job* Find(JobId id) const;
  // Every job ever submitted or restored, in that order, finished ones too.
  const std::vector<Job>& jobs() const { return jobs_; }
  int num_waiting() const {
    return static_cast<int>(all_.waiting.size() + cpu_waiting_.size());
  }
  // Calls fn(const Job&) for every waiting job in priority order (the
  // order the last pass walked them in), then every waiting CPU-only job
  // in its queue's order. O(waiting jobs).
  template <typename Fn>
  void ForEachWaiting(Fn&& fn) const {
    for (const Entry& e : all_.waiting) fn(jobs_[e.index]);
    for (const auto& [at, index] : cpu_waiting_) fn(jobs_[index]);
  }
  int num_running() const;

  // Priority levels (QOS, scheduler_qos.cc). A job whose JobSpec::qos
  // names one is ordered by its priority before anything else (a higher
  // one first, in every walk: so it may preempt jobs of lower levels,
  // and its VC's borrowers are reclaimed by level first), then by the
  // per-user share and the policy's key. A job whose user's running jobs
  // of its QOS hold more than max_gpus_per_user GPUs with it waits, and
  // holds no one back (no head-of-line blocking, no preemption for it);
  // running jobs are never stopped for the limit. A job naming no QOS, or
  // one not in the list, has none (level 0, no limit). Call at any time:
  // every unfinished job is re-keyed. Fails, changing nothing, on a
  // duplicate name. O(jobs log jobs).
  absl::Status SetQos(std::vector<QosSpec> qos, Seconds now);
  const std::vector<QosSpec>& qos() const { return qos_specs_; }
  // Unfinished job `id`'s QOS (an index into qos(), -1: none) and the
  // GPUs its user's running jobs of that QOS hold now.
  struct QosUse {
    int qos = -1;
    int user_gpus = 0;
  };
  QosUse QosUseOf(JobId id) const;

  // Virtual clusters (see the file comment): every job then belongs to one
  // (JobSpec::vc; "" is the VC named "" if there is one, else the first).
  // Call once, before any job is added. Fails, changing nothing, on a
  // duplicate name or quotas whose cells do not fit `topology` at once
  // (CheckVcsFit). `topology` must be the one of every cluster passed to
  // Schedule.
  absl::Status SetVcs(std::vector<VcSpec> vcs, const Topology& topology);
  // Sets or changes the VCs at any time (the master: an admin changed
  // them, or the cluster changed under them; empty: none), at `now`.
  // Quotas need not fit (degraded: a cell that cannot be bound fails its
  // job's start, counted in bind_failures). Every running job is adopted
  // into its VC's cells where it runs (first those that held their quota,
  // the largest first) when the cells can take it without breaking the
  // safety of core/cells.h where it held; else it borrows. Fails, changing
  // nothing, on a duplicate name or an unfinished job whose VC is not in
  // `vcs`. O(jobs x cells x servers).
  absl::Status ChangeVcs(std::vector<VcSpec> vcs, const Topology& topology,
                         Seconds now);
  const std::vector<VcSpec>& vcs() const { return vc_specs_; }
  // The VC of unfinished job `id` (an index into vcs()), or -1 without VCs
  // (or for a finished or unknown job).
  int VcOf(JobId id) const;
  // Whether the running job `id` runs on its VC's quota (else it borrows).
  bool Guaranteed(JobId id) const;
  struct VcUsage {
    int quota = 0;       // GPUs
    int guaranteed = 0;  // GPUs its jobs hold in its quota
    int borrowed = 0;    // GPUs its jobs hold beyond it
    int waiting_jobs = 0;
    int bound_cells = 0;
  };
  VcUsage Usage(int vc) const;
  // Which physical cell each of VC `vc`'s cells is bound to (server -1:
  // not bound), in vcs()[vc].cells' order.
  std::vector<PhysicalCell> BoundCells(int vc) const;
  // VC `vc`'s quota as a cluster of its cells (virtual GPUs); null when it
  // has no cells.
  const Cluster* VcCluster(int vc) const { return vcs_[vc].cluster.get(); }
  // The virtual GPUs a guaranteed running job holds there (empty else).
  const std::vector<GpuId>& VirtualGpus(JobId id) const;
  // Starts the walk refused because a cell could not be bound (no free
  // block held it: only when servers are cordoned, given CheckVcsFit).
  int64_t bind_failures() const { return bind_failures_; }
  // Borrowers preempted to give a VC its quota back, so far.
  int64_t reclaims() const { return reclaims_; }
  // Whether every VC's unbound cells could still be bound at once (HiveD's
  // safety: core/cells.h). O(cells x servers).
  bool UnboundCellsFit() const;
  // What borrowers may hold in all on `cluster` now, as a pass counts it:
  // the GPUs no quota holds (drained ones aside) and each VC's idle quota
  // up to its lending limit; `lend_limited` when a lending limit keeps the
  // pool smaller than the idle quotas; `borrowed`: what borrowers hold.
  // O(VCs).
  struct BorrowRoom {
    int pool = 0;
    int borrowed = 0;
    bool lend_limited = false;
  };
  BorrowRoom Lendable(const Cluster& cluster) const;

 private:
  struct Entry {
    PriorityKey key;
    uint32_t index;
    int32_t gpus = 0;  // the job's GPU count, so a walk need not read jobs_
    auto operator<=>(const Entry&) const = default;
  };
  // Jobs in priority order: absl's B-tree with nodes of about 2 KiB, 36
  // of these 56-byte entries (btree_set's 256 bytes hold 4: a walk
  // through the running and waiting jobs followed a pointer every 4 jobs;
  // `las` replays 1.1x faster, BENCHMARKS.md). Its internal template, as
  // btree_set is declared with it.
  using EntrySet = absl::container_internal::btree_set_container<
      absl::container_internal::btree<absl::container_internal::set_params<
          Entry, std::less<Entry>, std::allocator<Entry>,
          /*TargetNodeSize=*/2048, /*IsMulti=*/false>>>;
  using Wakeup = std::pair<double, uint32_t>;  // (instant seconds, index)

  absl::Status Admit(Job job, Seconds now);
  // The index of job `id`; NotFound ("job N not found") if none.
  absl::StatusOr<uint32_t> IndexOf(JobId id) const;
  // QueueOrder::kStable. A queue's list is ordered by (tier, pos): the
  // running jobs that kept their place, then the waiting ones, then the
  // running ones demoted into it since the last pass; each tier by
  // Job::queue_position.
  enum class Tier : int8_t { kRunning = 0, kWaiting = 1, kJoined = 2 };
  // Puts the job at the back (or front) of `tier`. The caller re-keys it.
  void Join(uint32_t index, Tier tier, bool front = false);
  // After a pass: the started jobs and the demoted jobs still running join
  // the running tier, the preempted ones the waiting tier, in list order.
  void Settle(Seconds now, const Decisions& decisions);
  // The key as stored: for a running job with a linear drift, k1 is
  // normalized to time 0 (k1 - slope x now) so its group's order holds.
  PriorityKey StoredKey(uint32_t index, Seconds now, double* slope) const;
  void Enqueue(uint32_t index, Seconds now);  // into the waiting or a group
  void Insert(uint32_t index, const PriorityKey& key, double slope);
  void Dequeue(uint32_t index);
  void Rekey(uint32_t index, Seconds now);
  void ScheduleWakeups(uint32_t index, Seconds now);
  void ClearWakeups(uint32_t index);
  void ProcessWakeups(Seconds now, std::vector<JobId>* requeued);
  void Demote(uint32_t index, int queue, Seconds now,
              std::vector<JobId>* requeued);
  void RefreshRunningKeys(Seconds now);
  void RekeyAll(Seconds now);

  void PreemptiveWalk(Seconds now, Cluster& cluster, Decisions* decisions);
  // Sets up a cursor per running group; true when every running job
  // outranks every waiting one (then no cursor is needed).
  bool InitCursors(Seconds now);
  struct Cursor;
  Entry KeyAt(const Cursor& c, const Entry& stored, Seconds now) const;
  bool Displaced(uint32_t index) const;
  // Keeps every running job not yet visited (nor displaced) ahead of
  // `next`, taking its GPUs from *capacity; whether there was one.
  bool KeepAheadOf(const Entry& next, Seconds now, const Cluster& cluster,
                   int* capacity);
  // The lowest-priority running job behind the walk not yet set aside,
  // and its GPU count (if `gpus` is not null).
  bool PopLowestRunning(Seconds now, uint32_t* index, int* gpus = nullptr);
  // The one server of running job `index`'s GPUs (without VCs), or < 0:
  // on several (or with VCs). Read from its record once per run.
  int32_t OneServerOf(uint32_t index, const Topology& topo);
  // Places a waiting job during the walk (allocating its GPUs), displacing
  // lower-priority running jobs if it must. The job starts at commit.
  bool PlaceInWalk(uint32_t index, Seconds now, Cluster& cluster);
  // Sets aside the lowest-priority running jobs until job `index` fits,
  // keeps those it can do without, and places it: true with its GPUs
  // allocated, scratch_released_ the jobs set aside (GPUs released). False,
  // changing nothing, if it does not fit with all of them aside. By counts
  // (FreeCounts) for a `rule` other than kOther, else in the cluster.
  bool SetAside(uint32_t index, Placer::FitRule rule, Seconds now,
                Cluster& cluster);
  bool SetAsideInCluster(uint32_t index, Seconds now, Cluster& cluster);
  // False when a VC's job could not have its cells bound (it waits; its
  // virtual GPUs were given back).
  bool CommitStart(uint32_t index, Seconds now, std::vector<GpuId> gpus,
                   Decisions* decisions);
  // Starts waiting jobs in priority order on the free GPUs, skipping (or,
  // with head-of-line blocking, stopping at) jobs that do not fit.
  void FillFreeGpus(Seconds now, Cluster& cluster, bool head_of_line_blocking,
                    Decisions* decisions);
  // Places job `index` on `cluster`'s free GPUs (into scratch_gpus_) and
  // allocates them; false, changing nothing, if it does not fit.
  bool PlaceAndAllocate(uint32_t index, Cluster& cluster);
  bool TryStart(uint32_t index, Seconds now, Cluster& cluster,
                Decisions* decisions);
  // The key a running job displaced during the walk waits with.
  Entry DisplacedEntry(uint32_t index, Seconds now) const;
  // Marks a running job preempted; the caller has released its GPUs.
  void Preempt(uint32_t index, Seconds now, Decisions* decisions);
  int MinWaitingGpus() const;
  // Starts waiting CPU-only jobs on spare CPUs (scheduler_walk.cc).
  void FillSpareCpus(Seconds now, Cluster& cluster, Decisions* decisions);

  std::unique_ptr<Policy> policy_;
  std::unique_ptr<Placer> placer_;
  SchedulerOptions options_;
  // QueueOrder::kStable applies (a multi-level-queue policy).
  bool stable_ = false;
  // Jobs Retune moved to another queue, for the next pass's requeued.
  std::vector<JobId> retuned_;
  // The last queue positions given at the back and at the front.
  double back_pos_ = 0, front_pos_ = 0;
  Rng rng_;

  std::vector<Job> jobs_;
  struct Slot {
    PriorityKey key;    // as stored (see StoredKey)
    double slope = 0;   // running: its group's drift slope
    double demote_at = std::numeric_limits<double>::infinity();
    double jump_at = std::numeric_limits<double>::infinity();  // see above
    double promote_at = std::numeric_limits<double>::infinity();
    // QueueOrder::kStable: its tier in its queue's list; its place in the
    // tier is Job::queue_position().
    Tier tier = Tier::kWaiting;
    // Its QOS: an index into qos_specs_, -1: none (here, in the padding
    // after `tier`, so that a slot stays as large as without it).
    int qos = -1;
    // Placer::SchemeFor the job: fixed for a record, read by every walk.
    std::string_view scheme;
    // Hold: a held waiting job is in no set (neither waiting nor a running
    // group) and has no wakeups; Insert and Dequeue skip it.
    bool held = false;
    // Its VC (an index into vcs_; 0 without VCs); while it runs, whether
    // on its VC's quota, and then its virtual GPUs there.
    int vc = 0;
    bool guaranteed = false;
    uint64_t started_in_pass = 0;
    std::vector<GpuId> vgpus;
  };
  std::vector<Slot> slots_;  // parallel to jobs_
  // Also parallel, dense for the walk (a bit per job, so that the walk's
  // reads stay in the first-level cache): whether it lost its GPUs in this
  // pass (cleared at the next from displaced_), whether it may never be
  // preempted (JobSpec::no_preempt); the one server of its GPUs (-1
  // several, -2 not known; no VCs).
  ServerSet displaced_bits_, no_preempt_bits_;
  std::vector<uint32_t> displaced_;
  std::vector<int32_t> walk_server_;
  absl::flat_hash_map<JobId, uint32_t> index_of_;

  // Per-user fair share (scheduler_vcs.cc): whether it applies to a job,
  // and each (VC, user)'s attained service in quanta, as of the last pass.
  bool FairShare(uint32_t index) const;
  double ShareOf(uint32_t index) const;
  // Recounts every user's service; re-keys the jobs of those whose step
  // changed. O(unfinished jobs under fair share) per pass.
  void RefreshShares(Seconds now);
  bool any_fair_ = false;
  absl::flat_hash_map<std::pair<int, std::string>, double> user_step_;
  double next_share_at_ = std::numeric_limits<double>::infinity();

  // Running jobs, grouped by the drift slope of their key (Policy::
  // DriftSlope): within a group stored keys keep their order as time
  // passes, so nothing is re-keyed; a pass merges the groups, reading each
  // key at `now`. The NaN group (non-linear drift) is re-keyed every pass.
  struct RunningGroup {
    double slope;
    EntrySet entries;
  };
  // What one walk sees: waiting jobs and running ones.
  struct Queues {
    EntrySet waiting;
    std::map<int, int> waiting_by_gpus;        // GPU count -> waiting jobs
    int waiting_own = 0;  // waiting jobs placed by their own rule (shape.h)
    std::vector<RunningGroup> running_groups;  // one per distinct slope
    int num_running = 0;
  };
  // Every waiting job, and the running jobs no VC's quota holds (all of
  // them without VCs, the borrowers with).
  Queues all_;
  Queues* walk_ = nullptr;  // the queues the current walk is over
  RunningGroup& GroupFor(Queues& queues, double slope);
  Queues& RunningQueues(uint32_t index);
  // num_running and, for a borrower, the GPUs borrowed (its VC's and in
  // all), by `delta` jobs.
  void CountRunning(uint32_t index, int delta);
  // A key as all_ holds it: with VCs, without the per-user share (the
  // borrowers' walk orders VCs' jobs by the policy alone).
  PriorityKey AllKey(const PriorityKey& key) const;

  // Priority levels (scheduler_qos.cc).
  int QosIndex(const std::string& name) const;  // -1: none
  // PriorityKey::group: the level's part, a multiple of kLevelStep, plus
  // the user's fair-share quanta (ShareOf, below kLevelStep).
  static constexpr double kLevelStep = 0x1p40;
  double GroupOf(uint32_t index) const {
    const int q = slots_[index].qos;
    const double level =
        q < 0 ? 0 : -static_cast<double>(qos_specs_[q].priority);
    return level * kLevelStep + ShareOf(index);
  }
  // Counts a running job's GPUs for its user and QOS (`delta` jobs).
  void CountQos(uint32_t index, int delta);
  // GPUs a walk's pending starts (less the displaced) add for its user.
  void PendQos(uint32_t index, int gpus);
  // Whether the job's QOS's per-user limit lets it start now.
  bool QosAllows(uint32_t index) const;
  std::vector<QosSpec> qos_specs_;
  absl::flat_hash_map<std::string, int> qos_index_;
  // (QOS, user) -> GPUs its running jobs hold; and during a preemptive
  // walk, what its pending starts and displacements change.
  absl::flat_hash_map<std::pair<int, std::string>, int> qos_gpus_;
  absl::flat_hash_map<std::pair<int, std::string>, int> qos_pending_;

  // Virtual clusters (scheduler_vcs.cc).
  struct Vc {
    // Its waiting jobs (also in all_) and the running ones its quota holds.
    Queues queues;
    // Its cells as servers, one per cell, in VcSpec::cells' order: the
    // GPUs its jobs hold there are virtual (Slot::vgpus). Null without
    // cells.
    std::unique_ptr<Cluster> cluster;
    std::vector<PhysicalCell> bound;  // per cell; server -1: unbound
    std::vector<int> home;            // per cell: a physical server or -1
    int borrowed = 0;                 // GPUs its running borrowers hold
    int pending_borrow = 0;           // GPUs its borrowers started in this walk
    double borrow_cap = 0;            // this pass's fair share of what is lent
    // A borrower of it went back to waiting in this pass (reclaimed, or
    // displaced by a borrower of higher priority): walk it again.
    bool walk_again = false;
  };
  std::vector<VcSpec> vc_specs_;
  std::vector<Vc> vcs_;
  absl::flat_hash_map<std::string, int> vc_index_;
  std::unique_ptr<CellPool> cells_;
  Cluster* phys_ = nullptr;       // the physical cluster during a pass
  bool walk_virtual_ = false;     // walking a VC's quota (virtual GPUs)
  bool borrow_walk_ = false;      // walking the borrowers
  bool borrow_uncapped_ = false;  // ... past the VCs' weighted shares
  mutable bool capped_ = false;   // a share held a borrower back
  int walk_vc_ = -1;
  int borrow_pool_ = 0;        // GPUs borrowers may hold in all, this pass
  bool lend_limited_ = false;  // a lending limit keeps the pool smaller
  int total_borrowed_ = 0;     // GPUs running borrowers hold
  int borrow_pending_ = 0;     // GPUs borrowers started in this walk
  int64_t bind_failures_ = 0;
  int64_t reclaims_ = 0;
  // A VC's job needs GPUs a borrower took in this same pass (after the
  // borrowers' walk): it waits, and another pass follows at once.
  bool again_now_ = false;
  std::vector<int> scratch_guaranteed_on_;
  std::vector<uint32_t> scratch_fair_;
  // The GPUs of `index` in the current walk's cluster.
  const std::vector<GpuId>& WalkGpus(uint32_t index) const;
  void ScheduleVcs(Seconds now, Cluster& cluster, Decisions* decisions);
  void SyncCordons(const Cluster& cluster);
  void ComputeBorrowCaps();
  bool MayBorrow(uint32_t index) const;
  // A VC walk's start: binds its cells, reclaims borrowers from them and
  // takes the physical GPUs. False (nothing changed) if a cell cannot be
  // bound.
  bool StartOnQuota(uint32_t index, std::vector<GpuId>* gpus,
                    Decisions* decisions, Seconds now);
  void Reclaim(uint32_t index, Seconds now, Decisions* decisions);
  // Gives back a guaranteed job's virtual GPUs (and unbinds its idle cells).
  void ReleaseQuota(uint32_t index);
  void UnbindIdleCells(int vc);
  // The VC named `name`; the first if there is none.
  int VcIndex(const std::string& name) const;
  // Gives the running job `index` the virtual GPUs of its VC's cells where
  // it runs, binding free cells there if `bind` (guaranteed); false,
  // changing nothing, if they cannot be had (see ChangeVcs).
  bool AdoptOnQuota(uint32_t index, bool bind);
  std::unique_ptr<Topology> vc_topology_;  // the physical one, with VCs

  // Waiting CPU-only jobs, by (submit time, index); running ones counted.
  absl::btree_set<std::pair<double, uint32_t>> cpu_waiting_;
  int cpu_running_ = 0;
  std::vector<std::pair<uint32_t, int>> scratch_cpu_starts_;
  absl::btree_set<Wakeup> demotions_;
  // original_demotion_timing: per GPU count, (instant its executed seconds
  // would reach its queue's bound, index) of each running job in a bounded
  // queue; the original's next pass is the least over these.
  std::map<int, absl::btree_set<Wakeup>> original_jumps_;
  double last_schedule_ = 0;  // the `now` of the last Schedule call
  absl::btree_set<Wakeup> promotions_;
  bool dirty_ = false;  // something changed since the last pass
  bool eager_keep_ = false;  // KeepEagerlyForTesting
  uint64_t pass_ = 0;   // passes run so far
  std::vector<GpuId> scratch_gpus_;
  std::vector<uint32_t> scratch_indices_, scratch_preempt_;
  // A running group during a pass: [begin, it) visited, [it, end) not;
  // `back` walks down from `end` when looking for jobs to displace.
  struct Cursor {
    double slope;
    EntrySet::const_iterator it, end, back;
  };
  std::vector<Cursor> scratch_cursors_;
  std::vector<std::pair<uint32_t, std::vector<GpuId>>> pending_starts_;
  std::vector<uint32_t> scratch_released_;
  std::vector<int> scratch_released_gpus_;  // parallel, by counts
  FreeCounts scratch_counts_;
  // Running jobs displaced during this walk, by the key they wait with.
  EntrySet scratch_displaced_;
  WalkLeft scratch_left_;  // waiting jobs the walk has yet to visit
  WalkKept kept_;          // tracking while some running job may be displaced
  // (scheme, GPUs) of jobs this pass could not place at all.
  std::vector<std::pair<std::string_view, int>> scratch_unplaceable_;
  std::vector<Entry> scratch_entries_;
  std::vector<std::pair<uint32_t, double>> scratch_moved_;
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_SCHEDULER_H_

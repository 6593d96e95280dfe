// A training job as the scheduling core sees it: what the user asked for
// (JobSpec) and what has happened to it so far (Job).
//
// Executed time is accounted lazily: while a job runs, its counters hold the
// value at the start of the current run, and the accessors add the time
// since. So a job's attained service at any instant costs O(1) and nothing
// has to be touched for running jobs between events.
#ifndef TIRESIAS_CORE_JOB_H_
#define TIRESIAS_CORE_JOB_H_

#include <cassert>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/time.h"

namespace tiresias {

using JobId = int64_t;
// A GPU's index in its cluster's topology: 0 .. total_gpus - 1.
using GpuId = int32_t;

struct NodeFilter;  // core/node_filter.h

struct JobSpec {
  JobId id = 0;
  int num_gpus = 1;
  Seconds submit_time{0};
  // The job's running time when consolidated, if known. Only the oracle
  // baselines (sjf, srtf, srsf) may read it; the simulator uses it to know
  // when a job ends.
  std::optional<Seconds> duration;
  // Model name ("vgg16", "resnet50", ...); empty when unknown.
  std::string model;
  // Tensor skew measured from the job's own traffic (the traffic profiler),
  // in [0, 1]; nullopt until measured. Placement prefers it to the `model`
  // table (place/profiled.cc).
  std::optional<double> measured_skew;
  // Once started, never chosen as a victim by the scheduler (a job that
  // cannot checkpoint): it keeps its GPUs until it ends, is removed, or its
  // host stops it (a lost node).
  bool no_preempt = false;
  // Its shape (core/shape.h): exactly `nodes` servers with `gpus_per_node`
  // GPUs each (num_gpus is their product). 0: any spread its placement
  // scheme picks.
  int nodes = 0;
  int gpus_per_node = 0;
  // Which servers may run it (core/node_filter.h); null: any. Shared: a
  // spec is copied with every job record the host rebuilds.
  std::shared_ptr<const NodeFilter> filter;
  // Its servers run no other job while it holds GPUs there (`submit
  // --exclusive`): placed only on servers entirely free, which then take
  // no other job (Cluster's reservation) until it releases them.
  bool exclusive = false;
  // A CPU-only job (num_gpus 0): the CPUs and memory (MiB) it needs on one
  // server's spare CPUs (Server::spare_cpus), outside every GPU's slice.
  // The scheduler keeps such jobs out of the GPU queues: they wait first
  // come first served (with backfill) for spare CPUs, never preempt nor
  // are preempted (sched/scheduler.h).
  int cpus = 0;
  int64_t mem_mib = 0;
  // Its virtual cluster (team), when the scheduler has VCs
  // (sched/vcs.h); "" is the VC named "" if there is one, else the first.
  std::string vc;
  // Its priority level (QOS, when the scheduler has them: Scheduler::
  // SetQos); "" or an unknown one: none (priority 0, no limit).
  std::string qos;
  // Who submitted it, for per-user fair share ("" when unknown: one user).
  std::string user;

  bool cpu_only() const { return num_gpus == 0; }
  bool shaped() const { return nodes > 0; }
  // Placed by a rule of its own (its shape, its filter's servers, whole
  // servers), so not comparable with other jobs of its placement scheme.
  bool own_placement() const {
    return nodes > 0 || filter != nullptr || exclusive;
  }
};

enum class JobState { kPending, kRunning, kPreempted, kFinished };

std::string_view JobStateName(JobState state);

class Job {
 public:
  explicit Job(JobSpec spec) : spec_(std::move(spec)), last_stop_(spec_.submit_time) {}

  const JobSpec& spec() const { return spec_; }
  JobId id() const { return spec_.id; }
  int num_gpus() const { return spec_.num_gpus; }
  bool cpu_only() const { return spec_.cpu_only(); }
  JobState state() const { return state_; }
  bool running() const { return state_ == JobState::kRunning; }
  // Pending or preempted: wants GPUs and holds none.
  bool waiting() const {
    return state_ == JobState::kPending || state_ == JobState::kPreempted;
  }
  bool finished() const { return state_ == JobState::kFinished; }

  // When it first started; nullopt if it never ran.
  std::optional<Seconds> first_start() const { return first_start_; }
  // When it finished; kNever until then.
  Seconds finish_time() const { return finish_time_; }
  // When it last stopped running (its submit time if it never ran, or the
  // instant of its last promotion): waiting time is measured from here.
  Seconds last_stop() const { return last_stop_; }
  // Start of the current run; meaningful only while running.
  Seconds run_start() const { return run_start_; }

  // Time run since the last promotion reset it (for the queues and the
  // promotion knob).
  Seconds Executed(Seconds now) const {
    return running() ? executed_base_ + (now - run_start_) : executed_base_;
  }
  // Time run over the job's whole life (never reset).
  Seconds TotalExecuted(Seconds now) const {
    return running() ? total_executed_base_ + (now - run_start_)
                     : total_executed_base_;
  }
  // Attained service, GPU-seconds: num_gpus x Executed(now).
  double AttainedGpuSeconds(Seconds now) const {
    return num_gpus() * Executed(now).count();
  }

  // The waiting time of its earlier waits since its last promotion, each
  // counted from when it had run since that promotion (the current wait
  // not included): the released Tiresias simulator's last_pending_time
  // less the current wait, for its PROMOTEKNOB (Scheduler's
  // original_promotion_wait).
  Seconds earlier_waits() const { return earlier_waits_; }
  int queue() const { return queue_; }
  int preemptions() const { return preemptions_; }
  int promotions() const { return promotions_; }
  const std::vector<GpuId>& gpus() const { return gpus_; }
  // A CPU-only job: the server whose spare CPUs it holds while it runs
  // (-1 otherwise).
  int cpu_server() const { return cpu_server_; }

  // Transitions. Each requires the state named; violating that is a bug in
  // the caller (asserted), not a user error.
  // Waiting -> running on `gpus` at `now`; a CPU-only job on the spare
  // CPUs of `cpu_server` (and no GPUs).
  void Start(Seconds now, std::vector<GpuId> gpus, int cpu_server = -1);
  // Running -> preempted at `now` (counts a preemption).
  void Preempt(Seconds now);
  // Running -> finished at `now`.
  void Finish(Seconds now);
  // Any unfinished state -> finished at `now` without running further
  // (cancelled or failed by the host).
  void Abandon(Seconds now);
  // Waiting -> back to queue 0 with executed time and waiting time reset.
  void Promote(Seconds now);
  void set_queue(int queue) { queue_ = queue; }
  // The traffic profiler measured the job: the one part of its spec that
  // is learnt after submission (a scheduler caches the placement scheme
  // per job, so the caller passes the job to Scheduler::Replace).
  void set_measured_skew(std::optional<double> skew) {
    spec_.measured_skew = skew;
  }
  // A waiting job's request changed (the host's ModifyJob: GPUs, QOS):
  // the new spec, with the same id and submit time; the caller passes the
  // job to Scheduler::Replace. Its counters stay, so its attained service
  // counts at the new size.
  void Respecify(JobSpec spec) {
    assert(waiting() && spec.id == spec_.id);
    spec_ = std::move(spec);
  }
  // Its place in its queue's list under the scheduler's stable queue order
  // (QueueOrder::kStable in sched/scheduler.h), lower first; NaN until the
  // scheduler places it. Kept with the job so that a scheduler rebuilt from
  // job records orders them as the one that made them.
  double queue_position() const { return queue_position_; }
  void set_queue_position(double position) { queue_position_ = position; }

 private:
  void StopRun(Seconds now);

  JobSpec spec_;
  JobState state_ = JobState::kPending;
  std::optional<Seconds> first_start_;
  Seconds finish_time_ = kNever;
  Seconds last_stop_;
  Seconds run_start_{0};
  Seconds executed_base_{0};
  Seconds total_executed_base_{0};
  Seconds earlier_waits_{0};
  int queue_ = 0;
  double queue_position_ = std::numeric_limits<double>::quiet_NaN();
  int preemptions_ = 0;
  int promotions_ = 0;
  std::vector<GpuId> gpus_;
  int cpu_server_ = -1;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_JOB_H_

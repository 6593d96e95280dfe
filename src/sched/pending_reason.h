// Why a waiting job is not running ("why is it waiting", Slurm's REASON):
// a small enum plus the numbers that explain it, the text formatted only
// when someone reads it. Pure, like the scheduler: the master computes
// reasons when a job is read, the simulator never pays for them.
//
// Adding a kind: a value in PendingReasonKind (and in the proto's
// PendingReasonKind, same number), its name in PendingReasonKindName and
// its sentence in FormatPendingReason.
#ifndef TIRESIAS_SCHED_PENDING_REASON_H_
#define TIRESIAS_SCHED_PENDING_REASON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/cluster.h"
#include "core/dependency.h"
#include "core/job.h"

namespace tiresias {

class Scheduler;

// Values are those of v1::PendingReasonKind.
enum class PendingReasonKind : int8_t {
  kNone = 0,           // not waiting
  kNextPass = 1,       // it would fit now: the next pass decides
  kNoNodes = 2,        // no GPU at all (no node up)
  kTooLarge = 3,       // more GPUs than every up node has together
  kDrained = 4,        // fits the up nodes, not those left undrained
  kPriority = 5,       // waiting jobs of higher priority come first
  kResources = 6,      // not enough free GPUs
  kPlacement = 7,      // enough free GPUs, not in the shape it needs
  kCheckpointing = 8,  // its GPUs are being freed by stopping tasks
  kHeld = 9,           // held by a user until released
  kDependency = 10,    // waiting for jobs it depends on to end
  kArrayLimit = 11,    // its array's running limit is reached
  kNoMatch = 12,       // no up node passes its node filter
  kVcQuota = 13,       // its VC's quota is in use and it may not borrow
  kQosLimit = 14,      // its QOS's per-user GPU limit is reached
  kBeginTime = 15,     // not before its begin time (JobSpec begin_time)
};

struct PendingReason {
  PendingReasonKind kind = PendingReasonKind::kNone;
  int gpus = 0;   // the job's GPU count
  int queue = 0;  // its queue, 0 = the highest (shown as Q1)
  // kPriority: waiting jobs ahead of it in priority order.
  int ahead = 0;
  // Free GPUs a new job may take (drained nodes' excluded).
  int free = 0;
  // kResources, kPriority: GPUs held by running jobs that are never
  // preempted (--no-preempt), named so that a user sees why.
  int no_preempt = 0;
  // kPlacement: the most free GPUs on one server, and the GPUs of servers
  // entirely free; `one_server`: it needs one server (else whole servers).
  int largest_free = 0;
  int whole_free = 0;
  bool one_server = false;
  // kTooLarge: GPUs of every up node; kDrained: of the undrained ones.
  int capacity = 0;
  // kCheckpointing: the job whose tasks hold its GPUs, or its own id when
  // its previous launch is still stopping. kDependency: the first job it
  // waits for. kArrayLimit: its array's id, with `ahead` the array's jobs
  // holding slots and `capacity` its limit.
  JobId blocker = 0;
  bool own_launch = false;
  // kDependency: how it waits for `blocker`, and how many of its
  // dependencies are not met yet (that one included).
  DependencyKind dependency = DependencyKind::kAfterOk;
  int unmet = 0;
  // A shaped job (JobSpec::nodes): its shape. Then kTooLarge's and
  // kDrained's `capacity` count servers with gpus_per_node GPUs, and
  // kPlacement's `fitting` those with as many free.
  int nodes = 0;
  int gpus_per_node = 0;
  int fitting = 0;
  // A job with a node filter (JobSpec::filter): the filter in words, the
  // up nodes it admits and the first few of their names. Then every count
  // above is of those nodes alone.
  std::string filter;
  int matching = 0;
  std::vector<std::string> matching_names;
  // An exclusive job (JobSpec::exclusive): kPlacement then counts entirely
  // free servers (whole_free GPUs; `fitting` such servers of its shape).
  bool exclusive = false;
  // A CPU-only job (JobSpec::cpu_only): the spare CPUs and memory (MiB) it
  // needs on one node. Then kTooLarge's `capacity` is the most spare CPUs
  // an up node keeps (kDrained: an undrained one), kResources'
  // `largest_free` the most free on one undrained node and `free` the
  // free spare CPUs of all of them, `ahead` the CPU-only jobs before it.
  int cpus = 0;
  int64_t mem_mib = 0;
  // With virtual clusters (Scheduler::SetVcs), a job that does not fit
  // its VC's free quota now: the VC ("" for the borrow-only VC of jobs
  // from before there were VCs), its quota and the GPUs its jobs hold
  // there and beyond it, and its borrowing limit (kUnlimited: none). Then
  // kVcQuota says why it may not borrow (`no_borrow_never_preempted`: it
  // is never preempted, so it runs only on its quota; `lend_limited`: the
  // other VCs lend no more; else its borrowing limit is reached), and
  // every other kind ends with the VC's numbers.
  bool in_vc = false;
  std::string vc;
  int vc_quota = 0;
  int vc_in_use = 0;
  int vc_borrowed = 0;
  int vc_borrow_limit = 0;
  bool no_borrow_never_preempted = false;
  // kVcQuota: GPUs are idle, but in other VCs' quotas whose lending limits
  // leave only `vc_lendable` GPUs to borrowers.
  bool lend_limited = false;
  int vc_lendable = 0;
  // kQosLimit (Scheduler::SetQos): its QOS, its user, the GPUs the user's
  // running jobs of that QOS hold, and the QOS's per-user limit.
  std::string qos;
  std::string user;
  int qos_user_gpus = 0;
  int qos_limit = 0;
  // kBeginTime: seconds until it may start.
  double begin_in = 0;

  bool operator==(const PendingReason&) const = default;
};

// "next-pass", "no-nodes", "too-large", "drained", "priority",
// "resources", "placement", "checkpointing", "held", "dependency",
// "array-limit", "no-match", "vc-quota", "qos-limit", "begin-time"; ""
// for kNone.
std::string_view PendingReasonKindName(PendingReasonKind kind);

// The reason in plain words, e.g. "needs 4 GPUs on one server, largest
// free block is 3". Empty for kNone. A job with a node filter gets the
// nodes that pass it after, "(on the 2 nodes matching GPU type a100: n1,
// n2)", or "no up node matches GPU type a100: ...".
std::string FormatPendingReason(const PendingReason& reason);

// Why each waiting job of `scheduler` waits, in priority order, on
// `cluster` as it stands (cordoned servers are drained nodes; a host with
// no cluster at all says kNoNodes itself). Meant to be
// called after a pass, when someone asks: O(waiting jobs), one placement
// try per distinct (scheme, GPU count) or shape, and per distinct node
// filter a copy of the servers it admits. Does not change either
// argument.
std::vector<std::pair<JobId, PendingReason>> ExplainWaiting(
    const Scheduler& scheduler, const Cluster& cluster);

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_PENDING_REASON_H_

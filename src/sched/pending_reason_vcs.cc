// Pending reasons: what virtual clusters and QOS add to the cluster's
// reason (pending_reason_internal.h).
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "sched/pending_reason_internal.h"

namespace tiresias::pending_reason_internal {

// With VCs, a waiting GPU job that does not fit its VC's free quota gets
// the VC's numbers, and kVcQuota when it may not borrow beyond it either
// (the scheduler's Scheduler::MayBorrow, less the per-pass lending pool)
// and the cluster's reason is one of waiting for GPUs: a job too large for
// the cluster, or held off by drained nodes, keeps that reason. (A job
// whose filter matches no node never gets here: it keeps kNoMatch.)
void ExplainVc(const Scheduler& scheduler, const Job& job,
               std::vector<std::optional<Scheduler::VcUsage>>& usage,
               const std::function<Scheduler::BorrowRoom()>& room,
               PendingReason* r) {
  const int v = scheduler.VcOf(job.id());
  if (v < 0) return;
  if (!usage[v]) usage[v] = scheduler.Usage(v);
  const Scheduler::VcUsage& u = *usage[v];
  const VcSpec& spec = scheduler.vcs()[v];
  // A job with a node filter never fits its quota (the VC's virtual
  // servers carry no features): it only borrows.
  if (r->gpus <= u.quota - u.guaranteed && job.spec().filter == nullptr) {
    return;
  }
  r->in_vc = true;
  r->vc = spec.name;
  r->vc_quota = u.quota;
  r->vc_in_use = u.guaranteed;
  r->vc_borrowed = u.borrowed;
  r->vc_borrow_limit = spec.borrow_limit;
  // What the cluster cannot hold at all (too large, drained, no node
  // matching) stays its reason; the VC's numbers follow it.
  if (r->kind != PendingReasonKind::kNextPass &&
      r->kind != PendingReasonKind::kPriority &&
      r->kind != PendingReasonKind::kResources &&
      r->kind != PendingReasonKind::kPlacement) {
    return;
  }
  if (job.spec().no_preempt) {
    r->kind = PendingReasonKind::kVcQuota;
    r->no_borrow_never_preempted = true;
  } else if (spec.borrow_limit != kUnlimited &&
             int64_t{u.borrowed} + r->gpus > spec.borrow_limit) {
    r->kind = PendingReasonKind::kVcQuota;
  } else if (const Scheduler::BorrowRoom lendable = room();
             lendable.lend_limited &&
             int64_t{lendable.borrowed} + r->gpus > lendable.pool) {
    // GPUs may be idle, but the quotas they are in lend no more.
    r->kind = PendingReasonKind::kVcQuota;
    r->lend_limited = true;
    r->vc_lendable = std::max(0, lendable.pool - lendable.borrowed);
  }
}

// A job its QOS's per-user limit holds back (Scheduler::QosAllows): that
// is its reason where the cluster's is one of waiting for GPUs (or its
// VC's quota), since it would not start with the GPUs free either.
void ExplainQos(const Scheduler& scheduler, const Job& job, PendingReason* r) {
  const Scheduler::QosUse use = scheduler.QosUseOf(job.id());
  if (use.qos < 0) return;
  const QosSpec& qos = scheduler.qos()[use.qos];
  if (qos.max_gpus_per_user == kUnlimited ||
      int64_t{use.user_gpus} + r->gpus <= qos.max_gpus_per_user) {
    return;
  }
  if (r->kind != PendingReasonKind::kNextPass &&
      r->kind != PendingReasonKind::kPriority &&
      r->kind != PendingReasonKind::kResources &&
      r->kind != PendingReasonKind::kPlacement &&
      r->kind != PendingReasonKind::kVcQuota) {
    return;
  }
  r->kind = PendingReasonKind::kQosLimit;
  r->qos = qos.name;
  r->user = job.spec().user;
  r->qos_user_gpus = use.user_gpus;
  r->qos_limit = qos.max_gpus_per_user;
}

// "vc vision: 16 of 16 GPUs of its quota in use", with what it borrows.
std::string VcNumbers(const PendingReason& r) {
  if (r.vc_quota == 0) {
    return absl::StrCat(r.vc.empty() ? "no VC" : absl::StrCat("vc ", r.vc),
                        ": no quota of its own, ", Gpus(r.vc_borrowed),
                        " borrowed");
  }
  std::string text =
      absl::StrCat("vc ", r.vc.empty() ? "\"\"" : r.vc, ": ", r.vc_in_use,
                   " of ", r.vc_quota, " GPUs of its quota in use");
  if (r.vc_borrowed > 0)
    absl::StrAppend(&text, ", ", r.vc_borrowed, " borrowed");
  return text;
}

}  // namespace tiresias::pending_reason_internal

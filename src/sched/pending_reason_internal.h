// Parts of the pending reasons (pending_reason.h) shared by its two files:
// pending_reason.cc (the cluster's reasons, the walk over waiting jobs)
// and pending_reason_vcs.cc (what virtual clusters and QOS add).
#ifndef TIRESIAS_SCHED_PENDING_REASON_INTERNAL_H_
#define TIRESIAS_SCHED_PENDING_REASON_INTERNAL_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sched/pending_reason.h"
#include "sched/scheduler.h"

namespace tiresias::pending_reason_internal {

// "1 GPU", "4 GPUs".
std::string Gpus(int n);

// A job that does not fit its VC's free quota: the VC's numbers, and
// kVcQuota when it may not borrow either. `usage` caches each VC's
// Scheduler::Usage, `room` what borrowers may hold (Scheduler::Lendable).
void ExplainVc(const Scheduler& scheduler, const Job& job,
               std::vector<std::optional<Scheduler::VcUsage>>& usage,
               const std::function<Scheduler::BorrowRoom()>& room,
               PendingReason* r);
// A job its QOS's per-user cap holds back: kQosLimit.
void ExplainQos(const Scheduler& scheduler, const Job& job, PendingReason* r);
// "vc vision: 16 of 16 GPUs of its quota in use", with what it borrows.
std::string VcNumbers(const PendingReason& r);

}  // namespace tiresias::pending_reason_internal

#endif  // TIRESIAS_SCHED_PENDING_REASON_INTERNAL_H_

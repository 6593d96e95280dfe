// The wire's scheduling settings (v1::Tuning) and the scheduler's
// (Scheduler::Tuning), both ways, and their one line of text: shared by
// the master (master_tuning.cc, the audit) and `tiresias tune`.
#ifndef TIRESIAS_MASTER_TUNING_CONVERT_H_
#define TIRESIAS_MASTER_TUNING_CONVERT_H_

#include <string>

#include "absl/status/statusor.h"
#include "proto/tiresias.pb.h"
#include "sched/scheduler.h"

namespace tiresias {

// InvalidArgument naming the field (tuning.thresholds, tuning.promote_knob,
// tuning.queue_order) for settings the scheduler cannot take. The
// placement is not checked here.
absl::StatusOr<Scheduler::Tuning> TuningFromProto(const v1::Tuning& tuning);
void TuningToProto(const Scheduler::Tuning& tuning,
                   const std::string& placement, v1::Tuning* out);

// "thresholds 3600:7200, PROMOTEKNOB 8, queue order stable, placement
// profiled": the log's and the audit's words.
std::string DescribeTuning(const v1::Tuning& tuning);
// Equal settings, an empty queue order read as "stable".
bool SameTuning(const v1::Tuning& a, const v1::Tuning& b);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_TUNING_CONVERT_H_

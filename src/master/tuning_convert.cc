// The wire's scheduling settings and the scheduler's, both ways, and their
// one line of text (tuning_convert.h).
#include "master/tuning_convert.h"

#include <cmath>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tiresias {

absl::StatusOr<Scheduler::Tuning> TuningFromProto(const v1::Tuning& tuning) {
  Scheduler::Tuning out;
  std::vector<double> thresholds(tuning.thresholds().begin(),
                                 tuning.thresholds().end());
  if (thresholds.size() > 15) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning.thresholds: ", thresholds.size(),
                     " bounds; expected at most 15 (K up to 16 queues)"));
  }
  for (double t : thresholds) {
    // Bounds under a GPU-second would demote at every pass.
    if (!std::isfinite(t) || t < 1) {
      return absl::InvalidArgumentError(
          "tuning.thresholds: expected finite GPU-seconds, at least 1");
    }
  }
  absl::StatusOr<QueueConfig> queues = QueueConfig::Create(thresholds);
  if (!queues.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning.thresholds: ", queues.status().message()));
  }
  out.queues = *queues;
  const double knob = tuning.promote_knob();
  // A tiny knob promotes at every pass; a huge one overflows the instant.
  if (!std::isfinite(knob) || (knob != 0 && (knob < 0.01 || knob > 1e6))) {
    return absl::InvalidArgumentError(
        absl::StrCat("tuning.promote_knob: ", knob,
                     ": expected 0.01 to 1,000,000, or 0 for no promotion"));
  }
  out.promote_knob = knob == 0 ? std::numeric_limits<double>::infinity() : knob;
  if (!tuning.queue_order().empty()) {
    absl::StatusOr<QueueOrder> order = ParseQueueOrder(tuning.queue_order());
    if (!order.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tuning.queue_order: ", order.status().message()));
    }
    out.queue_order = *order;
  }
  return out;
}

void TuningToProto(const Scheduler::Tuning& tuning,
                   const std::string& placement, v1::Tuning* out) {
  out->mutable_thresholds()->Assign(tuning.queues.thresholds().begin(),
                                    tuning.queues.thresholds().end());
  out->set_promote_knob(std::isinf(tuning.promote_knob) ? 0
                                                        : tuning.promote_knob);
  out->set_queue_order(std::string(QueueOrderName(tuning.queue_order)));
  out->set_placement(placement);
}

std::string DescribeTuning(const v1::Tuning& t) {
  return absl::StrCat(
      "thresholds ",
      t.thresholds().empty()
          ? std::string("none")
          : absl::StrJoin(t.thresholds(), ":",
                          [](std::string* out, double v) {
                            absl::StrAppend(out, absl::StrFormat("%g", v));
                          }),
      ", PROMOTEKNOB ",
      t.promote_knob() == 0 ? std::string("off")
                            : absl::StrFormat("%g", t.promote_knob()),
      ", queue order ", t.queue_order().empty() ? "stable" : t.queue_order(),
      ", placement ", t.placement().empty() ? "the policy's" : t.placement());
}

bool SameTuning(const v1::Tuning& a, const v1::Tuning& b) {
  return std::vector<double>(a.thresholds().begin(), a.thresholds().end()) ==
             std::vector<double>(b.thresholds().begin(),
                                 b.thresholds().end()) &&
         a.promote_knob() == b.promote_knob() &&
         (a.queue_order().empty() ? "stable" : a.queue_order()) ==
             (b.queue_order().empty() ? "stable" : b.queue_order()) &&
         a.placement() == b.placement();
}

}  // namespace tiresias

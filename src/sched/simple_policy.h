// A policy whose key is a plain function of the job: the baselines.
#ifndef TIRESIAS_SCHED_SIMPLE_POLICY_H_
#define TIRESIAS_SCHED_SIMPLE_POLICY_H_

#include <memory>
#include <utility>

#include "sched/policy.h"

namespace tiresias {

using KeyFunction = PriorityKey (*)(const Job& job, Seconds now);
using SlopeFunction = double (*)(const Job& running_job);

class SimplePolicy final : public Policy {
 public:
  SimplePolicy(std::string_view name, PolicyTraits traits, KeyFunction key,
               SlopeFunction slope = nullptr)
      : name_(name), traits_(traits), key_(key), slope_(slope) {}
  std::string_view name() const override { return name_; }
  const PolicyTraits& traits() const override { return traits_; }
  PriorityKey Key(const Job& job, Seconds now) const override {
    return key_(job, now);
  }
  double DriftSlope(const Job& job) const override {
    return slope_ ? slope_(job) : 0;
  }

 private:
  std::string_view name_;
  PolicyTraits traits_;
  KeyFunction key_;
  SlopeFunction slope_;
};

inline double SubmitSeconds(const Job& job) {
  return job.spec().submit_time.count();
}
// Oracle: seconds the job still has to run: its duration minus what it ran
// (negative once a slowed-down job runs past its duration).
inline double RemainingSeconds(const Job& job, Seconds now) {
  return job.spec().duration->count() - job.TotalExecuted(now).count();
}

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_SIMPLE_POLICY_H_

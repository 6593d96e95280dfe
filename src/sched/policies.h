// Factories of the built-in policies, one per file; registry.cc maps names to
// them. Callers use MakePolicy (policy.h) instead.
#ifndef TIRESIAS_SCHED_POLICIES_H_
#define TIRESIAS_SCHED_POLICIES_H_

#include <memory>

#include "sched/policy.h"

namespace tiresias {

std::unique_ptr<Policy> NewTiresiasLas(const PolicyOptions& options);
std::unique_ptr<Policy> NewTiresiasGittins(const PolicyOptions& options);
std::unique_ptr<Policy> NewYarnCs(const PolicyOptions& options);
std::unique_ptr<Policy> NewFifo(const PolicyOptions& options);
std::unique_ptr<Policy> NewBestEffort(const PolicyOptions& options);
std::unique_ptr<Policy> NewSmallestFirst(const PolicyOptions& options);
std::unique_ptr<Policy> NewSjf(const PolicyOptions& options);
std::unique_ptr<Policy> NewSrtf(const PolicyOptions& options);
std::unique_ptr<Policy> NewSrsf(const PolicyOptions& options);
std::unique_ptr<Policy> NewLas(const PolicyOptions& options);

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_POLICIES_H_

// The Gandiva baseline (Xiao et al., OSDI 2018) as the paper compares
// against it: the released Tiresias simulator's gandiva scheduler
// (simulator/run_sim.py gandiva_sim_jobs, simulator/cluster.py). Jobs are
// grouped by GPU count onto node sets that grow and shrink with demand
// (gandiva_node_sets.h); a set with more jobs than its GPUs hold time-slices
// them, suspending and resuming jobs at 60-second slice boundaries.
//
// Gandiva puts several jobs on one GPU, which the Scheduler (one job per
// GPU; src/sched) cannot express, so it is its own engine beside
// engine.cc, with the same inputs and outputs: Simulate() dispatches here
// for policy "gandiva". It is a simulator-only baseline; the master refuses
// it (sched/registry.cc).
//
// Time: the original advances in 10-second steps, phase-locked to arrivals
// (a step at every arrival, then every 10 s until the next one). A job ends
// at the first step at which its executed time reaches its duration; a
// slice switch happens at a step whose time is a multiple of 60 s. This
// engine keeps that grid, but only visits the steps at which something can
// change (an arrival, a job reaching its duration, a slice switch, or a
// node-set adjustment that is not a no-op), so idle and steady stretches
// cost nothing.
//
// Outputs as for every policy: per-job JCT and executed time (time holding
// GPUs, so queueing = JCT - executed includes waiting for a slice), a
// preemption for every suspension (a job that ran in one step and not in
// the next, unfinished: a slice switch, or a re-deal that leaves it
// waiting), busy GPU-seconds; SimResult::passes counts the steps visited.
// Suspension, resume and migration cost nothing (as in the original;
// Gandiva suspends at mini-batch boundaries with the job's state kept in
// memory), so SimConfig::preemption_cost does not apply; placement_slowdown
// applies to a multi-GPU job whose set spans servers. docs/ARCHITECTURE.md
// ("Gandiva") lists where this follows the original's bugs and why.
#ifndef TIRESIAS_SIM_GANDIVA_H_
#define TIRESIAS_SIM_GANDIVA_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/engine.h"

namespace tiresias {

inline constexpr std::string_view kGandivaPolicy = "gandiva";

// Replays `jobs` (sorted by submit time, with durations, each fitting the
// cluster) under Gandiva. Simulate() validates the inputs and calls this.
absl::StatusOr<SimResult> SimulateGandiva(const std::vector<JobSpec>& jobs,
                                          const Topology& topology,
                                          const SimConfig& config,
                                          const ProgressFn& progress = {});

}  // namespace tiresias

#endif  // TIRESIAS_SIM_GANDIVA_H_

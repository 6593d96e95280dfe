// Gandiva's node sets, as the released Tiresias simulator models them
// (simulator/cluster.py: gandiva_placement, gandiva_node_set_adjust and its
// expand/shrink helpers): the cluster's servers are split into node sets,
// each serving the jobs of one GPU count (a "class"); a set holds any number
// of jobs and runs as many of them at once as its GPUs allow (its capacity),
// the rest wait for their time slice. Sets grow and shrink with the classes'
// demand, and jobs move between the sets of a class (migration).
//
// This is the state machine only: no time. The stepping, progress and time
// slices are in gandiva.cc. Every list operation follows the original's
// (including the orders that decide which job runs), so that both produce
// the same schedule; ARCHITECTURE.md ("Gandiva") lists the original's quirks
// kept here and the few generalizations.
//
// Servers are taken from a FIFO of free servers. A set for g-GPU jobs takes
// servers from its front until it has >= g GPUs; its capacity is
// floor(GPUs / g) jobs. On a cluster of equal servers that is the original's
// ceil(g / GPUs per server) servers.
#ifndef TIRESIAS_SIM_GANDIVA_NODE_SETS_H_
#define TIRESIAS_SIM_GANDIVA_NODE_SETS_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/topology.h"

namespace tiresias {

class GandivaNodeSets {
 public:
  // Jobs are 0 .. job_gpus.size() - 1 (the caller's indices); job_gpus[j]
  // is job j's GPU count (every count gets its class up front, so that the
  // class order never changes).
  GandivaNodeSets(const Topology& topology, const std::vector<int>& job_gpus);

  struct NodeSet {
    int cls = -1;              // index into classes(); -1: not in use
    std::vector<int> servers;  // server indices
    int gpus = 0;
    int capacity = 0;  // jobs that run at once: gpus / class GPUs
    // The original's 'util': jobs added since the set was made or its class
    // rearranged. Completions do not lower it (as in the original).
    int64_t util = 0;
    // In slice order: the first min(size, capacity) run.
    std::vector<uint32_t> jobs;
  };
  struct Class {
    int gpus = 0;               // GPUs of each job in the class
    std::vector<int> sets;      // node set ids, in the original's list order
    int64_t num_jobs = 0;       // jobs in its sets (not pending ones)
    int64_t occupied_gpus = 0;  // GPUs of its sets
  };

  // gandiva_placement: the job joins the least loaded set of its class if
  // the set has room, else a new set on free servers, else (time slicing)
  // an existing set of its class. False when its class has no set and too
  // few GPUs are free: the job pends.
  bool Place(uint32_t job, int gpus);
  // Whether Place would succeed now (it has no side effects when it fails).
  bool CanPlace(int gpus) const;

  struct AdjustOutcome {
    // Sets were made, merged or rearranged: which jobs run may change.
    bool changed = false;
    // A set was made and left empty; the step's release of empty sets will
    // hand its servers back (and so retry pending jobs).
    bool releases = false;
  };
  // gandiva_node_set_adjust: each class's target share of the GPUs is its
  // share of the demand (jobs x GPUs); classes below target grow, those above
  // shrink. With `dry_run`, only says what it would do (and stops at the
  // first change), leaving everything as it is.
  AdjustOutcome Adjust(bool dry_run);

  // Removes a finished job from its set `set` (the set is released later,
  // by ReleaseEmpty, as in the original's end-of-step order).
  void RemoveJob(uint32_t job, int set);
  // Time slice: moves the running prefix of every oversubscribed set to the
  // back of its queue. The original rotates before removing the step's
  // finished jobs, so call it before RemoveJob.
  void RotateOversubscribed();
  // Releases empty sets, their servers back to the free FIFO. Returns
  // whether any was released (which makes the original retry pending jobs).
  bool ReleaseEmpty();

  // Sets whose job list changed since the last call, each once (some
  // possibly no longer in use), into `out` (its contents are replaced). The
  // caller refreshes which jobs run.
  void TakeTouched(std::vector<int>* out);

  const NodeSet& set(int id) const { return sets_[id]; }
  const std::vector<NodeSet>& sets() const { return sets_; }
  // Classes in the order the original's dict iterates them.
  const std::vector<Class>& classes() const { return classes_; }
  // The set holding `job`, or -1 (scans every set: for tests).
  int FindSet(uint32_t job) const;
  int free_gpus() const { return free_gpus_; }
  int num_oversubscribed() const;
  // Checks the bookkeeping (tests): every job in exactly one set, counts,
  // GPUs conserved. Returns a description of the first violation or "".
  std::string CheckInvariants() const;

 private:
  int FindClass(int gpus) const;
  int NewSet(int cls, int skip_servers);
  void Append(int set, uint32_t job);
  void Touch(int set) {
    if (is_touched_[set]) return;
    is_touched_[set] = 1;
    touched_.push_back(set);
  }
  void Unuse(int set);
  void SortByUtil(std::vector<int>* sets) const;
  // Free servers a new g-GPU set would take, starting `skip` servers into the
  // free FIFO; 0 if not enough GPUs are left there.
  int ServersFor(int gpus, size_t skip, int free_gpus) const;
  void Rearrange(int cls);
  void Shrink(int cls, int64_t num_sets);

  const Topology& topology_;
  bool uniform_servers_ = true;
  std::deque<int> free_servers_;
  int free_gpus_ = 0;
  std::vector<NodeSet> sets_;
  std::vector<int> unused_set_ids_;
  std::vector<Class> classes_;
  absl::flat_hash_map<int, int> class_of_gpus_;
  uint32_t num_jobs_;
  std::vector<int> touched_;
  std::vector<uint8_t> is_touched_;  // by set id
  std::vector<uint32_t> scratch_jobs_;
  std::vector<int> scratch_sets_;
};

}  // namespace tiresias

#endif  // TIRESIAS_SIM_GANDIVA_NODE_SETS_H_

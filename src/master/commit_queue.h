// CommitQueue: what the master's next write (MasterState::Commit) holds,
// gathered as things happen: the jobs whose records changed (and of those,
// the ones whose request changed), the node rows to write, the events and
// launch records to append, and the launches released since the last
// write that succeeded, which become durable (and so may be sent to their
// agents) once one does.
//
// A write that fails loses nothing (of the jobs and nodes still in memory
// then): PutBack returns what was taken, in front of what was queued
// since, so events are stored in the order they happened and every change
// is written by a later write.
//
//   CommitQueue queue;
//   queue.Job(7);
//   queue.Event({7, 0, now, "started", ""});
//   StoreWrite write;
//   for (JobId id : queue.jobs()) write.jobs.push_back(records.at(id));
//   const std::vector<int64_t> nodes = queue.Take(&write);
//   ... write.nodes from `nodes` ...
//   if (!store.Write(write).ok()) queue.PutBack(std::move(write));
//   else (or if nothing was to be written)
//     for (LaunchKey key : queue.TakeReleased()) { ... durable ... }
//
// Bookkeeping only: it reads no record or node (the master fills the
// write's rows). Not thread-safe: MasterState holds it under its mutex.
#ifndef TIRESIAS_MASTER_COMMIT_QUEUE_H_
#define TIRESIAS_MASTER_COMMIT_QUEUE_H_

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "core/job.h"
#include "master/job_record.h"
#include "master/launch_table.h"
#include "master/store.h"

namespace tiresias {

class CommitQueue {
 public:
  // Job `id`'s record changed: the next write writes it as it is then.
  void Job(JobId id) { jobs_.insert(id); }
  // Its request changed too (ModifyJob): its spec is written with it.
  void Respecified(JobId id) {
    jobs_.insert(id);
    respecified_.insert(id);
  }
  // Node `id`'s row is written with the jobs, as the node is then.
  void Node(int64_t id) { nodes_.insert(id); }
  // Appended in this order (the store numbers them).
  void Event(JobEvent event) { events_.push_back(std::move(event)); }
  void Launch(LaunchRecord launch) { launches_.push_back(std::move(launch)); }
  // A launch released: durable once a write succeeds (TakeReleased).
  void Released(LaunchKey key) { released_.push_back(key); }

  // The jobs to write, in id order.
  const std::set<JobId>& jobs() const { return jobs_; }

  // Takes what is queued into `write`, whose `jobs` the master filled from
  // jobs() (those still in memory): the events, the launches, and the
  // jobs among them whose request changed (new_specs). Returns the nodes
  // whose rows to write (the master adds those it still knows). The queue
  // is then empty but for the released launches.
  std::vector<int64_t> Take(StoreWrite* write);
  // `write` was taken and failed: all of it is queued again, in front of
  // what came since (nodes by id: `write.nodes`).
  void PutBack(StoreWrite write);
  // A write succeeded: the launches released until then are durable.
  std::vector<LaunchKey> TakeReleased();

  // Whether anything waits for a write (released launches included).
  bool empty() const {
    return jobs_.empty() && nodes_.empty() && events_.empty() &&
           launches_.empty() && released_.empty();
  }

 private:
  std::set<JobId> jobs_;
  std::set<JobId> respecified_;  // of jobs_
  std::set<int64_t> nodes_;
  std::vector<JobEvent> events_;
  std::vector<LaunchRecord> launches_;
  std::vector<LaunchKey> released_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_COMMIT_QUEUE_H_

// The agents' WatchDesiredState streams, all served by one thread.
//
// Each stream is a gRPC callback reactor (no thread of its own while it
// waits): it writes a wake-up (session and version, see the proto) each
// time its node's desired-state version grows past what it sent
// (MasterState::DesiredStateAfter), and ends with that call's error once
// the node's session ended (NOT_FOUND: register again), with CANCELLED
// when the agent goes, or with UNAVAILABLE at Stop. One thread waits on
// MasterState's desired generation (a change), at most `poll` (to notice
// an ended session), and then looks at every open stream: a look is one
// O(1) read under the master's lock, and a stream with a write in flight
// looks again when the write is done. With the thread-per-stream service
// this replaces, 2,000 agents meant 2,000 threads each waking 5 times a
// second (issue 27).
// A stream's first look (when it opens) and the look after each write
// run on gRPC's callback threads and take the master's lock for that O(1)
// read: a long pass holding it delays the streams' callbacks (never
// Register or Heartbeat, served on their own threads).
//
//   DesiredWatches watches(state, std::chrono::milliseconds(200));
//   ... in the service's callback method:
//   return watches.Open(node_id, session, after_version);
//   ... before grpc::Server::Shutdown:
//   watches.Stop();
//
// Thread-safe. Its lock and a stream's are never held together.
#ifndef TIRESIAS_MASTER_DESIRED_WATCH_H_
#define TIRESIAS_MASTER_DESIRED_WATCH_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "master/master_state.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

class DesiredWatches {
 public:
  DesiredWatches(MasterState* state, std::chrono::milliseconds poll);
  ~DesiredWatches();  // Stop(), then the thread is joined
  DesiredWatches(const DesiredWatches&) = delete;
  DesiredWatches& operator=(const DesiredWatches&) = delete;

  // A stream of the node's wake-ups after `after_version` (the caller has
  // checked the agent's identity). gRPC owns it until its OnDone.
  grpc::ServerWriteReactor<v1::DesiredState>* Open(int64_t node_id,
                                                   uint64_t session,
                                                   uint64_t after_version)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A stream that only ends, with `status` (a refused caller).
  static grpc::ServerWriteReactor<v1::DesiredState>* Refuse(
      grpc::Status status);
  // Ends every open stream with UNAVAILABLE, and any opened later.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Streams open now (not yet done).
  int open() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  class Watch;

  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Every open stream looks at its node's state once.
  void LookAll() ABSL_LOCKS_EXCLUDED(mu_);
  void Forget(Watch* watch) ABSL_LOCKS_EXCLUDED(mu_);

  MasterState* const state_;
  const std::chrono::milliseconds poll_;
  Mutex mu_;
  // Open streams; each owns itself (Watch::self_) until its OnDone, and a
  // look holds a reference so that OnDone meanwhile cannot free it.
  std::map<Watch*, std::weak_ptr<Watch>> watches_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_DESIRED_WATCH_H_

// The agents' WatchDesiredState streams, all served by one thread
// (stream_hub.h).
//
// Each stream writes a wake-up (session and version, see the proto) each
// time its node's desired-state version grows past what it sent
// (MasterState::DesiredStateAfter), and ends with that call's error once
// the node's session ended (NOT_FOUND: register again), with CANCELLED
// when the agent goes, or with UNAVAILABLE at Stop. The hub's thread
// waits on MasterState's desired generation (a change), at most `poll`
// (to notice an ended session), and then looks at every open stream: a
// look is one O(1) read under the master's lock. With the
// thread-per-stream service this replaces, 2,000 agents meant 2,000
// threads each waking 5 times a second (issue 27). The looks run on
// gRPC's callback threads too (a stream's first, and after each write): a
// long pass holding the master's lock delays the streams' callbacks
// (never Register or Heartbeat, served on their own threads).
//
//   DesiredWatches watches(state, std::chrono::milliseconds(200));
//   ... in the service's callback method:
//   return watches.Open(node_id, session, after_version);
//   ... before grpc::Server::Shutdown:
//   watches.Stop();
//
// Thread-safe.
#ifndef TIRESIAS_MASTER_DESIRED_WATCH_H_
#define TIRESIAS_MASTER_DESIRED_WATCH_H_

#include <chrono>
#include <cstdint>

#include "master/master_state.h"
#include "master/stream_hub.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

// Refuse, Stop and open as StreamHub's.
class DesiredWatches : public StreamHub<v1::DesiredState> {
 public:
  DesiredWatches(MasterState* state, std::chrono::milliseconds poll);

  // A stream of the node's wake-ups after `after_version` (the caller has
  // checked the agent's identity). gRPC owns it until its OnDone.
  grpc::ServerWriteReactor<v1::DesiredState>* Open(int64_t node_id,
                                                   uint64_t session,
                                                   uint64_t after_version);

 private:
  class Watch;

  MasterState* const state_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_DESIRED_WATCH_H_

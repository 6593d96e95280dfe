// The clients' WatchEvents streams, all served by one thread
// (stream_hub.h).
//
// Each stream writes the stored events with sequence > its cursor, for one
// job or every job, oldest first, read from the store in pages
// (MasterState::EventsAfter, never under the master's lock) and written one
// at a time; it ends with CANCELLED when the client goes, with a failed
// read's error, or with UNAVAILABLE at Stop. The hub's thread waits on
// MasterState's event generation (bumped after every store write that
// appended events), at most `poll`, and then every open stream looks: a
// stream reads the store only when the generation moved since its last
// read, or its last page was full (catching up). A look reads one page at
// most: the looks that run on gRPC's callback threads (a stream's first,
// and after each write) wait on the store's lock for one read at worst,
// and a stream catching up through other jobs' events goes on a page per
// look on the hub's thread (HubNext::kAgain), each stream served in turn.
// A thread per open stream before: any user could hold the master's
// threads by watching.
//
// Each stream holds its user's count (UserStreams, user_streams.h) until
// it ends.
//
//   EventWatches watches(state, std::chrono::milliseconds(200));
//   ... in the service's callback method, the request checked and the
//   ... user's count taken (streams.Acquire):
//   return watches.Open(std::move(hold), job_id, cursor);
//   ... before grpc::Server::Shutdown:
//   watches.Stop();
//
// Thread-safe.
#ifndef TIRESIAS_MASTER_EVENT_WATCH_H_
#define TIRESIAS_MASTER_EVENT_WATCH_H_

#include <chrono>
#include <cstdint>

#include "core/job.h"
#include "master/master_state.h"
#include "master/stream_hub.h"
#include "master/user_streams.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

// Refuse, Stop and open as StreamHub's.
class EventWatches : public StreamHub<v1::JobEvent> {
 public:
  // Events read from the store at once, at most.
  static constexpr int kPage = 512;

  EventWatches(MasterState* state, std::chrono::milliseconds poll);

  // A stream of the events after sequence `cursor`, of job `job` (0: every
  // job), holding `hold` (its user's count) until it ends. The caller has
  // checked the request and the caller's right to watch. gRPC owns it
  // until its OnDone.
  grpc::ServerWriteReactor<v1::JobEvent>* Open(UserStreams::Hold hold,
                                               JobId job, int64_t cursor);

 private:
  class Watch;

  MasterState* const state_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_EVENT_WATCH_H_

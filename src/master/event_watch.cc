#include "master/event_watch.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "master/proto_convert.h"

namespace tiresias {

class EventWatches::Watch : public HubStream<v1::JobEvent> {
 public:
  Watch(MasterState* state, UserStreams::Hold hold, JobId job, int64_t cursor)
      : state_(state), hold_(std::move(hold)), job_(job), cursor_(cursor) {}

  void OnDone() override {
    hold_.Release();      // the user's count, now the stream has ended
    HubStream::OnDone();  // may free this: the last thing done here
  }

 protected:
  // The next event of the page read, else the next page when the log grew
  // since the last read or that page was full: one read at most per look
  // (a look runs on gRPC's callback threads or the hub's one thread).
  absl::StatusOr<HubNext> NextLocked(v1::JobEvent* out) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (std::optional<HubNext> next = FromPage(out)) return *next;
    // Read before the store, so that an event written meanwhile moves it
    // and is not slept past.
    const uint64_t generation = state_->EventGeneration();
    if (!full_ && generation == read_at_) return HubNext::kNothing;
    read_at_ = generation;
    absl::StatusOr<std::vector<JobEvent>> events =
        state_->EventsAfter(cursor_, kPage);
    if (!events.ok()) return events.status();
    page_ = std::move(*events);
    next_ = 0;
    full_ = static_cast<int>(page_.size()) == kPage;
    for (const JobEvent& event : page_) {
      cursor_ = std::max(cursor_, event.sequence);
    }
    if (std::optional<HubNext> next = FromPage(out)) return *next;
    // A full page of other jobs' events: the next one on another look.
    return full_ ? HubNext::kAgain : HubNext::kNothing;
  }

 private:
  MasterState* const state_;
  UserStreams::Hold hold_;  // only OnDone touches it
  const JobId job_;
  // Past every event of page_ (those not yet written included).
  int64_t cursor_ ABSL_GUARDED_BY(mu_);
  std::vector<JobEvent> page_ ABSL_GUARDED_BY(mu_);
  size_t next_ ABSL_GUARDED_BY(mu_) = 0;  // in page_
  // The generation before the last read, and whether it filled a page
  // (more may be stored): the first look reads.
  uint64_t read_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool full_ ABSL_GUARDED_BY(mu_) = true;

  // The page's next event of the stream's job, if any left (kWrite); the
  // page is let go once passed.
  std::optional<HubNext> FromPage(v1::JobEvent* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (next_ < page_.size()) {
      const JobEvent& event = page_[next_++];
      if (job_ != 0 && event.job_id != job_) continue;
      out->Clear();
      JobEventToProto(event, out);
      return HubNext::kWrite;
    }
    page_.clear();
    next_ = 0;
    return std::nullopt;
  }
};

EventWatches::EventWatches(MasterState* state, std::chrono::milliseconds poll)
    : StreamHub({.generation = [state] { return state->EventGeneration(); },
                 .wait =
                     [state](uint64_t seen, std::chrono::milliseconds timeout) {
                       return state->WaitForEvents(seen, timeout);
                     },
                 .wake = [state] { state->WakeEventWatchers(); }},
                poll),
      state_(state) {}

grpc::ServerWriteReactor<v1::JobEvent>* EventWatches::Open(
    UserStreams::Hold hold, JobId job, int64_t cursor) {
  auto watch = std::make_shared<Watch>(state_, std::move(hold), job, cursor);
  // Tells the client that the cursor is fixed: from here on, no event is
  // missed (the CLI prints its header only then).
  watch->StartSendInitialMetadata();
  return StreamHub::Open(std::move(watch));
}

}  // namespace tiresias

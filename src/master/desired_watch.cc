#include "master/desired_watch.h"

#include <memory>
#include <optional>
#include <utility>

namespace tiresias {

class DesiredWatches::Watch : public HubStream<v1::DesiredState> {
 public:
  Watch(MasterState* state, int64_t node_id, uint64_t session, uint64_t sent)
      : state_(state), node_id_(node_id), session_(session), sent_(sent) {}

 protected:
  // A wake-up if the node's version grew past what was sent; the read's
  // error once its session ended.
  absl::StatusOr<HubNext> NextLocked(v1::DesiredState* out) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    absl::StatusOr<std::optional<v1::DesiredState>> desired =
        state_->DesiredStateAfter(node_id_, session_, sent_);
    if (!desired.ok()) return desired.status();
    if (!desired->has_value()) return HubNext::kNothing;
    *out = std::move(**desired);
    sent_ = out->version();
    return HubNext::kWrite;
  }

 private:
  MasterState* const state_;
  const int64_t node_id_;
  const uint64_t session_;
  uint64_t sent_ ABSL_GUARDED_BY(mu_);
};

DesiredWatches::DesiredWatches(MasterState* state,
                               std::chrono::milliseconds poll)
    : StreamHub({.generation = [state] { return state->DesiredGeneration(); },
                 .wait =
                     [state](uint64_t seen, std::chrono::milliseconds timeout) {
                       return state->WaitForDesired(seen, timeout);
                     },
                 .wake = [state] { state->WakeDesiredWatchers(); }},
                poll),
      state_(state) {}

grpc::ServerWriteReactor<v1::DesiredState>* DesiredWatches::Open(
    int64_t node_id, uint64_t session, uint64_t after_version) {
  return StreamHub::Open(
      std::make_shared<Watch>(state_, node_id, session, after_version));
}

}  // namespace tiresias

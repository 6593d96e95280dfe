#include "master/desired_watch.h"

#include <optional>
#include <utility>
#include <vector>

#include "security/rpc_status.h"

namespace tiresias {

class DesiredWatches::Watch
    : public grpc::ServerWriteReactor<v1::DesiredState> {
 public:
  Watch(DesiredWatches* hub, int64_t node_id, uint64_t session, uint64_t sent)
      : hub_(hub), node_id_(node_id), session_(session), sent_(sent) {}

  // Writes a wake-up if the node's version grew past what was sent, or
  // ends the stream if its session ended or the master stops; nothing
  // while a write is in flight (OnWriteDone looks again).
  void Look() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (finished_ || writing_) return;
    if (hub_->stopping_.load()) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                "the master is shutting down"));
      return;
    }
    absl::StatusOr<std::optional<v1::DesiredState>> desired =
        hub_->state_->DesiredStateAfter(node_id_, session_, sent_);
    if (!desired.ok()) {
      FinishLocked(security::ToGrpc(desired.status()));
      return;
    }
    if (!desired->has_value()) return;
    out_ = std::move(**desired);
    sent_ = out_.version();
    writing_ = true;
    StartWrite(&out_);
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      writing_ = false;
      if (finish_after_write_) {
        Finish(std::move(*finish_after_write_));
        finish_after_write_.reset();
        return;
      }
      if (!ok) {  // the agent is gone
        FinishLocked(grpc::Status::CANCELLED);
        return;
      }
    }
    Look();
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (!finished_) FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    hub_->Forget(this);
    self_.reset();  // may free this: the last thing done here
  }

  // Owns the stream until OnDone.
  std::shared_ptr<Watch> self_;

 private:
  // Ends the stream with `status`, after the write in flight if any.
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    finished_ = true;
    if (writing_) {
      finish_after_write_ = std::move(status);
    } else {
      Finish(std::move(status));
    }
  }

  DesiredWatches* const hub_;
  const int64_t node_id_;
  const uint64_t session_;
  Mutex mu_;
  uint64_t sent_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_after_write_ ABSL_GUARDED_BY(mu_);
  v1::DesiredState out_ ABSL_GUARDED_BY(mu_);  // gRPC reads it while writing_
};

namespace {

// A stream refused before it started (the caller's identity).
class Refusal : public grpc::ServerWriteReactor<v1::DesiredState> {
 public:
  explicit Refusal(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

DesiredWatches::DesiredWatches(MasterState* state,
                               std::chrono::milliseconds poll)
    : state_(state), poll_(poll), thread_([this] { Loop(); }) {}

DesiredWatches::~DesiredWatches() {
  Stop();
  thread_.join();
}

grpc::ServerWriteReactor<v1::DesiredState>* DesiredWatches::Refuse(
    grpc::Status status) {
  return new Refusal(std::move(status));
}

grpc::ServerWriteReactor<v1::DesiredState>* DesiredWatches::Open(
    int64_t node_id, uint64_t session, uint64_t after_version) {
  auto watch = std::make_shared<Watch>(this, node_id, session, after_version);
  watch->self_ = watch;
  {
    MutexLock lock(&mu_);
    watches_[watch.get()] = watch;
  }
  watch->Look();  // a write or an end at once, if due
  return watch.get();
}

void DesiredWatches::Stop() {
  stopping_.store(true);
  state_->WakeDesiredWatchers();  // the loop wakes and ends
  LookAll();                      // every stream ends
}

int DesiredWatches::open() {
  MutexLock lock(&mu_);
  return static_cast<int>(watches_.size());
}

void DesiredWatches::Loop() {
  // Read before each look, so that a change made meanwhile moves it and
  // is not slept past.
  uint64_t generation = state_->DesiredGeneration();
  while (!stopping_.load()) {
    generation = state_->WaitForDesired(generation, poll_);
    LookAll();
  }
}

void DesiredWatches::LookAll() {
  std::vector<std::shared_ptr<Watch>> all;
  {
    MutexLock lock(&mu_);
    all.reserve(watches_.size());
    for (const auto& [raw, watch] : watches_) {
      if (std::shared_ptr<Watch> held = watch.lock()) {
        all.push_back(std::move(held));
      }
    }
  }
  for (const std::shared_ptr<Watch>& watch : all) watch->Look();
}

void DesiredWatches::Forget(Watch* watch) {
  MutexLock lock(&mu_);
  watches_.erase(watch);
}

}  // namespace tiresias

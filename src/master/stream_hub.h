// Server streams all served by one thread: the agents' WatchDesiredState
// (desired_watch.h) and the clients' WatchEvents (event_watch.h).
//
// Each stream is a gRPC callback reactor (HubStream), with no thread of its
// own while it waits: it writes what its NextLocked gives, one message at
// a time, and ends with NextLocked's error, with CANCELLED when the client
// goes, or with UNAVAILABLE at Stop. The hub's one thread waits on a
// generation counter (a change; MasterState's desired or events one), at
// most `poll`, and then lets every open stream look (Look: NextLocked
// under the stream's lock). A stream with a write in flight looks again
// when the write is done. A stream's first look (when it opens) and the
// look after each write run on gRPC's callback threads, so a look must be
// short: one that has more to do than it should do at once says so
// (kAgain), and the hub's thread looks again at once rather than after
// its wait.
//
//   StreamHub<v1::DesiredState> hub(
//       {.generation = ..., .wait = ..., .wake = ...}, poll);
//   ... in the service's callback method:
//   return hub.Open(std::make_shared<MyStream>(...));
//   ... before grpc::Server::Shutdown:
//   hub.Stop();
//
// Thread-safe. The hub's lock and a stream's are never held together.
#ifndef TIRESIAS_MASTER_STREAM_HUB_H_
#define TIRESIAS_MASTER_STREAM_HUB_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "security/rpc_status.h"

namespace tiresias {

template <typename Response>
class StreamHub;

// What a stream's look found.
enum class HubNext {
  kWrite,    // a message to write
  kNothing,  // nothing now: the hub's next wake-up looks again
  kAgain,    // nothing yet, more to do: look again soon (the hub's thread)
};

// One stream of a StreamHub. Made with std::make_shared and given to
// StreamHub::Open, which owns it until gRPC's OnDone.
template <typename Response>
class HubStream : public grpc::ServerWriteReactor<Response> {
 public:
  // Writes the next message, if NextLocked has one and no write is in
  // flight; ends the stream if NextLocked fails or the hub stops.
  void Look() ABSL_LOCKS_EXCLUDED(mu_) {
    if (LookAndWrite() == HubNext::kAgain) hub_->Again();
  }

  void OnWriteDone(bool ok) override ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      writing_ = false;
      if (finish_after_write_) {
        this->Finish(std::move(*finish_after_write_));
        finish_after_write_.reset();
        return;
      }
      if (!ok) {  // the client is gone
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

 protected:
  // Puts the next message to write in *out (kWrite), or says why there is
  // none (HubNext); an error ends the stream with it. Never called while a
  // write is in flight. Must be short: a bounded piece of work.
  virtual absl::StatusOr<HubNext> NextLocked(Response* out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) = 0;

  Mutex mu_;

 private:
  friend class StreamHub<Response>;

  // Look's work under the stream's lock: what NextLocked found.
  HubNext LookAndWrite() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    if (finished_ || writing_) return HubNext::kNothing;
    if (hub_->stopping()) {
      FinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                "the master is shutting down"));
      return HubNext::kNothing;
    }
    absl::StatusOr<HubNext> next = NextLocked(&out_);
    if (!next.ok()) {
      FinishLocked(security::ToGrpc(next.status()));
      return HubNext::kNothing;
    }
    if (*next == HubNext::kWrite) {
      writing_ = true;
      this->StartWrite(&out_);
    }
    return *next;
  }

  // Ends the stream with `status`, after the write in flight if any.
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    finished_ = true;
    if (writing_) {
      finish_after_write_ = std::move(status);
    } else {
      this->Finish(std::move(status));
    }
  }

  // Set by Open before the stream is shared (so unguarded).
  StreamHub<Response>* hub_ = nullptr;
  std::shared_ptr<HubStream> self_;  // owns the stream until OnDone
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_after_write_ ABSL_GUARDED_BY(mu_);
  Response out_ ABSL_GUARDED_BY(mu_);  // gRPC reads it while writing_
};

template <typename Response>
class StreamHub {
 public:
  // What the hub's thread waits on: a counter that moves on every change a
  // stream may have to write.
  struct Signal {
    std::function<uint64_t()> generation;  // its value now
    // Until it moves past `seen`, wake() is called or the timeout passes;
    // returns its value then.
    std::function<uint64_t(uint64_t seen, std::chrono::milliseconds)> wait;
    std::function<void()> wake;
  };

  StreamHub(Signal signal, std::chrono::milliseconds poll)
      : signal_(std::move(signal)), poll_(poll), thread_([this] { Loop(); }) {}
  // Stop(), then the thread is joined. Destroy the hub only after every
  // stream's OnDone (after grpc::Server::Shutdown): OnDone calls it.
  ~StreamHub() {
    Stop();
    thread_.join();
  }
  StreamHub(const StreamHub&) = delete;
  StreamHub& operator=(const StreamHub&) = delete;

  // Serves `stream` from now on: its first look (a write or an end at
  // once, if due). gRPC owns it until its OnDone.
  grpc::ServerWriteReactor<Response>* Open(
      std::shared_ptr<HubStream<Response>> stream) ABSL_LOCKS_EXCLUDED(mu_) {
    HubStream<Response>* raw = stream.get();
    raw->hub_ = this;
    raw->self_ = stream;
    {
      MutexLock lock(&mu_);
      streams_[raw] = stream;
    }
    raw->Look();
    return raw;
  }

  // A stream that only ends, with `status` (a refused caller).
  static grpc::ServerWriteReactor<Response>* Refuse(grpc::Status status) {
    return new Refusal(std::move(status));
  }

  // Ends every open stream with UNAVAILABLE, and any opened later.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_) {
    stopping_.store(true);
    signal_.wake();  // the loop wakes and ends
    LookAll();       // every stream ends
  }

  bool stopping() const { return stopping_.load(); }

  // Streams open now (not yet done).
  int open() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return static_cast<int>(streams_.size());
  }

 private:
  friend class HubStream<Response>;

  // A stream refused before it started.
  class Refusal : public grpc::ServerWriteReactor<Response> {
   public:
    explicit Refusal(grpc::Status status) { this->Finish(std::move(status)); }
    void OnDone() override { delete this; }
  };

  void Loop() ABSL_LOCKS_EXCLUDED(mu_) {
    // Read before each look, so that a change made meanwhile moves it and
    // is not slept past.
    uint64_t generation = signal_.generation();
    while (!stopping_.load()) {
      bool again = false;
      {
        MutexLock lock(&mu_);
        again = again_;
        again_ = false;
      }
      if (!again) generation = signal_.wait(generation, poll_);
      LookAll();
    }
  }

  // A stream has more to do (HubNext::kAgain): the hub's thread looks
  // again without waiting. From another thread it is woken (the signal's
  // wake: the streams may then look once more than needed).
  void Again() ABSL_LOCKS_EXCLUDED(mu_) {
    {
      MutexLock lock(&mu_);
      again_ = true;
    }
    if (std::this_thread::get_id() != thread_.get_id()) signal_.wake();
  }

  // Every open stream looks once. A look holds a reference, so that the
  // stream's OnDone meanwhile cannot free it.
  void LookAll() ABSL_LOCKS_EXCLUDED(mu_) {
    std::vector<std::shared_ptr<HubStream<Response>>> all;
    {
      MutexLock lock(&mu_);
      all.reserve(streams_.size());
      for (const auto& entry : streams_) {
        if (auto held = entry.second.lock()) all.push_back(std::move(held));
      }
    }
    for (const auto& stream : all) stream->Look();
  }

  void Forget(HubStream<Response>* stream) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    streams_.erase(stream);
  }

  const Signal signal_;
  const std::chrono::milliseconds poll_;
  Mutex mu_;
  std::map<HubStream<Response>*, std::weak_ptr<HubStream<Response>>> streams_
      ABSL_GUARDED_BY(mu_);
  bool again_ ABSL_GUARDED_BY(mu_) = false;  // a stream said kAgain
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: started once the rest is made
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_STREAM_HUB_H_

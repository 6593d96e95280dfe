// The long-lived streams each user holds open on the master, counted
// against MasterOptions::max_streams_per_user: event watches (WatchEvents)
// and sessions joined to a task (JobIo: attach, port-forward). Each holds a
// connection and memory (a page of events), a JobIo three master threads;
// without a limit one user's scripts could take those from every other.
//
//   UserStreams streams(state->options().max_streams_per_user);
//   absl::StatusOr<UserStreams::Hold> hold = streams.Acquire(who.user);
//   if (!hold.ok()) return hold.status();   // RESOURCE_EXHAUSTED
//   ... the stream, until it ends (the Hold released: counted no more).
//
// A user's count is taken when the stream starts and given back when it
// ends. The empty user (an --insecure master: nobody is authenticated) is
// not counted. Thread-safe.
#ifndef TIRESIAS_MASTER_USER_STREAMS_H_
#define TIRESIAS_MASTER_USER_STREAMS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/mutex.h"

namespace tiresias {

class UserStreams {
 public:
  // `most`: streams one user may hold at once; 0: no limit.
  explicit UserStreams(int most) : most_(most) {}
  UserStreams(const UserStreams&) = delete;
  UserStreams& operator=(const UserStreams&) = delete;

  // One of `user`'s streams, counted until it is destroyed (or Release).
  // Movable; must not outlive the UserStreams.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept
        : streams_(std::exchange(other.streams_, nullptr)),
          user_(std::move(other.user_)) {}
    Hold& operator=(Hold&& other) noexcept {
      if (this != &other) {
        Release();
        streams_ = std::exchange(other.streams_, nullptr);
        user_ = std::move(other.user_);
      }
      return *this;
    }
    ~Hold() { Release(); }

    void Release() {
      if (streams_ != nullptr) std::exchange(streams_, nullptr)->Give(user_);
    }

   private:
    friend class UserStreams;
    Hold(UserStreams* streams, std::string user)
        : streams_(streams), user_(std::move(user)) {}
    UserStreams* streams_ = nullptr;
    std::string user_;
  };

  // A stream of `user`'s, or RESOURCE_EXHAUSTED when they hold the most
  // already (saying so, and which flag).
  absl::StatusOr<Hold> Acquire(const std::string& user)
      ABSL_LOCKS_EXCLUDED(mu_) {
    if (user.empty()) return Hold();
    MutexLock lock(&mu_);
    Count& count = counts_[user];
    if (most_ > 0 && count.open >= most_) {
      ++count.refused;
      return absl::ResourceExhaustedError(absl::StrCat(
          user, " holds ", count.open,
          " streams open (event watches and attached sessions), the most "
          "one user may (--max-streams-per-user): end one first"));
    }
    ++count.open;
    return Hold(this, user);
  }

  // `user`'s streams open now.
  int open_of(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = counts_.find(user);
    return it == counts_.end() ? 0 : it->second.open;
  }

  // Each user's streams open now and refused so far (since the master
  // started), for every user with either: /metrics.
  struct Count {
    int open = 0;
    int64_t refused = 0;
  };
  std::map<std::string, Count> Counts() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    return counts_;
  }

 private:
  void Give(const std::string& user) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(&mu_);
    auto it = counts_.find(user);
    if (it == counts_.end()) return;
    // A user with refusals stays, for their counter on /metrics.
    if (--it->second.open <= 0 && it->second.refused == 0) counts_.erase(it);
  }

  const int most_;
  Mutex mu_;
  // Every user with a stream open or a refusal so far.
  std::map<std::string, Count> counts_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_USER_STREAMS_H_

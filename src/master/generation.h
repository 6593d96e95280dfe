// A counter that watchers wait on: a writer bumps it after each change a
// watcher may want (events written, a desired state changed), and a watcher
// reads it, looks at the state, and waits until it moves. Reading it
// before looking means a change made meanwhile is never slept past.
//
//   uint64_t seen = generation.Get();
//   while (...) {
//     ... look at the state ...
//     seen = generation.WaitChange(seen, std::chrono::milliseconds(200));
//   }
//
// Thread-safe; its own lock is a leaf (taken inside others, never around).
#ifndef TIRESIAS_MASTER_GENERATION_H_
#define TIRESIAS_MASTER_GENERATION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace tiresias {

class Generation {
 public:
  uint64_t Get() {
    std::lock_guard<std::mutex> lock(mu_);
    return value_;
  }
  // Moves it on and wakes every waiter.
  void Bump() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++value_;
    }
    cv_.notify_all();
  }
  // Waits until it differs from `seen` or `timeout` passes; its value then.
  uint64_t WaitChange(uint64_t seen, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, timeout, [&] { return value_ != seen; });
    return value_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t value_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_GENERATION_H_

#include "core/steady_cond_var.h"

#include <chrono>
#include <thread>
#include <vector>

#include "core/mutex.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(SteadyCondVarTest, AnUnsignalledWaitTimesOutAfterItsTimeout) {
  Mutex mu;
  SteadyCondVar cv;
  const auto start = steady_clock::now();
  bool timed_out = false;
  {
    MutexLock lock(&mu);
    // Spurious wakeups return early without a timeout: wait out the rest
    // (a bounded number of times, so that a wait that never says it timed
    // out fails the test instead of hanging it).
    const auto deadline = start + milliseconds(100);
    for (int i = 0; i < 100 && !timed_out; ++i) {
      timed_out = cv.WaitUntil(&mu, deadline);
    }
  }
  EXPECT_TRUE(timed_out);
  EXPECT_GE(steady_clock::now() - start, milliseconds(100));
}

TEST(SteadyCondVarTest, ADeadlineAlreadyPastReturnsAtOnce) {
  Mutex mu;
  SteadyCondVar cv;
  MutexLock lock(&mu);
  EXPECT_TRUE(cv.WaitUntil(&mu, steady_clock::now() - milliseconds(1)));
}

// The wait gives the mutex up (the signaller takes it to set the flag) and
// holds it again when it returns (the flag is read under it).
TEST(SteadyCondVarTest, ASignalUnderTheMutexWakesTheWaiterBeforeItsTimeout) {
  Mutex mu;
  SteadyCondVar cv;
  bool ready = false;
  const auto start = steady_clock::now();
  std::thread signaller([&] {
    std::this_thread::sleep_for(milliseconds(20));
    MutexLock lock(&mu);
    ready = true;
    cv.Signal();
  });
  bool timed_out = false;
  {
    MutexLock lock(&mu);
    const auto deadline = start + std::chrono::seconds(30);
    while (!ready && !timed_out) timed_out = cv.WaitUntil(&mu, deadline);
    EXPECT_TRUE(ready);
  }
  signaller.join();
  EXPECT_FALSE(timed_out);
  EXPECT_LT(steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(SteadyCondVarTest, SignalAllWakesEveryWaiter) {
  Mutex mu;
  SteadyCondVar cv;
  bool go = false;
  int waiting = 0;
  int woken = 0;
  std::vector<std::thread> waiters;
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&] {
      MutexLock lock(&mu);
      ++waiting;
      while (!go) cv.Wait(&mu);
      ++woken;
    });
  }
  // Signalled without the mutex held, once all three wait.
  for (;;) {
    {
      MutexLock lock(&mu);
      if (waiting == 3) break;
    }
    std::this_thread::yield();
  }
  {
    MutexLock lock(&mu);
    go = true;
  }
  cv.SignalAll();
  for (std::thread& t : waiters) t.join();
  MutexLock lock(&mu);
  EXPECT_EQ(woken, 3);
}

}  // namespace
}  // namespace tiresias

// The stop and hangup signals the master, the agent and `up` wait for
// (declared in cli/master_flags.h): blocked in every thread, taken by one.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <ctime>

#include "cli/master_flags.h"

namespace tiresias {

namespace {
sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

const char* StopSignalWithin(std::chrono::milliseconds timeout) {
  sigset_t set = StopSignals();
  struct timespec ts = {static_cast<time_t>(timeout.count() / 1000),
                        static_cast<long>((timeout.count() % 1000) * 1000000)};
  const int signal_number = sigtimedwait(&set, nullptr, &ts);
  if (signal_number <= 0) return nullptr;
  return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

const char* WaitForStopSignal() {
  sigset_t set = StopSignals();
  int signal_number = 0;
  sigwait(&set, &signal_number);
  return signal_number == SIGINT ? "SIGINT" : "SIGTERM";
}

void BlockHangupSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

const char* WaitForSignal() {
  sigset_t set = StopSignals();
  sigaddset(&set, SIGHUP);
  int signal_number = 0;
  sigwait(&set, &signal_number);
  return signal_number == SIGHUP   ? "SIGHUP"
         : signal_number == SIGINT ? "SIGINT"
                                   : "SIGTERM";
}

bool HangupPending() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGHUP);
  struct timespec zero = {0, 0};
  return sigtimedwait(&set, nullptr, &zero) == SIGHUP;
}

}  // namespace tiresias

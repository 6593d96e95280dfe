#include "cli/progress.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace tiresias {

ProgressLine::ProgressLine(std::function<std::string()> describe)
    : describe_(std::move(describe)), enabled_(isatty(STDERR_FILENO) == 1) {
  if (enabled_) thread_ = std::thread([this] { Loop(); });
}

ProgressLine::~ProgressLine() {
  if (!enabled_) return;
  {
    MutexLock lock(&mu_);
    done_ = true;
  }
  cv_.SignalAll();
  thread_.join();
  if (drawn_) std::fputs("\r\033[K", stderr);
}

bool ProgressLine::WaitDone(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done_) {
    if (cv_.WaitUntil(&mu_, deadline)) break;
  }
  return done_;
}

void ProgressLine::Loop() {
  using namespace std::chrono_literals;
  MutexLock lock(&mu_);
  if (WaitDone(1s)) return;
  while (!done_) {
    std::string line = describe_();
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
    WaitDone(250ms);
  }
}

}  // namespace tiresias

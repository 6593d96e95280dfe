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
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void ProgressLine::Loop() {
  using namespace std::chrono_literals;
  std::unique_lock<std::mutex> lock(mu_);
  if (cv_.wait_for(lock, 1s, [this] { return done_; })) return;
  while (!done_) {
    std::string line = describe_();
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    std::fflush(stderr);
    drawn_ = true;
    cv_.wait_for(lock, 250ms, [this] { return done_; });
  }
}

}  // namespace tiresias

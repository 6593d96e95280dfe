// A progress line on stderr for long runs: shown only when stderr is a
// terminal and the work has taken more than a second; redrawn in place a
// few times a second and erased when done.
#ifndef TIRESIAS_CLI_PROGRESS_H_
#define TIRESIAS_CLI_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"

namespace tiresias {

class ProgressLine {
 public:
  // `describe` returns the current line (without newline); it is called
  // from the progress thread and must be thread-safe.
  explicit ProgressLine(std::function<std::string()> describe);
  ~ProgressLine();  // erases the line and stops the thread

 private:
  void Loop() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until done_ or `timeout` passes; done_ then.
  bool WaitDone(std::chrono::milliseconds timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::function<std::string()> describe_;
  bool enabled_;
  Mutex mu_;
  SteadyCondVar cv_;  // signalled when done_ is set
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool drawn_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CLI_PROGRESS_H_

// A progress line on stderr for long runs: shown only when stderr is a
// terminal and the work has taken more than a second; redrawn in place a
// few times a second and erased when done.
#ifndef TIRESIAS_CLI_PROGRESS_H_
#define TIRESIAS_CLI_PROGRESS_H_

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace tiresias {

class ProgressLine {
 public:
  // `describe` returns the current line (without newline); it is called
  // from the progress thread and must be thread-safe.
  explicit ProgressLine(std::function<std::string()> describe);
  ~ProgressLine();  // erases the line and stops the thread

 private:
  void Loop();

  std::function<std::string()> describe_;
  bool enabled_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace tiresias

#endif  // TIRESIAS_CLI_PROGRESS_H_

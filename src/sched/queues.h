// The K logical queues of discretized 2D scheduling (Tiresias-L/-G).
//
// Queue i (0-based) holds jobs whose attained service, in GPU-seconds, lies
// in [bound(i-1), bound(i)); the last queue is unbounded above. K = number of
// thresholds + 1.
#ifndef TIRESIAS_SCHED_QUEUES_H_
#define TIRESIAS_SCHED_QUEUES_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

class QueueConfig {
 public:
  // The paper's setting: K = 2, one threshold of 3,600 GPU-seconds.
  static QueueConfig PaperDefault() { return QueueConfig({3600.0}); }
  // The original Tiresias simulator's: K = 3, 3,250 and 7,200 GPU-seconds.
  static QueueConfig OriginalSimulator() { return QueueConfig({3250.0, 7200.0}); }
  // Thresholds must be positive and strictly ascending.
  static absl::StatusOr<QueueConfig> Create(std::vector<double> thresholds);
  // Parses "3600" or "3250:7200" (K = 3): colons separate one setting's
  // thresholds everywhere (--thresholds, --sweep thresholds=..., the
  // master), since commas separate a sweep's values. A comma is refused
  // with a message that says so.
  static absl::StatusOr<QueueConfig> Parse(std::string_view text);

  int num_queues() const { return static_cast<int>(thresholds_.size()) + 1; }
  bool is_last(int queue) const { return queue + 1 >= num_queues(); }
  // Upper bound of `queue` in GPU-seconds; +infinity for the last queue.
  double upper_bound(int queue) const;
  // The queue that holds a job with this attained service.
  int QueueFor(double attained_gpu_seconds) const;
  const std::vector<double>& thresholds() const { return thresholds_; }

 private:
  explicit QueueConfig(std::vector<double> thresholds)
      : thresholds_(std::move(thresholds)) {}
  std::vector<double> thresholds_;
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_QUEUES_H_

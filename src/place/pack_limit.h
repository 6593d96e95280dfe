// PACKLIMIT learnt from observed placements (Tiresias, NSDI'19, Section 4.2):
// a logistic regression on tensor skew predicting "spreading this job costs
// more than X%"; PACKLIMIT is its decision boundary, the skew where that
// probability is one half. Pure: no clock, no randomness; the caller decides
// when to Refresh (every N finished jobs in the simulator).
//
//   PackLimitClassifier c = *PackLimitClassifier::Create({.start = 0.5});
//   RETURN_IF_ERROR(c.AddSlowdown(0.74, /*spread=*/true, 1.50));
//   ...
//   c.Refresh();
//   double limit = c.pack_limit();  // 0.5 until it can fit
//
// Not thread-safe; one owner.
#ifndef TIRESIAS_PLACE_PACK_LIMIT_H_
#define TIRESIAS_PLACE_PACK_LIMIT_H_

#include <cstdint>
#include <map>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tiresias {

struct PackLimitOptions {
  // PACKLIMIT until a fit is possible (and whenever one is not).
  double start = 0.5;
  // A sample is "costly" when spreading made it more than this fraction
  // slower (0.10: spread iteration time > 1.10 x consolidated).
  double cost_threshold = 0.10;
  // Fewer samples than this: no fit, PACKLIMIT stays at `start`.
  int min_samples = 8;
  // L2 penalty on both coefficients (skew centred on the samples' mean).
  // It keeps the fit finite on separable data (the usual case: VGG always
  // costly, ResNet never) and moves the boundary of balanced separable data
  // to the midpoint between the classes.
  double l2 = 0.01;
};

// One finished run. `spread`: its GPUs spanned servers (kept for the
// accounting; the label does not depend on it).
struct PackLimitSample {
  double skew = 0;  // largest tensor / model, in [0, 1]
  bool spread = false;
  bool costly = false;  // spreading cost more than cost_threshold
};

// Why pack_limit() has its value.
enum class PackLimitFit {
  kTooFewSamples,  // fewer than min_samples: the start value
  kOneClass,       // every sample costly, or none: the start value
  kNoTrend,        // fitted slope <= 0 (higher skew not costlier): start
  kFitted,         // the decision boundary, clamped to [0, 1]
};
std::string_view PackLimitFitName(PackLimitFit fit);

class PackLimitClassifier {
 public:
  // Fails unless start and cost_threshold are in [0, 1] and finite,
  // min_samples >= 1 and l2 > 0.
  static absl::StatusOr<PackLimitClassifier> Create(
      const PackLimitOptions& options);

  // A run whose spread iteration time was `slowdown` x its consolidated
  // one (> 0; below 1 means spreading was faster). Labels it costly when
  // slowdown > 1 + cost_threshold. InvalidArgument on a skew outside
  // [0, 1] or a non-finite or non-positive slowdown; nothing is added.
  absl::Status AddSlowdown(double skew, bool spread, double slowdown);
  // A run already labelled. InvalidArgument on a skew outside [0, 1].
  absl::Status AddLabel(double skew, bool spread, bool costly);

  // Refits on every sample so far (Newton's method, at most 50 steps, each
  // halved until the penalised log-likelihood improves: deterministic).
  // Samples are kept counted by skew, so a step costs O(distinct skews):
  // a trace of ten models refits in microseconds however long it runs.
  void Refresh();

  // PACKLIMIT as of the last Refresh: consolidate a job whose skew is
  // above it.
  double pack_limit() const { return pack_limit_; }
  PackLimitFit fit() const { return fit_; }
  const std::vector<PackLimitSample>& samples() const { return samples_; }
  // Samples at the last Refresh.
  int64_t fitted_samples() const { return fitted_samples_; }
  // P(costly | skew) = 1 / (1 + exp(-(intercept + slope * skew))), as of
  // the last Refresh that ran the regression (kNoTrend or kFitted; both 0
  // before).
  double intercept() const { return intercept_; }
  double slope() const { return slope_; }
  // Probability of "costly" at `skew` under the current coefficients.
  double Probability(double skew) const;
  const PackLimitOptions& options() const { return options_; }

 private:
  explicit PackLimitClassifier(const PackLimitOptions& options)
      : options_(options), pack_limit_(options.start) {}

  PackLimitOptions options_;
  std::vector<PackLimitSample> samples_;
  struct Counts {
    int64_t total = 0;
    int64_t costly = 0;
  };
  std::map<double, Counts> by_skew_;  // the samples, counted
  double pack_limit_;
  PackLimitFit fit_ = PackLimitFit::kTooFewSamples;
  int64_t fitted_samples_ = 0;
  double intercept_ = 0;
  double slope_ = 0;
};

}  // namespace tiresias

#endif  // TIRESIAS_PLACE_PACK_LIMIT_H_

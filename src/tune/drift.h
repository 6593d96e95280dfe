// Drift: whether the jobs of late differ from those the settings were
// tuned on (and Tiresias-G learnt from), by a two-sample Kolmogorov-Smirnov
// test on job sizes (GPU-seconds).
#ifndef TIRESIAS_TUNE_DRIFT_H_
#define TIRESIAS_TUNE_DRIFT_H_

#include <cstdint>
#include <vector>

namespace tiresias {

struct DriftTest {
  int64_t n_before = 0;
  int64_t n_recent = 0;
  double statistic = 0;  // D: the largest gap between the two empirical CDFs
  double p_value = 1;    // of D at least this large if nothing changed
  bool drift = false;    // p_value < alpha, with enough jobs on each side
};

// Fewer jobs than this on either side is never called drift.
inline constexpr int64_t kMinDriftSamples = 30;
inline constexpr double kDefaultDriftAlpha = 0.01;

// The two-sample KS test of `before` against `recent` (any order). The p
// value is the asymptotic Kolmogorov distribution's with Stephens'
// small-sample correction (Numerical Recipes' probks); O(n log n).
DriftTest TestDrift(std::vector<double> before, std::vector<double> recent,
                    double alpha = kDefaultDriftAlpha);

// At most `max` values that stand for `values` (any order): all of them
// when they fit, else `max` order statistics at evenly spaced ranks (the
// smallest and the largest included). A stored sample of a window stays
// small and keeps the window's distribution.
std::vector<double> QuantileSample(std::vector<double> values, int max);

}  // namespace tiresias

#endif  // TIRESIAS_TUNE_DRIFT_H_

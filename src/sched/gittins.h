// Gittins index of a job-size distribution given by samples (GPU-seconds).
//
//   G(a, D) = sup_{0 < d <= D} P(S - a <= d | S > a) / E[min(S - a, d) | S > a]
//
// With C(x) = #{s <= x} and F(x) = sum_k min(s_k, x), the ratio at d = s_j - a
// is (C(s_j) - C(a)) / (F(s_j) - F(a)), and between samples the numerator is
// flat while the denominator grows, so the sup is a max over the samples in
// (a, a + D]. Exact() computes that directly (O(samples in the window)).
//
// For the scheduler's hot path, Table(D) precomputes G at every breakpoint
// (each sample and each s_j - D) and Lookup answers in O(log n) with the
// value at the nearest breakpoint at or below a: attained service is
// discretized to the distribution's own points. Between breakpoints the
// exact G is nondecreasing, so Lookup(a) <= Exact(a, D), equal at every
// breakpoint. Just below a sample the exact G spikes (the empirical
// distribution puts a point mass there, and the expected remaining service
// to reach it tends to 0); the table deliberately does not follow those
// spikes, so two jobs on either side of such a point can be ordered
// differently than Exact would order them.
#ifndef TIRESIAS_SCHED_GITTINS_H_
#define TIRESIAS_SCHED_GITTINS_H_

#include <cstddef>
#include <vector>

namespace tiresias {

class GittinsDistribution {
 public:
  // `samples`: job sizes in GPU-seconds, any order, each >= 0.
  explicit GittinsDistribution(std::vector<double> samples);
  // At most `max_points` evenly spaced order statistics of `samples`
  // (including the smallest and largest), or all of them if fewer: keeps
  // the distribution's shape while bounding the cost of MakeTable, which
  // is O(points x points in a window).
  static std::vector<double> Quantiles(std::vector<double> samples,
                                       size_t max_points);

  size_t size() const { return samples_.size(); }
  // G(a, delta) by direct maximization. delta > 0; 0 when no sample is in
  // (a, a + delta] (every sample is at most a: the job is already larger
  // than anything seen).
  double Exact(double attained_gpu_seconds, double delta_gpu_seconds) const;

  class Table {
   public:
    // O(log n) index for a fixed delta (see the file comment).
    double Lookup(double attained_gpu_seconds) const;

   private:
    friend class GittinsDistribution;
    std::vector<double> breakpoints_;  // ascending, starts at 0
    std::vector<double> values_;
  };
  Table MakeTable(double delta_gpu_seconds) const;

 private:
  double CountUpTo(double x) const;  // C(x)
  double SumMin(double x) const;     // F(x)

  std::vector<double> samples_;  // ascending
  std::vector<double> prefix_;   // prefix_[k] = sum of samples_[0..k)
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_GITTINS_H_

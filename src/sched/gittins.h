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
#include <cstdint>
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

// The released Tiresias simulator's index (run_sim.py: parse_job_dist,
// cal_r_gittins_index, get_gittins_index), for reproducing its figures:
// one quantum (3,250 GPU-seconds) in every queue, the index evaluated at
// the quantum only, its expected-service term summing the samples' sizes
// rather than what remains of them, Python 2's integer division and its
// roundings, and a job's attained service bucketed up to just below the
// next sample. Higher runs first; 0 past the largest sample.
class OriginalGittinsIndex {
 public:
  static constexpr int64_t kDelta = 3250;  // jobs.py: gittins_delta
  // Sizes in GPU-seconds (any order; truncated to whole seconds, as the
  // original reads them with int()).
  explicit OriginalGittinsIndex(const std::vector<double>& samples);
  bool empty() const { return data_.empty(); }
  // get_gittins_index(int(attained)).
  double Lookup(double attained_gpu_seconds) const;
  // cal_r_gittins_index(data, a).
  double Compute(int64_t a) const;

 private:
  std::vector<int64_t> data_;  // ascending
  std::vector<int64_t> prefix_;
  std::vector<double> index_;  // index_[k] = Compute(data_[k] - 1)
};

}  // namespace tiresias

#endif  // TIRESIAS_SCHED_GITTINS_H_

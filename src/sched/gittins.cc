#include "sched/gittins.h"

#include <algorithm>
#include <cmath>

namespace tiresias {

GittinsDistribution::GittinsDistribution(std::vector<double> samples)
    : samples_(std::move(samples)) {
  std::sort(samples_.begin(), samples_.end());
  prefix_.resize(samples_.size() + 1, 0.0);
  for (size_t k = 0; k < samples_.size(); ++k) {
    prefix_[k + 1] = prefix_[k] + samples_[k];
  }
}

std::vector<double> GittinsDistribution::Quantiles(std::vector<double> samples,
                                                   size_t max_points) {
  std::sort(samples.begin(), samples.end());
  if (samples.size() <= max_points || max_points < 2) return samples;
  std::vector<double> out;
  out.reserve(max_points);
  const double step =
      static_cast<double>(samples.size() - 1) / (max_points - 1);
  for (size_t i = 0; i < max_points; ++i) {
    out.push_back(samples[static_cast<size_t>(i * step + 0.5)]);
  }
  return out;
}

double GittinsDistribution::CountUpTo(double x) const {
  return static_cast<double>(
      std::upper_bound(samples_.begin(), samples_.end(), x) -
      samples_.begin());
}

double GittinsDistribution::SumMin(double x) const {
  size_t c = std::upper_bound(samples_.begin(), samples_.end(), x) -
             samples_.begin();
  return prefix_[c] + x * static_cast<double>(samples_.size() - c);
}

double GittinsDistribution::Exact(double a, double delta) const {
  const double ca = CountUpTo(a);
  const double fa = SumMin(a);
  const size_t n = samples_.size();
  size_t k = std::upper_bound(samples_.begin(), samples_.end(), a) -
             samples_.begin();
  double best = 0;
  for (; k < n && samples_[k] <= a + delta; ++k) {
    // Use the last of equal samples: C counts ties together.
    if (k + 1 < n && samples_[k + 1] == samples_[k]) continue;
    const double s = samples_[k];
    const double count = static_cast<double>(k + 1);                 // C(s)
    const double sum_min = prefix_[k + 1] + s * static_cast<double>(n - k - 1);  // F(s)
    best = std::max(best, (count - ca) / (sum_min - fa));
  }
  return best;
}

GittinsDistribution::Table GittinsDistribution::MakeTable(double delta) const {
  Table table;
  std::vector<double>& points = table.breakpoints_;
  points.push_back(0.0);
  for (double s : samples_) {
    points.push_back(s);
    if (s - delta > 0) points.push_back(s - delta);
  }
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  table.values_.reserve(points.size());
  for (double p : points) table.values_.push_back(Exact(p, delta));
  return table;
}

double GittinsDistribution::Table::Lookup(double a) const {
  auto it = std::upper_bound(breakpoints_.begin(), breakpoints_.end(), a);
  if (it == breakpoints_.begin()) return values_.front();
  return values_[(it - breakpoints_.begin()) - 1];
}

OriginalGittinsIndex::OriginalGittinsIndex(const std::vector<double>& samples) {
  for (double s : samples) {
    if (std::isfinite(s)) data_.push_back(static_cast<int64_t>(s));
  }
  std::sort(data_.begin(), data_.end());
  prefix_.assign(data_.size() + 1, 0);
  for (size_t k = 0; k < data_.size(); ++k)
    prefix_[k + 1] = prefix_[k] + data_[k];
  for (int64_t v : data_) index_.push_back(Compute(v - 1));
}

namespace {
// Python's round(x, digits) on a double (half away from zero is close
// enough: the values here are never exact halves at that digit).
double RoundTo(double x, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(x * scale) / scale;
}
}  // namespace

double OriginalGittinsIndex::Compute(int64_t a) const {
  const int64_t n = static_cast<int64_t>(data_.size());
  if (n == 0 || a > data_.back() - 1) return 0.0;
  // The first sample above a (and above a + delta).
  const int64_t idx =
      std::upper_bound(data_.begin(), data_.end(), a) - data_.begin();
  const int64_t next_a = a + kDelta;
  const int64_t idx_delta =
      next_a > data_.back() - 1
          ? n - 1
          : std::upper_bound(data_.begin(), data_.end(), next_a) -
                data_.begin();
  const double p = RoundTo(
      static_cast<double>(idx_delta - idx) / static_cast<double>(n - idx), 5);
  // Python 2: int / int is floor division.
  const int64_t e_sum =
      (prefix_[idx_delta] - prefix_[idx]) + kDelta * (n - idx_delta);
  const int64_t whole = e_sum / (n - idx);  // both positive
  const double e = static_cast<double>(whole);
  if (e <= 0) return 0.0;
  return RoundTo(p * 1000000 / e, 4);
}

double OriginalGittinsIndex::Lookup(double attained_gpu_seconds) const {
  if (data_.empty()) return 0.0;
  const int64_t a = static_cast<int64_t>(std::floor(attained_gpu_seconds));
  if (a > data_.back()) return 0.0;
  const size_t k =
      std::upper_bound(data_.begin(), data_.end(), a) - data_.begin();
  return k < index_.size() ? index_[k] : 0.0;
}

}  // namespace tiresias

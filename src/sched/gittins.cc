#include "sched/gittins.h"

#include <algorithm>

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

}  // namespace tiresias

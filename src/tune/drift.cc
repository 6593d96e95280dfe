#include "tune/drift.h"

#include <algorithm>
#include <cmath>

namespace tiresias {
namespace {

// Q_KS(lambda) = 2 sum_{j>=1} (-1)^(j-1) exp(-2 j^2 lambda^2).
double KolmogorovQ(double lambda) {
  if (lambda < 1e-3) return 1;
  double sum = 0, sign = 1, previous = 0;
  for (int j = 1; j <= 100; ++j) {
    const double term = sign * 2 * std::exp(-2 * j * j * lambda * lambda);
    sum += term;
    if (std::fabs(term) <= 1e-10 * std::fabs(sum) ||
        std::fabs(term) <= 1e-12 * previous) {
      return std::clamp(sum, 0.0, 1.0);
    }
    sign = -sign;
    previous = std::fabs(term);
  }
  return 1;  // did not converge: only for tiny lambda
}

}  // namespace

DriftTest TestDrift(std::vector<double> before, std::vector<double> recent,
                    double alpha) {
  DriftTest t;
  t.n_before = static_cast<int64_t>(before.size());
  t.n_recent = static_cast<int64_t>(recent.size());
  if (before.empty() || recent.empty()) return t;
  std::sort(before.begin(), before.end());
  std::sort(recent.begin(), recent.end());
  const double n1 = static_cast<double>(before.size());
  const double n2 = static_cast<double>(recent.size());
  size_t i = 0, j = 0;
  double d = 0;
  while (i < before.size() && j < recent.size()) {
    const double x = std::min(before[i], recent[j]);
    while (i < before.size() && before[i] <= x) ++i;
    while (j < recent.size() && recent[j] <= x) ++j;
    d = std::max(d, std::fabs(static_cast<double>(i) / n1 -
                              static_cast<double>(j) / n2));
  }
  t.statistic = d;
  const double ne = std::sqrt(n1 * n2 / (n1 + n2));
  t.p_value = KolmogorovQ((ne + 0.12 + 0.11 / ne) * d);
  t.drift = t.n_before >= kMinDriftSamples &&
            t.n_recent >= kMinDriftSamples && t.p_value < alpha;
  return t;
}

std::vector<double> QuantileSample(std::vector<double> values, int max) {
  if (max < 2 || static_cast<int>(values.size()) <= max) {
    if (max >= 0 && static_cast<int>(values.size()) > max) {
      values.resize(static_cast<size_t>(max));
    }
    return values;
  }
  std::sort(values.begin(), values.end());
  std::vector<double> out;
  out.reserve(static_cast<size_t>(max));
  const double step = static_cast<double>(values.size() - 1) / (max - 1);
  for (int k = 0; k < max; ++k) {
    out.push_back(values[static_cast<size_t>(std::llround(k * step))]);
  }
  return out;
}

}  // namespace tiresias

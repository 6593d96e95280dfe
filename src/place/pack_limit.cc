#include "place/pack_limit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

// log(1 + e^z) without overflow.
double Softplus(double z) {
  return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
}

double Sigmoid(double z) {
  return z >= 0 ? 1 / (1 + std::exp(-z)) : std::exp(z) / (1 + std::exp(z));
}

absl::Status CheckSkew(double skew) {
  if (!(skew >= 0 && skew <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pack-limit sample: skew ", skew, ": expected a number in [0, 1]"));
  }
  return absl::OkStatus();
}

// Samples at one centred skew x: n of them, k costly.
struct Point {
  double x;
  double n;
  double k;
};

// The penalised negative log-likelihood of (a, b).
double Objective(const std::vector<Point>& points, double l2, double a,
                 double b) {
  double sum = 0.5 * l2 * (a * a + b * b);
  for (const Point& p : points) {
    const double z = a + b * p.x;
    sum += p.n * Softplus(z) - p.k * z;
  }
  return sum;
}

}  // namespace

std::string_view PackLimitFitName(PackLimitFit fit) {
  switch (fit) {
    case PackLimitFit::kTooFewSamples:
      return "too_few_samples";
    case PackLimitFit::kOneClass:
      return "one_class";
    case PackLimitFit::kNoTrend:
      return "no_trend";
    case PackLimitFit::kFitted:
      return "fitted";
  }
  return "unknown";
}

absl::StatusOr<PackLimitClassifier> PackLimitClassifier::Create(
    const PackLimitOptions& options) {
  if (!(options.start >= 0 && options.start <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pack limit start ", options.start, ": expected a skew in [0, 1]"));
  }
  if (!(options.cost_threshold >= 0 && options.cost_threshold <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("pack limit cost threshold ", options.cost_threshold,
                     ": expected a fraction in [0, 1]"));
  }
  if (options.min_samples < 1) {
    return absl::InvalidArgumentError(absl::StrCat("pack limit min samples ",
                                                   options.min_samples,
                                                   ": expected at least 1"));
  }
  if (!(options.l2 > 0 && std::isfinite(options.l2))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "pack limit l2 ", options.l2, ": expected a positive number"));
  }
  return PackLimitClassifier(options);
}

absl::Status PackLimitClassifier::AddSlowdown(double skew, bool spread,
                                              double slowdown) {
  if (!(slowdown > 0 && std::isfinite(slowdown))) {
    return absl::InvalidArgumentError(
        absl::StrCat("pack-limit sample: slowdown ", slowdown,
                     ": expected a positive ratio of iteration times"));
  }
  return AddLabel(skew, spread, slowdown > 1 + options_.cost_threshold);
}

absl::Status PackLimitClassifier::AddLabel(double skew, bool spread,
                                           bool costly) {
  if (absl::Status s = CheckSkew(skew); !s.ok()) return s;
  samples_.push_back(PackLimitSample{skew, spread, costly});
  Counts& counts = by_skew_[skew];
  ++counts.total;
  counts.costly += costly;
  return absl::OkStatus();
}

double PackLimitClassifier::Probability(double skew) const {
  return Sigmoid(intercept_ + slope_ * skew);
}

void PackLimitClassifier::Refresh() {
  fitted_samples_ = static_cast<int64_t>(samples_.size());
  pack_limit_ = options_.start;
  int costly = 0;
  for (const PackLimitSample& s : samples_) costly += s.costly;
  if (fitted_samples_ < options_.min_samples) {
    fit_ = PackLimitFit::kTooFewSamples;
    return;
  }
  if (costly == 0 || costly == fitted_samples_) {
    fit_ = PackLimitFit::kOneClass;
    return;
  }
  // Centre the skews so the penalty on the intercept does not pull the
  // boundary towards skew 0.
  double centre = 0;
  for (const auto& [skew, counts] : by_skew_) centre += skew * counts.total;
  centre /= fitted_samples_;
  std::vector<Point> points;
  for (const auto& [skew, counts] : by_skew_) {
    points.push_back(Point{skew - centre, static_cast<double>(counts.total),
                           static_cast<double>(counts.costly)});
  }
  // Newton's method on z = a + b x. The penalty makes the Hessian positive
  // definite, so every step is defined; halving keeps each one downhill.
  const double l2 = options_.l2;
  double a = 0, b = 0;
  double objective = Objective(points, l2, a, b);
  for (int step = 0; step < 50; ++step) {
    double ga = l2 * a, gb = l2 * b;
    double haa = l2, hab = 0, hbb = l2;
    for (const Point& pt : points) {
      const double p = Sigmoid(a + b * pt.x);
      const double w = pt.n * p * (1 - p);
      const double r = pt.n * p - pt.k;  // d objective / d z
      ga += r;
      gb += r * pt.x;
      haa += w;
      hab += w * pt.x;
      hbb += w * pt.x * pt.x;
    }
    if (std::max(std::abs(ga), std::abs(gb)) < 1e-12) break;
    const double det = haa * hbb - hab * hab;
    const double da = -(hbb * ga - hab * gb) / det;
    const double db = -(haa * gb - hab * ga) / det;
    double t = 1;
    double next = Objective(points, l2, a + da, b + db);
    for (int halvings = 0; next > objective && halvings < 40; ++halvings) {
      t /= 2;
      next = Objective(points, l2, a + t * da, b + t * db);
    }
    if (!(next <= objective)) break;  // no downhill step left: converged
    a += t * da;
    b += t * db;
    const bool done = objective - next < 1e-15 * (1 + objective);
    objective = next;
    if (done) break;
  }
  intercept_ = a - b * centre;
  slope_ = b;
  if (!(b > 0)) {
    fit_ = PackLimitFit::kNoTrend;
    return;
  }
  fit_ = PackLimitFit::kFitted;
  pack_limit_ = std::clamp(centre - a / b, 0.0, 1.0);
}

}  // namespace tiresias

#include "place/pack_limit_runs.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

absl::StatusOr<PackLimitRuns> PackLimitRuns::Create(
    const PackLimitOptions& options) {
  absl::StatusOr<PackLimitClassifier> classifier =
      PackLimitClassifier::Create(options);
  if (!classifier.ok()) return classifier.status();
  return PackLimitRuns(options, *std::move(classifier));
}

absl::Status PackLimitRuns::Add(RunKey key, const PlacementRun& run) {
  if (run.signature.empty()) {
    return absl::InvalidArgumentError("placement run: empty signature");
  }
  if (!(run.skew >= 0 && run.skew <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placement run: skew ", run.skew, ": expected a number in [0, 1]"));
  }
  if (!(run.iteration_s > 0 && std::isfinite(run.iteration_s))) {
    return absl::InvalidArgumentError(
        absl::StrCat("placement run: iteration time ", run.iteration_s,
                     ": expected a positive number of seconds"));
  }
  auto [it, added] = runs_.try_emplace(key, run);
  if (!added) {
    --counts_[{it->second.signature, it->second.spread}];
    it->second = run;
  }
  ++counts_[{run.signature, run.spread}];
  dirty_ = true;
  return absl::OkStatus();
}

int PackLimitRuns::RunsOf(const std::string& signature, bool spread) const {
  auto it = counts_.find({signature, spread});
  return it == counts_.end() ? 0 : it->second;
}

std::map<std::string, PackLimitRuns::Signature> PackLimitRuns::BySignature()
    const {
  std::map<std::string, Signature> out;
  for (const auto& [key, run] : runs_) {
    Signature& s = out[run.signature];
    s.skew = run.skew;
    (run.spread ? s.spread : s.consolidated).push_back(run.iteration_s);
  }
  return out;
}

std::optional<double> PackLimitRuns::Slowdown(const Signature& s) {
  if (s.spread.empty() || s.consolidated.empty()) return std::nullopt;
  return Median(s.spread) / Median(s.consolidated);
}

std::map<std::string, double> PackLimitRuns::Slowdowns() const {
  std::map<std::string, double> out;
  for (const auto& [signature, s] : BySignature()) {
    if (std::optional<double> slowdown = Slowdown(s)) {
      out[signature] = *slowdown;
    }
  }
  return out;
}

bool PackLimitRuns::Refit() {
  dirty_ = false;
  // Create cannot fail: options_ made classifier_ before.
  PackLimitClassifier fresh = *PackLimitClassifier::Create(options_);
  for (const auto& [signature, s] : BySignature()) {
    const std::optional<double> slowdown = Slowdown(s);
    if (!slowdown) continue;
    // Checked at Add: a skew in [0, 1] and a positive slowdown.
    for (size_t i = 0; i < s.consolidated.size(); ++i) {
      fresh.AddSlowdown(s.skew, /*spread=*/false, *slowdown).IgnoreError();
    }
    for (size_t i = 0; i < s.spread.size(); ++i) {
      fresh.AddSlowdown(s.skew, /*spread=*/true, *slowdown).IgnoreError();
    }
  }
  fresh.Refresh();
  const bool changed = fresh.pack_limit() != classifier_.pack_limit();
  classifier_ = std::move(fresh);
  return changed;
}

}  // namespace tiresias

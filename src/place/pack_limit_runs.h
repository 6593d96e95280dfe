// PACKLIMIT learnt from a real cluster's runs: the master's side of
// pack_limit.h. A real run has one placement, so what spreading costs a job
// is known only by comparing runs of the same job (its signature: name,
// command, GPU count) placed both ways:
//
//   slowdown(signature) = median spread iteration time
//                         / median consolidated iteration time
//
// Every run of a signature seen both ways is one classifier sample with its
// skew, labelled by that slowdown (as the simulator labels each finished job
// by its model's slowdown). Refit rebuilds the classifier from every run, so
// a later run can relabel earlier ones; it costs O(runs).
//
//   PackLimitRuns runs = *PackLimitRuns::Create({.start = 0.5});
//   RETURN_IF_ERROR(runs.Add({job, attempt},
//                            {"vgg|cmd|4", 0.74, /*spread=*/true, 1.3}));
//   ...
//   if (runs.Refit()) placer = profiled with runs.pack_limit();
//
// Pure: no clock, no I/O. Not thread-safe; one owner.
#ifndef TIRESIAS_PLACE_PACK_LIMIT_RUNS_H_
#define TIRESIAS_PLACE_PACK_LIMIT_RUNS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "place/pack_limit.h"

namespace tiresias {

// One run's measured speed (from its traffic profile).
struct PlacementRun {
  std::string signature;
  double skew = 0;         // its tensor skew, [0, 1]
  bool spread = false;     // its GPUs spanned more than one server
  double iteration_s = 0;  // seconds per iteration, > 0
};

class PackLimitRuns {
 public:
  // Fails as PackLimitClassifier::Create does.
  static absl::StatusOr<PackLimitRuns> Create(const PackLimitOptions& options);

  // Which run: (job id, attempt). A run measured again (another rank of it
  // reported a better profile) replaces the one added before.
  using RunKey = std::pair<int64_t, int>;
  // InvalidArgument (nothing changed) on an empty signature, a skew outside
  // [0, 1], or an iteration time that is not a positive finite number.
  absl::Status Add(RunKey key, const PlacementRun& run);

  // Runs of `signature` measured with this placement (spread or not).
  int RunsOf(const std::string& signature, bool spread) const;
  // Runs added, paired or not.
  int64_t runs() const { return static_cast<int64_t>(runs_.size()); }
  // Added since the last Refit.
  bool dirty() const { return dirty_; }

  // Refits on every run; true if PACKLIMIT changed.
  bool Refit();

  // As of the last Refit.
  double pack_limit() const { return classifier_.pack_limit(); }
  PackLimitFit fit() const { return classifier_.fit(); }
  int64_t samples() const { return classifier_.fitted_samples(); }
  // Signatures seen both ways, and the slowdown of each (as of now).
  std::map<std::string, double> Slowdowns() const;
  const PackLimitClassifier& classifier() const { return classifier_; }

 private:
  PackLimitRuns(const PackLimitOptions& options,
                PackLimitClassifier classifier)
      : options_(options), classifier_(std::move(classifier)) {}

  struct Signature {
    double skew = 0;  // its latest run's (highest key)
    std::vector<double> consolidated;  // iteration times
    std::vector<double> spread;
  };
  std::map<std::string, Signature> BySignature() const;
  // Median spread over median consolidated; nullopt unless seen both ways.
  static std::optional<double> Slowdown(const Signature& s);

  PackLimitOptions options_;
  PackLimitClassifier classifier_;
  std::map<RunKey, PlacementRun> runs_;
  // Runs per (signature, spread).
  std::map<std::pair<std::string, bool>, int> counts_;
  bool dirty_ = false;
};

}  // namespace tiresias

#endif  // TIRESIAS_PLACE_PACK_LIMIT_RUNS_H_

// Profile-guided placement (Tiresias): consolidate a job whose tensor skew is
// above PACKLIMIT; otherwise pack it into whatever GPUs are free. The skew is
// the one measured from the job's traffic (JobSpec::measured_skew) when
// known, else the built-in table's for its `model` hint; a job with neither
// is consolidated: the safe choice when its sensitivity is unknown.
#include "place/model_skew.h"
#include "place/placement.h"

namespace tiresias {
namespace {

class ProfiledPlacer final : public Placer {
 public:
  explicit ProfiledPlacer(double pack_limit)
      : pack_limit_(pack_limit),
        consolidate_(NewConsolidatePlacer()),
        pack_(NewPackPlacer()) {}

  std::string_view name() const override { return "profiled"; }

  bool Place(const Cluster& cluster, const Job& job, Rng& rng,
             std::vector<GpuId>* gpus) const override {
    return SchemeOf(job).Place(cluster, job, rng, gpus);
  }
  std::string_view SchemeFor(const Job& job) const override {
    return SchemeOf(job).name();
  }
  // (single_scheme: false, the default.)
  bool MightFit(const Topology& topology, const std::vector<int>& avail,
                int total, const Job& job) const override {
    return SchemeOf(job).MightFit(topology, avail, total, job);
  }
  FitRule FitRuleFor(const Job& job) const override {
    return SchemeOf(job).FitRuleFor(job);
  }

 private:
  const Placer& SchemeOf(const Job& job) const {
    std::optional<double> skew = job.spec().measured_skew
                                     ? job.spec().measured_skew
                                     : ModelSkew(job.spec().model);
    return !skew || *skew > pack_limit_ ? *consolidate_ : *pack_;
  }

  double pack_limit_;
  std::unique_ptr<Placer> consolidate_;
  std::unique_ptr<Placer> pack_;
};

}  // namespace

std::unique_ptr<Placer> NewProfiledPlacer(const PlacementOptions& options) {
  return std::make_unique<ProfiledPlacer>(options.pack_limit);
}

}  // namespace tiresias

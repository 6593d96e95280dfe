// Performance models of the simulator: what preemption costs and how much
// slower a job runs when its GPUs span servers. Each is per model, from a
// documented table that users can replace (see ModelTable::Builtin).
//
// Preemption: the paper measured a checkpoint-and-restore pause of 2.7 s for
// VGG19 (548 MB, 39 tensors) and 26.3 s for ResNet152 (230 MB, 778 tensors):
// the cost tracks tensor count, not bytes. We fit cost = a + b x tensors
// through those two points (a = 1.454 s, b = 0.03194 s per tensor) and charge
// it when a preempted job resumes: the job holds its GPUs for that long
// before it makes progress again.
//
// Placement: a model whose tensor sizes are skewed (VGG, AlexNet) runs
// `spread_slowdown` times slower when its GPUs span more than one server;
// low-skew models (ResNet, Inception, GoogleNet) barely slow down.
//
// Where the factors come from: the built-in ones are read off the paper's
// prose (Sections 2.3 and 4.2), not measured here; each row's `source`
// says so. Factors measured on this project's emulated testbed
// (scripts/testbed.sh, BENCHMARKS.md "Testbed") are in
// data/spread_slowdown_testbed.csv and replace the built-in ones with
// `simulate --slowdown-file` (sim/slowdown_file.h). They are not the
// default: they hold for that testbed's links and compute time, and the
// README's Philly tables and the fidelity test use the built-in table.
#ifndef TIRESIAS_SIM_PERF_MODEL_H_
#define TIRESIAS_SIM_PERF_MODEL_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

struct ModelPerf {
  std::string name;
  int tensors = 0;
  double size_mb = 0;
  double spread_slowdown = 1.0;  // >= 1: run time multiplier across servers
  // Where spread_slowdown comes from: kPaperSource for the built-in rows,
  // the file's text for rows a --slowdown-file replaced.
  std::string source = std::string(kPaperSource);

  static constexpr std::string_view kPaperSource =
      "paper (NSDI'19 Sections 2.3, 4.2): not measured here";
};

class ModelTable {
 public:
  // The built-in table (perf_model.cc documents each row).
  static ModelTable Builtin();
  // Rows must have unique names, tensors >= 0 and spread_slowdown >= 1.
  static absl::StatusOr<ModelTable> Create(std::vector<ModelPerf> models);

  const std::vector<ModelPerf>& models() const { return models_; }
  // nullptr if unknown.
  const ModelPerf* Find(std::string_view name) const;
  // Seconds a preempted job of `name` pays when it resumes.
  double PreemptionCostSeconds(std::string_view name) const;
  // Run-time multiplier for a job spanning several servers (1 if unknown).
  double SpreadSlowdown(std::string_view name) const;

  static constexpr double kCostBaseSeconds = 1.454;
  static constexpr double kCostPerTensorSeconds = 0.03194;

 private:
  std::vector<ModelPerf> models_;
};

}  // namespace tiresias

#endif  // TIRESIAS_SIM_PERF_MODEL_H_

// Tensor-size skew of well-known models: the share of the model's bytes in
// its single largest tensor. High skew means a few huge tensors dominate
// parameter traffic, so spreading such a job across servers slows it down
// (NSDI'19 Tiresias, Section 4.2). The skew the traffic profiler measured
// from a job's own traffic (JobSpec::measured_skew) comes first; until a
// job is measured, the built-in table below stands in for its --model hint.
#ifndef TIRESIAS_PLACE_MODEL_SKEW_H_
#define TIRESIAS_PLACE_MODEL_SKEW_H_

#include <optional>
#include <string_view>
#include <vector>

namespace tiresias {

struct ModelInfo {
  std::string_view name;
  double skew;  // largest tensor / all parameters, in [0, 1]
};

// The built-in models, computed from their parameter shapes (torchvision
// definitions, ImageNet heads): vgg11/16/19, alexnet, resnet50/101/152,
// inception3/4, googlenet.
const std::vector<ModelInfo>& BuiltinModels();
// Skew of `model` (case-sensitive, lower case); nullopt if unknown.
std::optional<double> ModelSkew(std::string_view model);

}  // namespace tiresias

#endif  // TIRESIAS_PLACE_MODEL_SKEW_H_

#include "place/model_skew.h"

namespace tiresias {

const std::vector<ModelInfo>& BuiltinModels() {
  // Largest tensor / total parameters. VGG and AlexNet: the first fully
  // connected layer (25088x4096 = 102.8 M; AlexNet 9216x4096 = 37.7 M).
  // ResNet: the 3x3 512->512 convolution (2.36 M); Inception and GoogleNet:
  // the classifier. The paper reports 61%-77% and 3.6%-14.6%.
  static const std::vector<ModelInfo> kModels = {
      {"vgg11", 0.773},     {"vgg16", 0.744},     {"vgg19", 0.715},
      {"alexnet", 0.618},   {"resnet50", 0.092},  {"resnet101", 0.053},
      {"resnet152", 0.039}, {"inception3", 0.075}, {"inception4", 0.036},
      {"googlenet", 0.146},
  };
  return kModels;
}

std::optional<double> ModelSkew(std::string_view model) {
  // Called on every placement attempt: compare lengths before bytes.
  for (const ModelInfo& m : BuiltinModels()) {
    if (m.name.size() == model.size() && m.name == model) return m.skew;
  }
  return std::nullopt;
}

}  // namespace tiresias

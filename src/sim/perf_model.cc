#include "sim/perf_model.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace tiresias {

ModelTable ModelTable::Builtin() {
  // tensors: parameter tensors in a TensorFlow checkpoint (weights, biases,
  // batch-norm statistics), so VGG19 and ResNet152 match the paper's 39 and
  // 778. size: fp32 parameters. spread_slowdown: VGG and AlexNet lose 30% to
  // 55% of their speed when their one huge fully connected tensor crosses
  // the network; ResNet, Inception and GoogleNet lose a few percent
  // (Tiresias, NSDI'19, Sections 2.3 and 4.2). These slowdowns are read off
  // the paper, not measured here (ModelPerf::source says so); the testbed's
  // measured ones for vgg16 and resnet50 are in
  // data/spread_slowdown_testbed.csv (simulate --slowdown-file).
  ModelTable t;
  t.models_ = {
      {"vgg11", 22, 507, 1.55},     {"vgg16", 32, 528, 1.50},
      {"vgg19", 39, 548, 1.45},     {"alexnet", 16, 233, 1.40},
      {"resnet50", 267, 98, 1.05},  {"resnet101", 522, 170, 1.04},
      {"resnet152", 778, 230, 1.03}, {"inception3", 380, 104, 1.04},
      {"inception4", 600, 163, 1.03}, {"googlenet", 230, 27, 1.10},
  };
  return t;
}

absl::StatusOr<ModelTable> ModelTable::Create(std::vector<ModelPerf> models) {
  std::set<std::string> seen;
  for (const ModelPerf& m : models) {
    if (m.name.empty() || !seen.insert(m.name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("model \"", m.name, "\": empty or duplicate name"));
    }
    if (m.tensors < 0 || !(m.spread_slowdown >= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model \"", m.name,
          "\": expected tensors >= 0 and spread_slowdown >= 1"));
    }
  }
  ModelTable t;
  t.models_ = std::move(models);
  return t;
}

const ModelPerf* ModelTable::Find(std::string_view name) const {
  for (const ModelPerf& m : models_) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

double ModelTable::PreemptionCostSeconds(std::string_view name) const {
  const ModelPerf* m = Find(name);
  // Unknown models pay the cost of a median one (about 300 tensors).
  const int tensors = m ? m->tensors : 300;
  return kCostBaseSeconds + kCostPerTensorSeconds * tensors;
}

double ModelTable::SpreadSlowdown(std::string_view name) const {
  const ModelPerf* m = Find(name);
  return m ? m->spread_slowdown : 1.0;
}

}  // namespace tiresias

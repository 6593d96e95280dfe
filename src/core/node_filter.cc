#include "core/node_filter.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/memory_size.h"
#include "core/to_absl.h"
#include "core/topology.h"

namespace tiresias {

namespace {

bool FeatureChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' ||
         c == '.' || c == ':' || c == '+' || c == '-';
}

bool Has(const std::vector<std::string>& list, std::string_view name) {
  return std::find(list.begin(), list.end(), name) != list.end();
}

}  // namespace

bool ValidFeature(std::string_view feature) {
  return !feature.empty() && feature.size() <= kMaxFeatureBytes &&
         std::all_of(feature.begin(), feature.end(), FeatureChar);
}

absl::StatusOr<Constraint> ParseConstraint(std::string_view text) {
  Constraint out;
  if (text.empty()) return out;
  if (text.size() > kMaxConstraintBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "constraint: ", text.size(), " bytes, at most ", kMaxConstraintBytes));
  }
  for (absl::string_view group : absl::StrSplit(ToAbsl(text), '|')) {
    std::vector<std::string>& all = out.emplace_back();
    for (absl::string_view feature : absl::StrSplit(group, '&')) {
      if (feature.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constraint \"", ToAbsl(text),
            "\": an empty feature; expected features joined by '&' (all) "
            "and '|' (any), e.g. ib&nvme|bigmem"));
      }
      if (!ValidFeature(std::string_view(feature.data(), feature.size()))) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constraint \"", ToAbsl(text), "\": feature \"", feature,
            "\" is not 1 to ", kMaxFeatureBytes,
            " bytes of letters, digits and _.:+- (no brackets or counts)"));
      }
      if (!Has(all, std::string_view(feature.data(), feature.size()))) {
        all.emplace_back(feature);
      }
    }
  }
  return out;
}

bool GpuTypeMatches(std::string_view model, std::string_view type) {
  if (model.empty() || type.empty()) return false;
  if (absl::EqualsIgnoreCase(ToAbsl(model), ToAbsl(type))) return true;
  for (absl::string_view word :
       absl::StrSplit(ToAbsl(model), absl::ByAnyChar(" -_"))) {
    if (absl::EqualsIgnoreCase(word, ToAbsl(type))) return true;
  }
  return false;
}

bool NodeFilter::Admits(const Server& server) const {
  if (!gpu_type.empty() && !GpuTypeMatches(server.gpu_model, gpu_type)) {
    return false;
  }
  if (!nodelist.empty() && !Has(nodelist, server.name)) return false;
  if (Has(exclude, server.name)) return false;
  // A server without GPUs has no GPU slices to hold either.
  if ((cpus_per_gpu > 0 || mem_per_gpu_mib > 0) && server.num_gpus == 0) {
    return false;
  }
  if (cpus_per_gpu > 0 && server.cpus / server.num_gpus < cpus_per_gpu) {
    return false;
  }
  if (mem_per_gpu_mib > 0 &&
      server.memory_mib / server.num_gpus < mem_per_gpu_mib) {
    return false;
  }
  if (constraint.empty()) return true;
  return std::any_of(
      constraint.begin(), constraint.end(), [&](const auto& all) {
        return std::all_of(all.begin(), all.end(), [&](const std::string& f) {
          return Has(server.features, f);
        });
      });
}

std::string NodeFilter::Key() const {
  std::string key;
  auto add = [&](std::string_view part) {
    absl::StrAppend(&key, part.size(), ":", ToAbsl(part), ";");
  };
  add(gpu_type);
  absl::StrAppend(&key, constraint.size(), "|");
  for (const std::vector<std::string>& group : constraint) {
    absl::StrAppend(&key, group.size(), "&");
    for (const std::string& feature : group) add(feature);
  }
  absl::StrAppend(&key, nodelist.size(), "n");
  for (const std::string& name : nodelist) add(name);
  absl::StrAppend(&key, exclude.size(), "x");
  for (const std::string& name : exclude) add(name);
  absl::StrAppend(&key, cpus_per_gpu, "c", mem_per_gpu_mib, "m");
  return key;
}

std::string NodeFilter::Describe() const {
  std::vector<std::string> parts;
  if (!gpu_type.empty()) parts.push_back(absl::StrCat("GPU type ", gpu_type));
  if (!constraint.empty()) {
    parts.push_back(absl::StrCat("features ", constraint_text));
  }
  if (!nodelist.empty()) {
    parts.push_back(absl::StrCat(nodelist.size() == 1 ? "node " : "nodes ",
                                 absl::StrJoin(nodelist, ",")));
  }
  if (!exclude.empty()) {
    parts.push_back(absl::StrCat("not ", absl::StrJoin(exclude, ",")));
  }
  if (cpus_per_gpu > 0) {
    parts.push_back(absl::StrCat(
        cpus_per_gpu, cpus_per_gpu == 1 ? " CPU" : " CPUs", " per GPU"));
  }
  if (mem_per_gpu_mib > 0) {
    parts.push_back(
        absl::StrCat(MemoryText(mem_per_gpu_mib), " memory per GPU"));
  }
  return absl::StrJoin(parts, ", ");
}

}  // namespace tiresias

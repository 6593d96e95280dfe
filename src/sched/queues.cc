#include "sched/queues.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/to_absl.h"

namespace tiresias {

absl::StatusOr<QueueConfig> QueueConfig::Create(std::vector<double> thresholds) {
  for (size_t i = 0; i < thresholds.size(); ++i) {
    if (!(thresholds[i] > 0) || !std::isfinite(thresholds[i])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "queue threshold ", i + 1, ": expected a positive number of "
          "GPU-seconds, got ", thresholds[i]));
    }
    if (i > 0 && thresholds[i] <= thresholds[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrCat("queue thresholds must ascend: ", thresholds[i - 1],
                       " then ", thresholds[i]));
    }
  }
  return QueueConfig(std::move(thresholds));
}

absl::StatusOr<QueueConfig> QueueConfig::Parse(std::string_view text) {
  if (text.find(',') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "thresholds \"", std::string(text),
        "\": separate a K-queue list's thresholds with ':', e.g. 3250:7200 "
        "(K = 3); ',' separates the values of a --sweep"));
  }
  std::vector<double> values;
  for (absl::string_view part :
       absl::StrSplit(ToAbsl(text), ':')) {
    part = absl::StripAsciiWhitespace(part);
    double v = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
    if (part.empty() || ec != std::errc() || ptr != part.data() + part.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "thresholds \"", std::string(text),
          "\": expected GPU-seconds separated by ':', e.g. 3250:7200"));
    }
    values.push_back(v);
  }
  return Create(std::move(values));
}

double QueueConfig::upper_bound(int queue) const {
  if (queue >= static_cast<int>(thresholds_.size())) {
    return std::numeric_limits<double>::infinity();
  }
  return thresholds_[queue];
}

int QueueConfig::QueueFor(double attained_gpu_seconds) const {
  return static_cast<int>(std::upper_bound(thresholds_.begin(),
                                           thresholds_.end(),
                                           attained_gpu_seconds) -
                          thresholds_.begin());
}

}  // namespace tiresias

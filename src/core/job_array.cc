#include "core/job_array.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/to_absl.h"

namespace tiresias {
namespace {

constexpr absl::string_view kExpected =
    " (expected INDICES[%N]: e.g. 0-99, 1,3,5, 0-15:4 or 1-3,7%2)";

absl::Status Bad(absl::string_view what, absl::string_view why) {
  // A long text is cut: the error stays one readable line.
  std::string shown(what.substr(0, 64));
  if (what.size() > 64) shown += "...";
  return absl::InvalidArgumentError(
      absl::StrCat("\"", shown, "\": ", why, kExpected));
}

// A non-negative decimal integer, all of `text`; -1 if it is not one (or
// does not fit an int64).
int64_t ParseNumber(absl::string_view text) {
  if (text.empty()) return -1;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (ec != std::errc() || end != text.data() + text.size()) return -1;
  return value;
}

struct Range {
  int64_t start = 0;
  int64_t end = 0;
  int64_t step = 1;
  int64_t count() const { return (end - start) / step + 1; }
};

// One comma-separated item: N, A-B or A-B:S.
absl::StatusOr<Range> ParseItem(absl::string_view item) {
  if (item.empty()) return Bad(item, "empty item (two commas, or one at an end)");
  Range r;
  const size_t dash = item.find('-');
  const size_t colon = item.find(':');
  if (dash == absl::string_view::npos) {
    if (colon != absl::string_view::npos) {
      return Bad(item, "a step (:S) needs a range (A-B:S)");
    }
    r.start = r.end = ParseNumber(item);
    if (r.start < 0) return Bad(item, "not a non-negative integer");
  } else {
    if (colon != absl::string_view::npos && colon < dash) {
      return Bad(item, "the step comes after the range (A-B:S)");
    }
    const absl::string_view start = item.substr(0, dash);
    absl::string_view end = item.substr(dash + 1);
    absl::string_view step;
    if (colon != absl::string_view::npos) {
      end = item.substr(dash + 1, colon - dash - 1);
      step = item.substr(colon + 1);
    }
    r.start = ParseNumber(start);
    r.end = ParseNumber(end);
    if (r.start < 0 || r.end < 0) {
      return Bad(item, absl::StrCat("range bounds must be non-negative "
                                    "integers, got \"",
                                    r.start < 0 ? start : end, "\""));
    }
    if (colon != absl::string_view::npos) {
      r.step = ParseNumber(step);
      if (r.step < 1) {
        return Bad(item, absl::StrCat("the step must be a positive integer, "
                                      "got \"", step, "\""));
      }
    }
    if (r.end < r.start) {
      return Bad(item, absl::StrCat("range ends (", r.end,
                                    ") before it starts (", r.start, ")"));
    }
  }
  if (r.end > kMaxArrayIndex) {
    return Bad(item, absl::StrCat("index ", r.end, " is above the largest, ",
                                  kMaxArrayIndex));
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<int>> ExpandArrayIndices(std::string_view text) {
  const absl::string_view indices = ToAbsl(text);
  if (indices.empty()) return Bad(indices, "no indices");
  if (indices.size() > kMaxArrayIndicesBytes) {
    return Bad(indices, absl::StrCat("expected at most ",
                                     kMaxArrayIndicesBytes, " bytes, got ",
                                     indices.size()));
  }
  std::vector<Range> ranges;
  int64_t total = 0;
  for (absl::string_view item : absl::StrSplit(indices, ',')) {
    absl::StatusOr<Range> range = ParseItem(item);
    if (!range.ok()) return range.status();
    total += range->count();
    if (total > kMaxArrayJobs) {
      return Bad(indices, absl::StrCat("more than ", kMaxArrayJobs,
                                       " indices; at most ", kMaxArrayJobs,
                                       " jobs in one array"));
    }
    ranges.push_back(*range);
  }
  std::vector<int> out;
  out.reserve(static_cast<size_t>(total));
  for (const Range& r : ranges) {
    for (int64_t i = r.start; i <= r.end; i += r.step) {
      out.push_back(static_cast<int>(i));
    }
  }
  std::sort(out.begin(), out.end());
  if (auto dup = std::adjacent_find(out.begin(), out.end());
      dup != out.end()) {
    return Bad(indices, absl::StrCat("index ", *dup, " is given twice"));
  }
  return out;
}

absl::Status CheckJobArray(const JobArraySpec& spec) {
  absl::StatusOr<std::vector<int>> indices = ExpandArrayIndices(spec.indices);
  if (!indices.ok()) return indices.status();
  if (spec.max_running < 0 || spec.max_running > kMaxArrayJobs) {
    return absl::InvalidArgumentError(absl::StrCat(
        "running limit %", spec.max_running, ": expected 1 to ",
        kMaxArrayJobs, " (or none)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobArraySpec> ParseJobArray(std::string_view text) {
  const absl::string_view spec = ToAbsl(text);
  JobArraySpec out;
  const size_t percent = spec.find('%');
  out.indices = std::string(spec.substr(0, percent));
  if (percent != absl::string_view::npos) {
    const absl::string_view limit = spec.substr(percent + 1);
    const int64_t n = ParseNumber(limit);
    if (n < 1 || n > kMaxArrayJobs) {
      return Bad(spec, absl::StrCat("the running limit after % must be an "
                                    "integer from 1 to ",
                                    kMaxArrayJobs, ", got \"", limit, "\""));
    }
    out.max_running = static_cast<int>(n);
  }
  absl::StatusOr<std::vector<int>> indices = ExpandArrayIndices(out.indices);
  if (!indices.ok()) return indices.status();
  return out;
}

std::string FormatJobArray(const JobArraySpec& spec) {
  if (spec.max_running <= 0) return spec.indices;
  return absl::StrCat(spec.indices, "%", spec.max_running);
}

ArraySummary SummarizeArray(std::string_view text) {
  ArraySummary s;
  bool first = true;
  for (absl::string_view item : absl::StrSplit(ToAbsl(text), ',')) {
    absl::StatusOr<Range> r = ParseItem(item);
    if (!r.ok()) continue;  // the stored spec was checked at submission
    const int64_t last = r->start + (r->count() - 1) * r->step;
    s.count += static_cast<int>(r->count());
    s.min = first ? static_cast<int>(r->start)
                  : std::min(s.min, static_cast<int>(r->start));
    s.max = first ? static_cast<int>(last)
                  : std::max(s.max, static_cast<int>(last));
    first = false;
  }
  return s;
}

}  // namespace tiresias

#include "master/audit_limit.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tiresias {
namespace {

bool IsRefusal(const AuditRecord& record) { return record.outcome != "ok"; }

// "UpdateJobs" of "UpdateJobs cancel"; "GET /metrics" of an HTTP request
// (its method is all capitals).
std::string CauseAction(const std::string& action) {
  const size_t space = action.find(' ');
  if (space == std::string::npos) return action;
  const std::string first = action.substr(0, space);
  const bool http_method = std::all_of(first.begin(), first.end(), [](char c) {
    return absl::ascii_isupper(c);
  });
  if (!http_method) return first;
  return action.substr(0, action.find(' ', space + 1));
}

}  // namespace

AuditCauseCount& AuditRateLimit::CountFor(const AuditRecord& refusal) {
  AuditCause cause{CauseAction(refusal.action), refusal.outcome,
                   refusal.principal};
  if (counts_.size() >= kMaxCauses && !counts_.contains(cause)) {
    cause.principal = kOtherPrincipals;
  }
  AuditCauseCount& count = counts_[cause];
  count.cause = std::move(cause);
  return count;
}

std::vector<AuditRecord> AuditRateLimit::Admit(AuditRecord record) {
  std::vector<AuditRecord> out;
  if (std::optional<AuditRecord> summary = Flush(record.time)) {
    out.push_back(*std::move(summary));
  }
  if (IsRefusal(record)) {
    AuditCauseCount& count = CountFor(record);
    ++count.refusals;
    const double second = std::floor(record.time.count());
    if (second != window_second_) {
      window_second_ = second;
      written_in_window_ = 0;
    }
    if (written_in_window_ >= per_second_) {
      ++count.unrecorded;
      ++unwritten_[count.cause];
      unwritten_second_ = std::max(unwritten_second_, second);
      return out;
    }
    ++written_in_window_;
  }
  out.push_back(std::move(record));
  return out;
}

std::optional<AuditRecord> AuditRateLimit::Flush(Seconds now) {
  if (unwritten_.empty() || std::floor(now.count()) <= unwritten_second_) {
    return std::nullopt;
  }
  std::vector<std::pair<AuditCause, int64_t>> causes(unwritten_.begin(),
                                                     unwritten_.end());
  // Largest first; ties in cause order (stable over the map's order).
  std::stable_sort(
      causes.begin(), causes.end(),
      [](const auto& a, const auto& b) { return a.second > b.second; });
  int64_t total = 0;
  for (const auto& [cause, n] : causes) total += n;
  std::string detail = absl::StrCat("dropped ", total, " refusals: ");
  int64_t rest = 0;
  size_t rest_causes = 0;
  for (size_t i = 0; i < causes.size(); ++i) {
    const auto& [cause, n] = causes[i];
    if (i >= kSummaryCauses) {
      rest += n;
      ++rest_causes;
      continue;
    }
    absl::StrAppend(&detail, i == 0 ? "" : ", ", n, " ", cause.action, " by ",
                    cause.principal, ": ", cause.outcome);
  }
  if (rest_causes > 0) {
    absl::StrAppend(&detail, ", and ", rest, " of ", rest_causes,
                    " other causes");
  }
  unwritten_.clear();
  return AuditRecord{.time = now,
                     .principal = "-",
                     .peer = "",
                     .action = "AuditSummary",
                     .outcome = "unrecorded",
                     .detail = std::move(detail)};
}

std::vector<AuditCauseCount> AuditRateLimit::Counts() const {
  std::vector<AuditCauseCount> out;
  out.reserve(counts_.size());
  for (const auto& [cause, count] : counts_) out.push_back(count);
  return out;
}

}  // namespace tiresias

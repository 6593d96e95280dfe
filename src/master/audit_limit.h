// The audit log's rate limit on refusals, with a count of every refusal by
// cause: an attacker hammering the door must not turn the log into an fsync
// storm, and must not make refusals disappear either.
//
// At most `per_second` refusals a second (of the master's clock) are
// written with their details; the ones beyond are counted by cause (the
// call, the outcome, who) and written as ONE summary entry (outcome
// "unrecorded") at the first chance in a later second: before the next
// entry of any kind, or at Flush, which the master calls every second:
//
//   dropped 130 refusals: 100 UpdateJobs by mallory: denied, 30 ListJobs
//   by -: unauthenticated
//
// Every refusal, written or not, also counts for good in Counts (shown on
// /metrics as tiresias_audit_refusals_total and
// tiresias_audit_refusals_unrecorded_total). Entries that are not refusals
// ("ok") are never limited.
//
// Pure (no clock, no I/O: it says what to write); not thread-safe, the
// caller serializes.
#ifndef TIRESIAS_MASTER_AUDIT_LIMIT_H_
#define TIRESIAS_MASTER_AUDIT_LIMIT_H_

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/time.h"
#include "master/auth_records.h"

namespace tiresias {

// Why a refusal was made, as counted. Its values come from sanitized
// records (audit_text.h), and their number is bounded: `action` is the
// call's name, never caller text; `principal` an authenticated user or "-".
struct AuditCause {
  // The action's first word ("UpdateJobs" of "UpdateJobs cancel"), with
  // the path for HTTP ("GET /metrics").
  std::string action;
  std::string outcome;    // "denied", "unauthenticated"
  std::string principal;  // who, "-" if unknown

  auto operator<=>(const AuditCause&) const = default;
};

struct AuditCauseCount {
  AuditCause cause;
  int64_t refusals = 0;    // every refusal of this cause
  int64_t unrecorded = 0;  // of those, written only in a summary
};

class AuditRateLimit {
 public:
  // Distinct causes counted; refusals of further causes are counted under
  // the principal kOtherPrincipals.
  static constexpr size_t kMaxCauses = 1000;
  static constexpr const char* kOtherPrincipals = "(others)";
  // Causes listed in one summary entry; the rest are summed.
  static constexpr size_t kSummaryCauses = 20;

  explicit AuditRateLimit(int per_second) : per_second_(per_second) {}

  // What to write, in order, for `record` (its time set, its text
  // sanitized): the summary of refusals not written, if one is due; then
  // `record`, unless it is a refusal over the limit (then only counted).
  std::vector<AuditRecord> Admit(AuditRecord record);
  // The summary of the refusals not written, if one is due at `now` (they
  // were refused in an earlier second); it is then no longer due.
  std::optional<AuditRecord> Flush(Seconds now);
  // Every cause counted so far, in cause order.
  std::vector<AuditCauseCount> Counts() const;

 private:
  AuditCauseCount& CountFor(const AuditRecord& refusal);

  const int per_second_;
  double window_second_ = -1;  // the second written_in_window_ counts in
  int written_in_window_ = 0;
  // Refusals not written since the last summary, by cause, and the latest
  // second one of them was refused in.
  std::map<AuditCause, int64_t> unwritten_;
  double unwritten_second_ = -1;
  std::map<AuditCause, AuditCauseCount> counts_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_AUDIT_LIMIT_H_

#include "dashboard/api_params.h"

#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/api_json.h"
#include "core/status_macros.h"
#include "dashboard/request_checks.h"

namespace tiresias {
namespace {

// Longest user, name or page token taken (the master's limits are lower
// for users and names; the token is a short base64 text).
constexpr size_t kMaxTextBytes = 1024;

absl::Status Bad(const std::string& name, const std::string& expected,
                 const std::string& got) {
  return absl::InvalidArgumentError(absl::StrCat(
      name, ": expected ", expected, ", got \"", Printable(got), "\""));
}

// Each parameter once, and only those in `known`.
absl::StatusOr<std::map<std::string, std::string>> Collect(
    const QueryParams& params, const std::vector<std::string>& known) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : params) {
    bool ok = false;
    for (const std::string& k : known) ok = ok || k == name;
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown parameter \"", Printable(name),
                       "\" (expected ", absl::StrJoin(known, ", "), ")"));
    }
    if (!out.emplace(name, value).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": given more than once"));
    }
  }
  return out;
}

absl::Status Text(const std::map<std::string, std::string>& p,
                  const std::string& name, std::string* out) {
  auto it = p.find(name);
  if (it == p.end()) return absl::OkStatus();
  if (it->second.size() > kMaxTextBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": expected at most ", kMaxTextBytes, " bytes, got ",
        it->second.size()));
  }
  *out = it->second;
  return absl::OkStatus();
}

template <typename Int>
absl::Status Integer(const std::map<std::string, std::string>& p,
                     const std::string& name, Int lo, Int hi, Int* out) {
  auto it = p.find(name);
  if (it == p.end()) return absl::OkStatus();
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v) || v < lo || v > hi) {
    return Bad(name, absl::StrCat("a whole number from ", lo, " to ", hi),
               it->second);
  }
  *out = static_cast<Int>(v);
  return absl::OkStatus();
}

absl::Status Time(const std::map<std::string, std::string>& p,
                  const std::string& name, std::optional<double>* out) {
  auto it = p.find(name);
  if (it == p.end()) return absl::OkStatus();
  double v = 0;
  if (!absl::SimpleAtod(it->second, &v) || !std::isfinite(v) || v < 0) {
    return Bad(name, "a time in Unix seconds", it->second);
  }
  *out = v;
  return absl::OkStatus();
}


}  // namespace

const std::vector<std::string>& JobStateNames() {
  static const auto* names = new std::vector<std::string>{
      "pending",  "starting", "running",   "preempted",
      "finished", "failed",   "cancelled", "timeout"};
  return *names;
}

absl::StatusOr<JobsParams> ParseJobsParams(const QueryParams& params) {
  absl::StatusOr<std::map<std::string, std::string>> p = Collect(
      params, {"state", "user", "name", "vc", "page_size", "page_token"});
  if (!p.ok()) return p.status();
  JobsParams out;
  if (auto it = p->find("state"); it != p->end() && !it->second.empty()) {
    v1::JobState state;
    if (!api::ParseJobStateWord(it->second, &state)) {
      return Bad("state",
                 absl::StrCat("one of ", absl::StrJoin(JobStateNames(), ", ")),
                 it->second);
    }
    out.state = it->second;
  }
  RETURN_IF_ERROR(Text(*p, "user", &out.user));
  RETURN_IF_ERROR(Text(*p, "name", &out.name));
  RETURN_IF_ERROR(Text(*p, "vc", &out.vc));
  RETURN_IF_ERROR(Text(*p, "page_token", &out.page_token));
  RETURN_IF_ERROR(Integer(*p, "page_size", 1, 500, &out.page_size));
  return out;
}

absl::StatusOr<HistoryParams> ParseHistoryParams(const QueryParams& params) {
  absl::StatusOr<std::map<std::string, std::string>> p =
      Collect(params, {"since", "until", "max_points"});
  if (!p.ok()) return p.status();
  HistoryParams out;
  RETURN_IF_ERROR(Time(*p, "since", &out.since));
  RETURN_IF_ERROR(Time(*p, "until", &out.until));
  RETURN_IF_ERROR(Integer(*p, "max_points", 1, 10000, &out.max_points));
  if (out.since && out.until && *out.since > *out.until) {
    return absl::InvalidArgumentError(
        absl::StrCat("since: expected at most until (", *out.until, "), got ",
                     *out.since));
  }
  return out;
}

absl::StatusOr<LogParams> ParseLogParams(const QueryParams& params) {
  absl::StatusOr<std::map<std::string, std::string>> p =
      Collect(params, {"offset", "attempt", "rank"});
  if (!p.ok()) return p.status();
  LogParams out;
  RETURN_IF_ERROR(Integer<int64_t>(*p, "offset", 0,
                                        int64_t{1} << 50, &out.offset));
  RETURN_IF_ERROR(Integer(*p, "attempt", 0, 1000000, &out.attempt));
  RETURN_IF_ERROR(Integer(*p, "rank", 0, 100000, &out.rank));
  return out;
}

}  // namespace tiresias

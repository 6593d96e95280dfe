#include "cli/usage_report.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/history.h"
#include "cli/printable.h"
#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using json = nlohmann::json;

// The part of `job`'s usage that falls in [since, until): 0 for a job that
// never started.
double FractionIn(const v1::Job& job, double since, double until, double now) {
  if (!job.has_first_start_time()) return 0;
  const double start = job.first_start_time();
  const double end = job.has_end_time() ? job.end_time() : now;
  if (end <= start) return start >= since && start < until ? 1 : 0;
  const double inside = std::min(end, until) - std::max(start, since);
  return std::clamp(inside / (end - start), 0.0, 1.0);
}

struct Sums {
  int64_t jobs = 0;
  double gpu_seconds = 0;
  double cpu_seconds = 0;
};

// Largest GPU-seconds first, then by name.
template <typename Map>
std::vector<std::pair<std::string, Sums>> Ordered(const Map& sums) {
  std::vector<std::pair<std::string, Sums>> out(sums.begin(), sums.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.second.gpu_seconds > b.second.gpu_seconds;
  });
  return out;
}

std::string Hours(double seconds) {
  return absl::StrFormat("%.1f", seconds / 3600);
}

}  // namespace

absl::StatusOr<UsageBy> ParseUsageBy(const std::string& text) {
  UsageBy by;
  for (absl::string_view word : absl::StrSplit(text, ',')) {
    if (word == "vc" && !by.vc) {
      by.vc = true;
    } else if (word == "user" && !by.user) {
      by.user = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--by ", text, ": expected vc, user or vc,user"));
    }
  }
  return by;
}

UsageReport RollUpUsage(const std::vector<v1::Job>& jobs, UsageBy by,
                        double since, double until, double now) {
  UsageReport report;
  report.since = since;
  report.until = until;
  // By the first key (VC, or user when not by VC), then the second.
  std::map<std::string, std::pair<Sums, std::map<std::string, Sums>>> groups;
  for (const v1::Job& job : jobs) {
    const double part = FractionIn(job, since, until, now);
    if (part <= 0) continue;
    const double gpu = part * job.total_executed_seconds() * job.spec().gpus();
    const double cpu = part * job.cpu_seconds();
    const std::string first = by.vc ? job.spec().vc() : job.spec().user();
    auto& [total, users] = groups[first];
    for (Sums* sums :
         {&total, by.vc && by.user ? &users[job.spec().user()] : nullptr}) {
      if (sums == nullptr) continue;
      ++sums->jobs;
      sums->gpu_seconds += gpu;
      sums->cpu_seconds += cpu;
    }
    ++report.total_jobs;
    report.total_gpu_seconds += gpu;
  }
  std::map<std::string, Sums> totals;
  for (const auto& [name, group] : groups) totals[name] = group.first;
  for (const auto& [name, sums] : Ordered(totals)) {
    UsageRow row{.jobs = sums.jobs,
                 .gpu_seconds = sums.gpu_seconds,
                 .cpu_seconds = sums.cpu_seconds};
    (by.vc ? row.vc : row.user) = name;
    report.rows.push_back(row);
    for (const auto& [user, user_sums] : Ordered(groups[name].second)) {
      report.rows.push_back(UsageRow{.vc = name,
                                     .user = user,
                                     .jobs = user_sums.jobs,
                                     .gpu_seconds = user_sums.gpu_seconds,
                                     .cpu_seconds = user_sums.cpu_seconds});
    }
  }
  return report;
}

std::string FormatUsage(const UsageReport& report, UsageBy by,
                        UsageFormat format) {
  auto share = [&](const UsageRow& row) {
    return report.total_gpu_seconds > 0
               ? row.gpu_seconds / report.total_gpu_seconds
               : 0.0;
  };
  if (format == UsageFormat::kJson) {
    json rows = json::array();
    for (const UsageRow& row : report.rows) {
      json out = {{"jobs", row.jobs},
                  {"gpu_s", row.gpu_seconds},
                  {"cpu_s", row.cpu_seconds},
                  {"share", share(row)}};
      // Keys only for what the report is by; null: a job of no VC, or a
      // VC's total row.
      if (by.vc) out["vc"] = row.vc.empty() ? json(nullptr) : json(row.vc);
      if (by.user) {
        out["user"] = row.user.empty() ? json(nullptr) : json(row.user);
      }
      rows.push_back(std::move(out));
    }
    return api::Dump(json{{"since_time", report.since},
                          {"until_time", report.until},
                          {"total_gpu_s", report.total_gpu_seconds},
                          {"total_jobs", report.total_jobs},
                          {"rows", std::move(rows)}}) +
           "\n";
  }
  const bool csv = format == UsageFormat::kCsv;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  if (by.vc) header.push_back("VC");
  if (by.user) header.push_back("USER");
  for (const char* h : {"JOBS", "GPU-HOURS", "SHARE", "CPU-HOURS"}) {
    header.push_back(h);
  }
  rows.push_back(header);
  for (const UsageRow& row : report.rows) {
    std::vector<std::string> cells;
    // A VC's users are indented under its total row in the table.
    const bool user_row = by.vc && by.user && !row.user.empty();
    if (by.vc) {
      const std::string vc = row.vc.empty() ? "-" : row.vc;
      cells.push_back(csv ? vc : user_row ? "" : Printable(vc));
    }
    if (by.user) cells.push_back(csv ? row.user : Printable(row.user));
    cells.push_back(absl::StrCat(row.jobs));
    cells.push_back(Hours(row.gpu_seconds));
    cells.push_back(absl::StrFormat("%.1f%%", 100 * share(row)));
    cells.push_back(Hours(row.cpu_seconds));
    rows.push_back(std::move(cells));
  }
  std::string out;
  if (!csv) {
    out = absl::StrCat("Usage from ", FormatTime(report.since), " to ",
                       FormatTime(report.until), ": ",
                       Hours(report.total_gpu_seconds), " GPU-hours, ",
                       report.total_jobs,
                       report.total_jobs == 1 ? " job" : " jobs", "\n");
    if (report.rows.empty()) return out;
  }
  return out + FormatRows(rows, csv);
}

}  // namespace tiresias::cli

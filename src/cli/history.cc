#include "cli/history.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "cli/api_json.h"
#include "cli/cluster_client.h"
#include "cli/printable.h"
#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using json = nlohmann::json;

double RunSeconds(const v1::Job& job) { return job.total_executed_seconds(); }

// Only ended jobs are listed: their wait is up to their end, whatever the
// clock (an unfinished one would show 0).
double WaitSeconds(const v1::Job& job) {
  return api::JobWaitSeconds(job, job.submit_time());
}

// One field: its header, its cell as text (table and CSV; the table's user
// text goes through Printable), and its key in the job's JSON
// (api::JobJson), whose value --json prints under that key.
struct Field {
  const char* name;
  const char* header;
  std::function<std::string(const v1::Job&)> text;
  const char* key;
};

std::string OptionalTime(bool has, double t) { return has ? FormatTime(t) : "-"; }

const std::vector<Field>& Fields() {
  static const std::vector<Field>* const kFields = new std::vector<Field>{
      {"id", "JOBID", [](const v1::Job& j) { return absl::StrCat(j.id()); },
       "id"},
      {"name", "NAME", [](const v1::Job& j) { return j.spec().name(); },
       "name"},
      {"user", "USER", [](const v1::Job& j) { return j.spec().user(); },
       "user"},
      {"state", "STATE",
       [](const v1::Job& j) { return JobStateName(j.state()); }, "state"},
      {"exit", "EXIT",
       [](const v1::Job& j) {
         return j.has_exit_code() ? absl::StrCat(j.exit_code()) : "-";
       },
       "exit_code"},
      {"gpus", "GPUS",
       [](const v1::Job& j) { return absl::StrCat(j.spec().gpus()); }, "gpus"},
      {"queue", "QUEUE", [](const v1::Job& j) { return absl::StrCat(j.queue()); },
       "queue"},
      {"submit", "SUBMIT",
       [](const v1::Job& j) { return FormatTime(j.submit_time()); },
       "submit_time"},
      {"start", "START",
       [](const v1::Job& j) {
         return OptionalTime(j.has_first_start_time(), j.first_start_time());
       },
       "first_start_time"},
      {"end", "END",
       [](const v1::Job& j) {
         return OptionalTime(j.has_end_time(), j.end_time());
       },
       "end_time"},
      {"wait", "WAIT",
       [](const v1::Job& j) { return FormatDuration(WaitSeconds(j)); },
       "wait_s"},
      {"run", "RUN",
       [](const v1::Job& j) { return FormatDuration(RunSeconds(j)); },
       "total_executed_s"},
      {"gpu_seconds", "GPU-SECONDS",
       [](const v1::Job& j) {
         return absl::StrFormat("%.0f", j.attained_gpu_seconds());
       },
       "attained_gpu_s"},
      {"preemptions", "PREEMPTIONS",
       [](const v1::Job& j) { return absl::StrCat(j.preemptions()); },
       "preemptions"},
      {"restarts", "RESTARTS",
       [](const v1::Job& j) { return absl::StrCat(j.restarts()); },
       "restarts"},
      {"attempts", "ATTEMPTS",
       [](const v1::Job& j) { return absl::StrCat(j.attempt()); }, "attempt"},
      {"nodes", "NODES",
       [](const v1::Job& j) {
         return j.nodes().empty() ? std::string("-")
                                  : absl::StrJoin(j.nodes(), ",");
       },
       "nodes"},
      {"workdir", "WORKDIR", [](const v1::Job& j) { return j.spec().workdir(); },
       "workdir"},
  };
  return *kFields;
}

const Field* FindField(absl::string_view name) {
  for (const Field& f : Fields()) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

// RFC 4180: quoted when it holds a comma, a quote or a line break.
std::string CsvCell(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

const std::vector<std::string>& HistoryFieldNames() {
  static const std::vector<std::string>* const kNames = [] {
    auto* names = new std::vector<std::string>;
    for (const Field& f : Fields()) names->push_back(f.name);
    return names;
  }();
  return *kNames;
}

absl::StatusOr<std::vector<std::string>> ParseHistoryFields(
    const std::string& format) {
  std::vector<std::string> fields;
  for (absl::string_view name : absl::StrSplit(format, ',')) {
    if (FindField(name) == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--format: unknown field \"", name, "\"; expected some of ",
          absl::StrJoin(HistoryFieldNames(), ","), " (comma-separated)"));
    }
    fields.emplace_back(name);
  }
  return fields;
}

bool InHistory(const v1::Job& job, double since, double until,
               const std::vector<v1::JobState>& states) {
  if (!IsFinal(job.state()) || !job.has_end_time()) return false;
  if (job.end_time() < since || job.end_time() >= until) return false;
  return states.empty() ||
         std::find(states.begin(), states.end(), job.state()) != states.end();
}

std::string FormatHistory(const std::vector<v1::Job>& jobs,
                          const std::vector<std::string>& names,
                          HistoryFormat format) {
  std::vector<const Field*> fields;
  for (const std::string& name : names) fields.push_back(FindField(name));
  if (format == HistoryFormat::kJson) {
    json list = json::array();
    for (const v1::Job& job : jobs) {
      const json all = api::JobJson(job, api::JobView::kList,
                                    job.submit_time());  // ended: any clock
      json row = json::object();
      for (const Field* f : fields) row[f->key] = all[f->key];
      list.push_back(std::move(row));
    }
    return api::Dump(json{{"jobs", std::move(list)}}) + "\n";
  }
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header;
  for (const Field* f : fields) header.push_back(f->header);
  rows.push_back(header);
  for (const v1::Job& job : jobs) {
    std::vector<std::string> row;
    for (const Field* f : fields) {
      row.push_back(format == HistoryFormat::kTable ? Printable(f->text(job))
                                                    : f->text(job));
    }
    rows.push_back(std::move(row));
  }
  std::string out;
  if (format == HistoryFormat::kCsv) {
    for (const auto& row : rows) {
      std::vector<std::string> cells;
      for (const std::string& cell : row) cells.push_back(CsvCell(cell));
      absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
    }
    return out;
  }
  std::vector<size_t> width(fields.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(width[i] - row[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

}  // namespace tiresias::cli

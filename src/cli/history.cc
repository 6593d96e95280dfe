#include "cli/history.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/printable.h"
#include "core/memory_size.h"
#include "nlohmann/json.hpp"

namespace tiresias::cli {
namespace {

using json = nlohmann::json;

double RunSeconds(const v1::Job& job) { return job.total_executed_seconds(); }


// One field: its header, its cell as text (table and CSV; the table's user
// text goes through Printable), and its key in the job's JSON
// (api::JobJson), whose value --json prints under that key.
struct Field {
  const char* name;
  const char* header;
  std::function<std::string(const v1::Job&, double now)> text;
  const char* key;
};

std::string OptionalTime(bool has, double t) { return has ? FormatTime(t) : "-"; }

const std::vector<Field>& Fields() {
  static const std::vector<Field>* const kFields = new std::vector<Field>{
      {"id", "JOBID", [](const v1::Job& j, double) { return absl::StrCat(j.id()); },
       "id"},
      {"name", "NAME", [](const v1::Job& j, double) { return j.spec().name(); },
       "name"},
      {"user", "USER", [](const v1::Job& j, double) { return j.spec().user(); },
       "user"},
      {"state", "STATE",
       [](const v1::Job& j, double) { return JobStateName(j.state()); }, "state"},
      {"exit", "EXIT",
       [](const v1::Job& j, double) {
         return j.has_exit_code() ? absl::StrCat(j.exit_code()) : "-";
       },
       "exit_code"},
      {"gpus", "GPUS",
       [](const v1::Job& j, double) { return absl::StrCat(j.spec().gpus()); }, "gpus"},
      {"queue", "QUEUE", [](const v1::Job& j, double) { return absl::StrCat(j.queue()); },
       "queue"},
      {"submit", "SUBMIT",
       [](const v1::Job& j, double) { return FormatTime(j.submit_time()); },
       "submit_time"},
      {"start", "START",
       [](const v1::Job& j, double) {
         return OptionalTime(j.has_first_start_time(), j.first_start_time());
       },
       "first_start_time"},
      {"end", "END",
       [](const v1::Job& j, double) {
         return OptionalTime(j.has_end_time(), j.end_time());
       },
       "end_time"},
      {"wait", "WAIT",
       [](const v1::Job& j, double now) {
         return FormatDuration(api::JobWaitSeconds(j, now));
       },
       "wait_s"},
      {"run", "RUN",
       [](const v1::Job& j, double) { return FormatDuration(RunSeconds(j)); },
       "total_executed_s"},
      {"cpu", "CPU",
       [](const v1::Job& j, double) { return FormatDuration(j.cpu_seconds()); },
       "cpu_s"},
      {"maxmem", "MAXMEM",
       [](const v1::Job& j, double) {
         return j.max_memory_bytes() > 0 ? ByteSizeText(j.max_memory_bytes())
                                         : std::string("-");
       },
       "max_memory_bytes"},
      {"gpu_seconds", "GPU-SECONDS",
       [](const v1::Job& j, double) {
         return absl::StrFormat("%.0f", j.attained_gpu_seconds());
       },
       "attained_gpu_s"},
      {"preemptions", "PREEMPTIONS",
       [](const v1::Job& j, double) { return absl::StrCat(j.preemptions()); },
       "preemptions"},
      {"restarts", "RESTARTS",
       [](const v1::Job& j, double) { return absl::StrCat(j.restarts()); },
       "restarts"},
      {"attempts", "ATTEMPTS",
       [](const v1::Job& j, double) { return absl::StrCat(j.attempt()); }, "attempt"},
      {"nodes", "NODES",
       [](const v1::Job& j, double) {
         return j.nodes().empty() ? std::string("-")
                                  : absl::StrJoin(j.nodes(), ",");
       },
       "nodes"},
      {"workdir", "WORKDIR", [](const v1::Job& j, double) { return j.spec().workdir(); },
       "workdir"},
      {"held", "HELD",
       [](const v1::Job& j, double) { return j.held() ? "yes" : "no"; },
       "held"},
      {"reason", "REASON",
       [](const v1::Job& j, double) {
         return j.pending_reason().empty() ? "-" : j.pending_reason();
       },
       "pending_reason"},
      {"array", "ARRAY",
       [](const v1::Job& j, double) {
         return j.array_id() > 0 ? absl::StrCat(j.array_id()) : "-";
       },
       "array_id"},
      {"index", "INDEX",
       [](const v1::Job& j, double) {
         return j.array_id() > 0 ? absl::StrCat(j.array_index()) : "-";
       },
       "array_index"},
      {"vc", "VC",
       [](const v1::Job& j, double) {
         return j.spec().vc().empty() ? std::string("-") : j.spec().vc();
       },
       "vc"},
      {"qos", "QOS",
       [](const v1::Job& j, double) {
         return j.spec().qos().empty() ? std::string("-") : j.spec().qos();
       },
       "qos"},
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
                          HistoryFormat format, std::optional<double> now) {
  // An ended job's wait runs to its end whatever the clock.
  auto clock = [&now](const v1::Job& job) {
    return now.value_or(job.submit_time());
  };
  std::vector<const Field*> fields;
  for (const std::string& name : names) fields.push_back(FindField(name));
  if (format == HistoryFormat::kJson) {
    json list = json::array();
    for (const v1::Job& job : jobs) {
      const json all = api::JobJson(job, api::JobView::kList, clock(job));
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
      const std::string text = f->text(job, clock(job));
      row.push_back(format == HistoryFormat::kTable ? Printable(text) : text);
    }
    rows.push_back(std::move(row));
  }
  return FormatRows(rows, format == HistoryFormat::kCsv);
}

std::string FormatRows(const std::vector<std::vector<std::string>>& rows,
                       bool csv) {
  std::string out;
  if (csv) {
    for (const auto& row : rows) {
      std::vector<std::string> cells;
      for (const std::string& cell : row) cells.push_back(CsvCell(cell));
      absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
    }
    return out;
  }
  std::vector<size_t> width(rows.empty() ? 0 : rows[0].size(), 0);
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

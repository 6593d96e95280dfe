#include "master/store_rows.h"

#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "api/job_spec.h"
#include "core/dependency.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"
#include "proto/tiresias.pb.h"

namespace tiresias::store_internal {
namespace {

using Json = nlohmann::json;

// Reads typed columns of one row, remembering the first mismatch as a
// DataLoss error that names the file, the row and the column.
class RowReader {
 public:
  RowReader(const SqliteQuery& row, absl::string_view path, std::string what)
      : row_(row), path_(path), what_(std::move(what)) {}

  int64_t Int64(int column, absl::string_view name) {
    if (row_.Type(column) != SQLITE_INTEGER) return Fail(column, name), 0;
    return row_.Int(column);
  }
  int Int(int column, absl::string_view name) {
    int64_t value = Int64(column, name);
    if (value < std::numeric_limits<int>::min() ||
        value > std::numeric_limits<int>::max()) {
      return Fail(column, name, absl::StrCat("out of range: ", value)), 0;
    }
    return static_cast<int>(value);
  }
  std::optional<int> OptionalInt(int column, absl::string_view name) {
    if (row_.IsNull(column)) return std::nullopt;
    return Int(column, name);
  }
  double Real(int column, absl::string_view name) {
    int type = row_.Type(column);
    if (type != SQLITE_FLOAT && type != SQLITE_INTEGER) {
      return Fail(column, name), 0.0;
    }
    return row_.Double(column);
  }
  std::optional<Seconds> OptionalTime(int column, absl::string_view name) {
    if (row_.IsNull(column)) return std::nullopt;
    return Seconds{Real(column, name)};
  }
  std::string Text(int column, absl::string_view name) {
    if (row_.Type(column) != SQLITE_TEXT) return Fail(column, name), "";
    return row_.Text(column);
  }
  // A JSON array of strings.
  std::vector<std::string> Strings(int column, absl::string_view name) {
    Json json = Json::parse(Text(column, name), nullptr, false);
    std::vector<std::string> list;
    if (!json.is_array()) return Fail(column, name, "not a JSON array"), list;
    for (const Json& item : json) {
      if (!item.is_string()) {
        return Fail(column, name, "not a JSON array of strings"), list;
      }
      list.push_back(item.get<std::string>());
    }
    return list;
  }
  // A JSON object of strings.
  std::map<std::string, std::string> Env(int column, absl::string_view name) {
    Json json = Json::parse(Text(column, name), nullptr, false);
    std::map<std::string, std::string> env;
    if (!json.is_object()) return Fail(column, name, "not a JSON object"), env;
    for (const auto& [key, value] : json.items()) {
      if (!value.is_string()) {
        return Fail(column, name, "not a JSON object of strings"), env;
      }
      env[key] = value.get<std::string>();
    }
    return env;
  }
  // A JSON array of {"kind": "afterok"|"afterany"|"afternotok",
  // "job_id": N > 0} (EncodeDependencies).
  std::vector<JobDependency> Dependencies(int column, absl::string_view name) {
    Json json = Json::parse(Text(column, name), nullptr, false);
    std::vector<JobDependency> deps;
    if (!json.is_array()) return Fail(column, name, "not a JSON array"), deps;
    for (const Json& item : json) {
      std::optional<DependencyKind> kind;
      if (item.is_object() && item.contains("kind") &&
          item["kind"].is_string()) {
        const std::string text = item["kind"].get<std::string>();
        for (DependencyKind k :
             {DependencyKind::kAfterOk, DependencyKind::kAfterAny,
              DependencyKind::kAfterNotOk}) {
          if (text == DependencyKindName(k)) kind = k;
        }
      }
      if (!kind || !item.contains("job_id") ||
          !item["job_id"].is_number_integer() ||
          item["job_id"].get<int64_t>() <= 0) {
        return Fail(column, name,
                    "expected [{\"kind\": \"afterok\", \"job_id\": N}, ...]"),
               deps;
      }
      deps.push_back({*kind, item["job_id"].get<int64_t>()});
    }
    return deps;
  }
  // A JobSpec's protobuf bytes (EncodeSpec), whole but for the name, user
  // and GPU count, which the caller reads from their own columns.
  JobRequest Spec(int column, absl::string_view name) {
    v1::JobSpec proto;
    if (row_.Type(column) != SQLITE_BLOB) {
      Fail(column, name);
      return {};
    }
    if (!proto.ParseFromString(row_.Blob(column))) {
      Fail(column, name, "not a serialized JobSpec");
      return {};
    }
    for (const v1::JobDependency& dep : proto.dependencies()) {
      if (!IsDependencyKind(dep.kind()) || dep.job_id() <= 0) {
        Fail(column, name,
             absl::StrCat("dependency kind ", dep.kind(), " on job ",
                          dep.job_id(), ": not a dependency"));
        return {};
      }
    }
    return JobSpecFromProto(proto);
  }
  // A parsed enum value, or its parse error attributed to the column.
  template <typename T>
  T Parsed(absl::StatusOr<T> value, int column, absl::string_view name) {
    if (!value.ok()) return Fail(column, name, value.status().message()), T{};
    return *value;
  }

  // Marks a value that has the right type but is not allowed.
  void Reject(int column, absl::string_view name, absl::string_view why) {
    Fail(column, name, why);
  }

  void set_what(std::string what) { what_ = std::move(what); }
  const absl::Status& status() const { return status_; }

 private:
  void Fail(int column, absl::string_view name, absl::string_view why = "") {
    if (!status_.ok()) return;
    status_ = absl::DataLossError(absl::StrCat(
        path_, ": ", what_, ": column '", name, "': ",
        why.empty() ? absl::StrCat("unexpected ", row_.TypeName(column),
                                   " value")
                    : std::string(why)));
  }

  const SqliteQuery& row_;
  absl::string_view path_;
  std::string what_;
  absl::Status status_;
};

absl::Status CheckFinite(const JobRecord& record, absl::string_view field,
                         double value) {
  if (std::isfinite(value)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "job ", record.id, ": ", field, ": expected a finite number, got ",
      value));
}

absl::Status CheckCount(const JobRecord& record, absl::string_view field,
                        int value) {
  if (value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "job ", record.id, ": ", field, ": expected >= 0, got ", value));
}

// Version 15's code step: each job's spec, from the 13 columns that held
// it, into the spec column; then those columns go.
absl::Status MoveSpecsIntoOneColumn(SqliteDb& db) {
  std::vector<std::pair<int64_t, std::string>> specs;
  {
    ASSIGN_OR_RETURN(
        SqliteQuery select,
        db.Prepare("SELECT id, command, env, checkpoint_dir, model, workdir, "
                   "output, error, time_limit_seconds, no_preempt, "
                   "submitted_held, dependencies, array_indices, "
                   "array_max_running FROM jobs ORDER BY id"));
    while (true) {
      ASSIGN_OR_RETURN(bool more, select.Step());
      if (!more) break;
      RowReader in(select, db.path(), "a job row");
      const int64_t id = in.Int64(0, "id");
      in.set_what(absl::StrCat("job ", id));
      JobRequest spec;
      spec.command = in.Strings(1, "command");
      spec.env = in.Env(2, "env");
      spec.checkpoint_dir = in.Text(3, "checkpoint_dir");
      spec.model = in.Text(4, "model");
      spec.workdir = in.Text(5, "workdir");
      spec.output = in.Text(6, "output");
      spec.error = in.Text(7, "error");
      spec.time_limit = Seconds{in.Real(8, "time_limit_seconds")};
      spec.no_preempt = in.Int(9, "no_preempt") != 0;
      spec.hold = in.Int(10, "submitted_held") != 0;
      spec.dependencies = in.Dependencies(11, "dependencies");
      spec.array.indices = in.Text(12, "array_indices");
      spec.array.max_running = in.Int(13, "array_max_running");
      RETURN_IF_ERROR(in.status());
      specs.emplace_back(id, EncodeSpec(spec));
    }
  }  // the SELECT is reset: the table may change
  for (const auto& [id, bytes] : specs) {
    ASSIGN_OR_RETURN(SqliteQuery update,
                     db.Prepare("UPDATE jobs SET spec = ?2 WHERE id = ?1"));
    RETURN_IF_ERROR(update.Bind(1, id).BindBlob(2, bytes).Run());
  }
  for (const char* column :
       {"command", "env", "checkpoint_dir", "model", "workdir", "output",
        "error", "time_limit_seconds", "no_preempt", "submitted_held",
        "dependencies", "array_indices", "array_max_running"}) {
    RETURN_IF_ERROR(
        db.Exec(absl::StrCat("ALTER TABLE jobs DROP COLUMN ", column)));
  }
  return absl::OkStatus();
}

// Schema 18: the vc column of every job whose spec names a VC.
absl::Status CopyVcsIntoTheirColumn(SqliteDb& db) {
  std::vector<std::pair<int64_t, std::string>> vcs;
  {
    ASSIGN_OR_RETURN(
        SqliteQuery select,
        db.Prepare("SELECT id, spec FROM jobs WHERE length(spec) > 0"));
    while (true) {
      ASSIGN_OR_RETURN(bool more, select.Step());
      if (!more) break;
      v1::JobSpec proto;
      if (!proto.ParseFromString(select.Blob(1))) {
        return absl::DataLossError(
            absl::StrCat(db.path(), ": job ", select.Int(0),
                         ": column 'spec': not a serialized JobSpec"));
      }
      if (!proto.vc().empty()) vcs.emplace_back(select.Int(0), proto.vc());
    }
  }  // the SELECT is reset: the table may change
  for (const auto& [id, vc] : vcs) {
    ASSIGN_OR_RETURN(SqliteQuery update,
                     db.Prepare("UPDATE jobs SET vc = ?2 WHERE id = ?1"));
    RETURN_IF_ERROR(update.Bind(1, id).Bind(2, std::string_view(vc)).Run());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status MigrateInCode(SqliteDb& db, int to_version) {
  if (to_version == 15) return MoveSpecsIntoOneColumn(db);
  if (to_version == 18) return CopyVcsIntoTheirColumn(db);
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeStrings(const std::vector<std::string>& list,
                                          absl::string_view field) {
  try {
    return Json(list).dump();
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not valid UTF-8: ", e.what()));
  }
}

std::string EncodeSpec(const JobRequest& spec) {
  v1::JobSpec proto;
  JobSpecToProto(spec, &proto);
  proto.clear_name();
  proto.clear_user();
  proto.clear_gpus();
  return proto.SerializeAsString();
}

absl::Status CheckJobNumbers(const JobRecord& r) {
  for (auto [field, value] :
       {std::pair<absl::string_view, double>{"attained_gpu_seconds",
                                             r.attained_gpu_seconds},
        {"executed_seconds", r.executed.count()},
        {"total_executed_seconds", r.total_executed.count()},
        {"submit_time", r.submit_time.count()},
        {"last_stop_time", r.last_stop_time.count()},
        {"first_start_time", r.first_start_time.value_or(Seconds{0}).count()},
        {"end_time", r.end_time.value_or(Seconds{0}).count()},
        {"time_limit_seconds", r.spec.time_limit.count()},
        {"cpu_seconds", r.cpu_seconds}}) {
    absl::Status status = CheckFinite(r, field, value);
    if (!status.ok()) return status;
  }
  for (auto [field, value] :
       {std::pair<absl::string_view, int>{"queue", r.queue},
        {"preemptions", r.preemptions},
        {"promotions", r.promotions},
        {"restarts", r.restarts},
        {"attempt", r.attempt},
        {"failed_starts", r.failed_starts},
        {"live_attempt", r.live_attempt}}) {
    absl::Status status = CheckCount(r, field, value);
    if (!status.ok()) return status;
  }
  if (r.cpu_seconds < 0 || r.max_memory_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", r.id,
                     ": cpu_seconds and max_memory_bytes: "
                     "expected >= 0, got ",
                     r.cpu_seconds, " and ", r.max_memory_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<JobRecord> DecodeJob(const SqliteQuery& row,
                                    absl::string_view path) {
  RowReader in(row, path, "a job row");
  JobRecord r;
  r.id = in.Int64(0, "id");
  in.set_what(absl::StrCat("job ", r.id));
  r.spec = in.Spec(4, "spec");
  r.spec.name = in.Text(1, "name");
  r.spec.user = in.Text(2, "user");
  r.spec.num_gpus = in.Int(3, "gpus");
  r.state = in.Parsed(ParseJobRecordState(in.Text(5, "state")), 5, "state");
  if (r.state == JobRecordState::kStarting) {
    in.Reject(5, "state", "\"starting\" is shown, never stored");
  }
  r.queue = in.Int(6, "queue");
  r.attained_gpu_seconds = in.Real(7, "attained_gpu_seconds");
  r.executed = Seconds{in.Real(8, "executed_seconds")};
  r.total_executed = Seconds{in.Real(9, "total_executed_seconds")};
  r.submit_time = Seconds{in.Real(10, "submit_time")};
  r.first_start_time = in.OptionalTime(11, "first_start_time");
  r.end_time = in.OptionalTime(12, "end_time");
  r.last_stop_time = Seconds{in.Real(13, "last_stop_time")};
  r.preemptions = in.Int(14, "preemptions");
  r.promotions = in.Int(15, "promotions");
  r.restarts = in.Int(16, "restarts");
  r.attempt = in.Int(17, "attempt");
  r.nodes = in.Strings(18, "nodes");
  r.exit_code = in.OptionalInt(19, "exit_code");
  r.failed_starts = in.Int(20, "failed_starts");
  if (!row.IsNull(21)) r.request_id = in.Text(21, "request_id");
  r.cancel_requested = in.Int(22, "cancel_requested") != 0;
  if (!row.IsNull(23)) {
    r.profile = in.Parsed(DecodeProfile(in.Text(23, "profile")), 23, "profile");
  }
  r.held = in.Int(24, "held") != 0;
  r.timeout_requested = in.Int(25, "timeout_requested") != 0;
  r.array_id = in.Int64(26, "array_id");
  r.array_index = in.Int(27, "array_index");
  r.cpu_seconds = in.Real(28, "cpu_seconds");
  r.max_memory_bytes = in.Int64(29, "max_memory_bytes");
  r.array_count = in.Int(30, "array_count");
  r.array_split = in.Int(31, "array_split");
  r.live_attempt = in.Int(32, "live_attempt");
  if (!in.status().ok()) return in.status();
  return r;
}

absl::StatusOr<JobRequest> DecodeArraySpec(const SqliteQuery& row,
                                           absl::string_view path) {
  RowReader in(row, path, "a job row");
  const JobId id = in.Int64(0, "id");
  in.set_what(absl::StrCat("job ", id));
  JobRequest spec = in.Spec(33, "array_spec");
  spec.name = in.Text(1, "name");
  spec.user = in.Text(2, "user");
  spec.num_gpus = in.Int(34, "array_gpus");
  if (!in.status().ok()) return in.status();
  return spec;
}

absl::StatusOr<JobEvent> DecodeEvent(const SqliteQuery& row,
                                     absl::string_view path) {
  RowReader in(row, path, "an event row");
  JobEvent e;
  e.sequence = in.Int64(0, "sequence");
  in.set_what(absl::StrCat("event ", e.sequence));
  e.job_id = in.Int64(1, "job_id");
  e.time = Seconds{in.Real(2, "time")};
  e.kind = in.Text(3, "kind");
  e.detail = in.Text(4, "detail");
  if (!in.status().ok()) return in.status();
  return e;
}

absl::StatusOr<NodeRecord> DecodeNode(const SqliteQuery& row,
                                      absl::string_view path) {
  RowReader in(row, path, "a node row");
  NodeRecord n;
  n.id = in.Int64(0, "id");
  in.set_what(absl::StrCat("node ", n.id));
  n.name = in.Text(1, "name");
  n.address = in.Text(2, "address");
  n.gpus = in.Int(3, "gpus");
  n.state = in.Parsed(ParseNodeState(in.Text(4, "state")), 4, "state");
  n.last_heartbeat = Seconds{in.Real(5, "last_heartbeat")};
  n.agent_token_hash = in.Text(6, "agent_token_hash");
  n.drained = in.Int64(7, "drained") != 0;
  n.drain_reason = in.Text(8, "drain_reason");
  if (!in.status().ok()) return in.status();
  return n;
}

}  // namespace tiresias::store_internal

// SqliteStore (sqlite_store.h): jobs, their events and launches.
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"
#include "master/store_rows.h"

namespace tiresias {
namespace {

using store_internal::DecodeEvent;
using store_internal::DecodeJob;
using store_internal::kEventColumns;
using store_internal::kJobColumns;

absl::Status NoSuchJob(JobId id) {
  return absl::NotFoundError(absl::StrCat("job ", id, ": no such job"));
}


}  // namespace

absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>> SqliteStore::CreateJobs(
    const std::vector<NewJob>& jobs, Seconds submit_time) {
  return CreateJobsImpl(jobs, submit_time, /*all_or_nothing=*/false);
}

absl::StatusOr<std::vector<CreatedJob>> SqliteStore::CreateJobsAllOrNothing(
    const std::vector<NewJob>& jobs, Seconds submit_time) {
  ASSIGN_OR_RETURN(std::vector<absl::StatusOr<CreatedJob>> created,
                   CreateJobsImpl(jobs, submit_time, /*all_or_nothing=*/true));
  std::vector<CreatedJob> out;
  out.reserve(created.size());
  // Every one is OK: CreateJobsImpl fails as a whole otherwise.
  for (absl::StatusOr<CreatedJob>& job : created) out.push_back(*std::move(job));
  return out;
}

absl::StatusOr<std::vector<absl::StatusOr<CreatedJob>>>
SqliteStore::CreateJobsImpl(const std::vector<NewJob>& jobs,
                            Seconds submit_time, bool all_or_nothing) {
  // With all_or_nothing, job i's refusal is the whole call's.
  auto refuse_all = [](size_t i, const absl::Status& status) {
    return absl::Status(status.code(),
                        absl::StrCat("jobs[", i, "]: ", status.message()));
  };
  if (!std::isfinite(submit_time.count())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "submit_time: expected a finite number, got ", submit_time.count()));
  }
  // Each job's outcome, in order.
  std::vector<absl::StatusOr<CreatedJob>> out(jobs.size(), CreatedJob{});

  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  JobId array_id = 0;  // of the array the jobs being written belong to
  std::string array_spec;                   // the last job's encoded spec
  std::optional<JobProfile> array_profile;  // and its profile
  for (size_t i = 0; i < jobs.size(); ++i) {
    const NewJob& job = jobs[i];
    if (job.starts_array) array_id = 0;
    if (!job.request_id.empty()) {
      // Sees the rows this transaction inserted, so a request id repeated
      // within the batch finds its first use too.
      ASSIGN_OR_RETURN(std::optional<JobRecord> used,
                       FindByRequestId(job.spec.user, job.request_id));
      if (used) {
        if (used->spec == job.spec) {
          out[i] = CreatedJob{used->id, true};
          out[i]->array_id = used->array_id;
          out[i]->array_count = used->array_count;
          if (job.array_index) array_id = used->array_id;
        } else {
          out[i] = absl::AlreadyExistsError(absl::StrCat(
              "request_id \"", job.request_id, "\": already used for job ",
              used->id, ", submitted with a different spec"));
          // Returning drops the transaction: it rolls back.
          if (all_or_nothing) return refuse_all(i, out[i].status());
        }
        continue;
      }
    }
    if (job.array_count > 1) {
      // An array stored as one record: no stored job may hold the request
      // id of one of its jobs, written later.
      ASSIGN_OR_RETURN(std::optional<JobRecord> taken,
                       ArrayRequestIdTakenLocked(job.spec.user, job.request_id,
                                                 job.array_count));
      if (taken) {
        out[i] = absl::AlreadyExistsError(absl::StrCat(
            "request_id \"", taken->request_id, "\": already used for job ",
            taken->id, ", submitted with a different spec"));
        if (all_or_nothing) return refuse_all(i, out[i].status());
        continue;
      }
    }
    // A job of an array after its first has the first's spec (NewJob): its
    // profile and bytes are the first's, found and encoded once.
    const bool same_as_first = job.array_index && !job.starts_array &&
                               array_id != 0 && !array_spec.empty();
    if (!same_as_first) {
      ASSIGN_OR_RETURN(array_profile,
                       ProfileBySignatureLocked(JobSignature(job.spec)));
      array_spec = store_internal::EncodeSpec(job.spec);
    }
    const std::optional<JobProfile>& profile = array_profile;
    ASSIGN_OR_RETURN(JobId id,
                     InsertJobLocked(job, array_spec, submit_time, profile,
                                     job.array_index ? array_id : 0));
    if (job.starts_array) array_id = id;
    out[i] = CreatedJob{id, false, profile};
    if (job.array_index) out[i]->array_id = array_id;
    out[i]->array_count = job.array_count;
  }
  RETURN_IF_ERROR(CommitLocked(txn));
  return out;
}

absl::StatusOr<JobId> SqliteStore::InsertJobLocked(
    const NewJob& job, const std::string& encoded_spec, Seconds submit_time,
    const std::optional<JobProfile>& profile, JobId array_id, JobId id) {
  const JobRequest& spec = job.spec;
  {
    ASSIGN_OR_RETURN(
        SqliteQuery insert,
        db_->Prepare(absl::StrCat(
            "INSERT INTO jobs (", kJobColumns,
            ", vc, array_spec, array_gpus) VALUES (?12, ?1, ?2, ?3, ?4, "
            "'pending', 0, 0, 0, 0, ?5, "
            "NULL, NULL, ?5, 0, 0, 0, 0, '[]', NULL, 0, ?6, 0, ?7, ?8, 0, ?9, "
            "?10, 0, 0, ?13, ?14, 0, ?11, ?15, ?16)")));
    std::optional<std::string_view> request_id;
    if (!job.request_id.empty()) request_id = job.request_id;
    std::optional<std::string> profile_json;
    if (profile) profile_json = EncodeProfile(*profile);
    insert.Bind(1, spec.name)
        .Bind(2, spec.user)
        .Bind(3, int64_t{spec.num_gpus})
        .BindBlob(4, encoded_spec)
        .Bind(5, submit_time.count())
        .Bind(6, request_id)
        .Bind(7, profile_json)
        .Bind(8, int64_t{spec.hold ? 1 : 0})
        .Bind(9, int64_t{array_id})
        .Bind(10, int64_t{job.array_index.value_or(0)})
        .Bind(11, std::string_view(spec.vc))
        .Bind(12, id > 0 ? std::optional<int64_t>(id) : std::nullopt)
        .Bind(13, int64_t{job.array_count})
        .Bind(14, int64_t{job.array_count > 0 ? 1 : 0})
        .BindBlob(15, job.array_count > 0 ? std::string_view(encoded_spec)
                                          : std::string_view())
        .Bind(16, int64_t{job.array_count > 0 ? spec.num_gpus : 0});
    absl::Status status = insert.Run();
    if (insert.last_error_code() == SQLITE_CONSTRAINT_UNIQUE) {
      // FindByRequestId looked first under the same lock: only a hand edit
      // gets here.
      return absl::AlreadyExistsError(
          absl::StrCat("request_id \"", job.request_id, "\": already used"));
    }
    RETURN_IF_ERROR(status);
  }
  id = db_->LastInsertRowId();
  if (job.starts_array) {
    // The array is named by its first job: known only now.
    ASSIGN_OR_RETURN(SqliteQuery update,
                     db_->Prepare("UPDATE jobs SET array_id = ?1 WHERE id = ?1"));
    RETURN_IF_ERROR(update.Bind(1, id).Run());
  }
  if (job.array_count > 1) {
    // The ids of the array's unwritten jobs are taken: no later job gets
    // one (AUTOINCREMENT continues after sqlite_sequence's).
    ASSIGN_OR_RETURN(SqliteQuery keep,
                     db_->Prepare("UPDATE sqlite_sequence SET seq = max(seq, "
                                  "?1) WHERE name = 'jobs'"));
    RETURN_IF_ERROR(keep.Bind(1, id + job.array_count - 1).Run());
  }
  RETURN_IF_ERROR(AppendEventLocked(JobEvent{
      id, 0, submit_time, "submitted",
      absl::StrCat(spec.num_gpus, spec.num_gpus == 1 ? " GPU" : " GPUs")}));
  return id;
}

absl::StatusOr<std::optional<JobRecord>> SqliteStore::FindByRequestId(
    const std::string& user, const std::string& request_id) const {
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat(
                       "SELECT ", kJobColumns,
                       " FROM jobs WHERE user = ? AND request_id = ?")));
  query.Bind(1, user).Bind(2, request_id);
  ASSIGN_OR_RETURN(bool row, query.Step());
  // Not written: it may be an array's unwritten job.
  if (!row) return UnwrittenByRequestIdLocked(user, request_id);
  ASSIGN_OR_RETURN(JobRecord job, DecodeJob(query, db_->path()));
  return std::optional<JobRecord>(std::move(job));
}

absl::Status SqliteStore::Write(const StoreWrite& write) {
  for (const JobRecord& record : write.jobs) {
    RETURN_IF_ERROR(store_internal::CheckJobNumbers(record));
    if (record.state == JobRecordState::kStarting) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job ", record.id,
          ": state: starting is shown, never stored (store pending or "
          "preempted)"));
    }
  }
  for (JobId id : write.new_specs) {
    if (std::none_of(write.jobs.begin(), write.jobs.end(),
                     [id](const JobRecord& r) { return r.id == id; })) {
      return absl::InvalidArgumentError(absl::StrCat(
          "new_specs: job ", id, " is not among the jobs written"));
    }
  }
  for (const JobEvent& event : write.events) {
    if (!std::isfinite(event.time.count())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "event \"", event.kind, "\" of job ", event.job_id,
          ": time: expected a finite number, got ", event.time.count()));
    }
  }
  for (const NodeRecord& node : write.nodes) RETURN_IF_ERROR(CheckNode(node));
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  for (const NodeRecord& node : write.nodes) {
    RETURN_IF_ERROR(UpsertNodeLocked(node).status());
  }
  for (const JobRecord& record : write.jobs) {
    RETURN_IF_ERROR(UpdateJobLocked(record));
    if (write.new_specs.contains(record.id)) {
      ASSIGN_OR_RETURN(SqliteQuery update,
                       db_->Prepare("UPDATE jobs SET gpus = ?2, spec = ?3 "
                                    "WHERE id = ?1"));
      RETURN_IF_ERROR(update.Bind(1, record.id)
                          .Bind(2, int64_t{record.spec.num_gpus})
                          .BindBlob(3, store_internal::EncodeSpec(record.spec))
                          .Run());
    }
  }
  for (const JobEvent& event : write.events) {
    RETURN_IF_ERROR(AppendEventLocked(event));
  }
  for (const LaunchRecord& launch : write.launches) {
    RETURN_IF_ERROR(InsertLaunchLocked(launch));
  }
  return CommitLocked(txn);
}

absl::Status SqliteStore::InsertLaunchLocked(const LaunchRecord& launch) {
  for (size_t rank = 0; rank < launch.nodes.size(); ++rank) {
    ASSIGN_OR_RETURN(SqliteQuery insert,
                     db_->Prepare("INSERT OR REPLACE INTO launches (job_id, "
                                  "attempt, rank, node) VALUES (?, ?, ?, ?)"));
    insert.Bind(1, launch.job_id)
        .Bind(2, int64_t{launch.attempt})
        .Bind(3, static_cast<int64_t>(rank))
        .Bind(4, launch.nodes[rank]);
    absl::Status status = insert.Run();
    if (insert.last_error_code() == SQLITE_CONSTRAINT_FOREIGNKEY) {
      return absl::NotFoundError(absl::StrCat("launch ", launch.attempt,
                                              " of job ", launch.job_id,
                                              ": no such job"));
    }
    RETURN_IF_ERROR(status);
  }
  return absl::OkStatus();
}

absl::StatusOr<JobTotals> SqliteStore::Totals() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT state, count(*), sum(preemptions), "
                                "sum(promotions), total(cpu_seconds) FROM "
                                "jobs GROUP BY state"));
  JobTotals totals;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    absl::StatusOr<JobRecordState> state = ParseJobRecordState(query.Text(0));
    if (!state.ok()) {
      return absl::DataLossError(absl::StrCat(db_->path(), ": jobs: column "
                                              "'state': ",
                                              state.status().message()));
    }
    totals.by_state[*state] = query.Int(1);
    totals.jobs += query.Int(1);
    totals.preemptions += query.Int(2);
    totals.promotions += query.Int(3);
    totals.cpu_seconds += query.Double(4);
  }
  // An array's unwritten jobs are pending jobs.
  ASSIGN_OR_RETURN(const int64_t unwritten, UnwrittenCountLocked());
  if (unwritten > 0) {
    totals.by_state[JobRecordState::kPending] += unwritten;
    totals.jobs += unwritten;
  }
  // Ids never repeat (AUTOINCREMENT): the highest ever given is in
  // sqlite_sequence, also when that job is gone.
  ASSIGN_OR_RETURN(SqliteQuery max,
                   db_->Prepare("SELECT seq FROM sqlite_sequence WHERE "
                                "name = 'jobs'"));
  ASSIGN_OR_RETURN(bool row, max.Step());
  if (row) totals.max_id = max.Int(0);
  return totals;
}

absl::StatusOr<std::vector<std::string>> SqliteStore::LaunchNodes(
    JobId job, int attempt) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT rank, node FROM launches WHERE "
                                "job_id = ? AND attempt = ? ORDER BY rank"));
  query.Bind(1, job).Bind(2, int64_t{attempt});
  std::vector<std::string> nodes;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return nodes;
    if (query.Int(0) != static_cast<int64_t>(nodes.size())) {
      return absl::DataLossError(absl::StrCat(
          db_->path(), ": launch ", attempt, " of job ", job,
          ": ranks not numbered 0, 1, ... (found rank ", query.Int(0), ")"));
    }
    nodes.push_back(query.Text(1));
  }
}

absl::Status SqliteStore::UpdateJobLocked(const JobRecord& r) {
  ASSIGN_OR_RETURN(std::string nodes,
                   store_internal::EncodeStrings(
                       r.nodes, absl::StrCat("job ", r.id, ": nodes")));
  ASSIGN_OR_RETURN(
      SqliteQuery update,
      db_->Prepare(
          "UPDATE jobs SET state = ?2, queue = ?3, attained_gpu_seconds = ?4, "
          "executed_seconds = ?5, total_executed_seconds = ?6, "
          "first_start_time = ?7, end_time = ?8, last_stop_time = ?9, "
          "preemptions = ?10, promotions = ?11, restarts = ?12, "
          "attempt = ?13, nodes = ?14, exit_code = ?15, failed_starts = ?16, "
          "cancel_requested = ?17, held = ?18, timeout_requested = ?19, "
          "cpu_seconds = ?20, max_memory_bytes = ?21, live_attempt = ?22 "
          "WHERE id = ?1"));
  auto seconds = [](const std::optional<Seconds>& t) {
    return t ? std::optional<double>(t->count()) : std::nullopt;
  };
  std::optional<int64_t> exit_code;
  if (r.exit_code) exit_code = *r.exit_code;
  update.Bind(1, r.id)
      .Bind(2, JobRecordStateName(r.state))
      .Bind(3, int64_t{r.queue})
      .Bind(4, r.attained_gpu_seconds)
      .Bind(5, r.executed.count())
      .Bind(6, r.total_executed.count())
      .Bind(7, seconds(r.first_start_time))
      .Bind(8, seconds(r.end_time))
      .Bind(9, r.last_stop_time.count())
      .Bind(10, int64_t{r.preemptions})
      .Bind(11, int64_t{r.promotions})
      .Bind(12, int64_t{r.restarts})
      .Bind(13, int64_t{r.attempt})
      .Bind(14, nodes)
      .Bind(15, exit_code)
      .Bind(16, int64_t{r.failed_starts})
      .Bind(17, int64_t{r.cancel_requested ? 1 : 0})
      .Bind(18, int64_t{r.held ? 1 : 0})
      .Bind(19, int64_t{r.timeout_requested ? 1 : 0})
      .Bind(20, r.cpu_seconds)
      .Bind(21, r.max_memory_bytes)
      .Bind(22, int64_t{r.live_attempt});
  RETURN_IF_ERROR(update.Run());
  if (db_->Changes() == 0) return NoSuchJob(r.id);
  return absl::OkStatus();
}

absl::Status SqliteStore::AppendEventLocked(const JobEvent& event) {
  ASSIGN_OR_RETURN(SqliteQuery insert,
                   db_->Prepare("INSERT INTO events (job_id, time, kind, "
                                "detail) VALUES (?, ?, ?, ?)"));
  insert.Bind(1, event.job_id).Bind(2, event.time.count())
      .Bind(3, event.kind).Bind(4, event.detail);
  absl::Status status = insert.Run();
  if (insert.last_error_code() == SQLITE_CONSTRAINT_FOREIGNKEY) {
    return absl::NotFoundError(absl::StrCat(
        "event \"", event.kind, "\" of job ", event.job_id, ": no such job"));
  }
  return status;
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::SelectJobs(
    const std::string& where, int64_t arg) const {
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat("SELECT ", kJobColumns,
                                             " FROM jobs ", where,
                                             " ORDER BY id")));
  if (where.find('?') != std::string::npos) query.Bind(1, arg);
  std::vector<JobRecord> jobs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return jobs;
    ASSIGN_OR_RETURN(JobRecord job, DecodeJob(query, db_->path()));
    jobs.push_back(std::move(job));
  }
}

absl::StatusOr<std::vector<JobEvent>> SqliteStore::SelectEvents(
    const std::string& where, int64_t arg, int64_t limit) const {
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat("SELECT ", kEventColumns,
                                             " FROM events ", where,
                                             " ORDER BY sequence LIMIT ?2")));
  query.Bind(1, arg).Bind(2, limit);
  std::vector<JobEvent> events;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return events;
    ASSIGN_OR_RETURN(JobEvent event, DecodeEvent(query, db_->path()));
    events.push_back(std::move(event));
  }
}

absl::StatusOr<JobRecord> SqliteStore::GetJob(JobId id) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, SelectJobs("WHERE id = ?1", id));
  if (jobs.empty()) {
    ASSIGN_OR_RETURN(std::optional<JobRecord> unwritten,
                     UnwrittenJobLocked(id));
    if (!unwritten) return NoSuchJob(id);
    return *std::move(unwritten);
  }
  ASSIGN_OR_RETURN(jobs[0].events, SelectEvents("WHERE job_id = ?1", id, -1));
  return std::move(jobs[0]);
}

absl::StatusOr<JobPage> SqliteStore::QueryJobs(const JobQuery& q) const {
  // The conditions, each with its own numbered parameter, so that one
  // prepared statement serves each combination of filters.
  std::string where = "WHERE id > ?1";
  if (!q.states.empty()) {
    std::string list;
    for (JobRecordState state : q.states) {
      // Names come from our own table of states: safe to inline.
      absl::StrAppend(&list, list.empty() ? "'" : ", '",
                      std::string(JobRecordStateName(state)), "'");
    }
    absl::StrAppend(&where, " AND state IN (", list, ")");
  }
  if (q.user) absl::StrAppend(&where, " AND user = ?2");
  if (q.name) absl::StrAppend(&where, " AND name = ?3");
  if (q.submitted_since) absl::StrAppend(&where, " AND submit_time >= ?4");
  // NULL (unfinished) compares as neither.
  if (q.ended_since) absl::StrAppend(&where, " AND end_time >= ?6");
  if (q.ended_before) absl::StrAppend(&where, " AND end_time < ?7");
  if (q.array_id) absl::StrAppend(&where, " AND array_id = ?8");
  if (q.vc) absl::StrAppend(&where, " AND vc = ?9");
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query, db_->Prepare(absl::StrCat(
                                          "SELECT ", kJobColumns, " FROM jobs ",
                                          where, " ORDER BY id LIMIT ?5")));
  query.Bind(1, int64_t{q.after_id});
  if (q.user) query.Bind(2, std::string_view(*q.user));
  if (q.name) query.Bind(3, std::string_view(*q.name));
  if (q.submitted_since) query.Bind(4, q.submitted_since->count());
  if (q.ended_since) query.Bind(6, q.ended_since->count());
  if (q.ended_before) query.Bind(7, q.ended_before->count());
  if (q.array_id) query.Bind(8, int64_t{*q.array_id});
  if (q.vc) query.Bind(9, std::string_view(*q.vc));
  // One row past the limit tells whether there is more.
  query.Bind(5, q.limit < 0 ? int64_t{-1} : q.limit + 1);
  auto full = [&q](const JobPage& page, int64_t bytes, int64_t size) {
    return (q.limit >= 0 &&
            static_cast<int64_t>(page.jobs.size()) >= q.limit) ||
           (q.max_bytes >= 0 && !page.jobs.empty() &&
            bytes + size > q.max_bytes);
  };
  JobPage rows;
  int64_t bytes = 0;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobRecord job, DecodeJob(query, db_->path()));
    const int64_t size = ApproxEncodedBytes(job);
    if (full(rows, bytes, size)) {
      rows.more = true;
      break;
    }
    bytes += size;
    rows.jobs.push_back(std::move(job));
  }
  // Arrays' unwritten jobs among the rows: up to the last row read if the
  // rows were cut (later ones come with the next page).
  if (rows.more && rows.jobs.empty()) return rows;  // a limit of 0
  const JobId upto =
      rows.more ? rows.jobs.back().id : std::numeric_limits<JobId>::max();
  ASSIGN_OR_RETURN(
      std::vector<JobRecord> unwritten,
      UnwrittenJobsLocked(q, q.after_id, upto,
                          q.limit < 0 ? int64_t{-1} : q.limit + 1));
  if (unwritten.empty()) return rows;
  std::vector<JobRecord> merged;
  merged.reserve(rows.jobs.size() + unwritten.size());
  std::merge(
      std::make_move_iterator(rows.jobs.begin()),
      std::make_move_iterator(rows.jobs.end()),
      std::make_move_iterator(unwritten.begin()),
      std::make_move_iterator(unwritten.end()), std::back_inserter(merged),
      [](const JobRecord& a, const JobRecord& b) { return a.id < b.id; });
  JobPage page;
  page.more = rows.more;
  bytes = 0;
  for (JobRecord& job : merged) {
    const int64_t size = ApproxEncodedBytes(job);
    if (full(page, bytes, size)) {
      page.more = true;
      break;
    }
    bytes += size;
    page.jobs.push_back(std::move(job));
  }
  return page;
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::ListUnfinishedJobs()
    const {
  MutexLock lock(&mu_);
  return SelectJobs("WHERE state IN ('pending', 'running', 'preempted')", 0);
}

absl::Status SqliteStore::CheckJobExists(JobId id) const {
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT 1 FROM jobs WHERE id = ?"));
  ASSIGN_OR_RETURN(bool row, query.Bind(1, id).Step());
  return row ? absl::OkStatus() : NoSuchJob(id);
}

absl::StatusOr<std::vector<JobEvent>> SqliteStore::Events(JobId job) const {
  MutexLock lock(&mu_);
  if (absl::Status exists = CheckJobExists(job); !exists.ok()) {
    ASSIGN_OR_RETURN(std::optional<JobRecord> unwritten,
                     UnwrittenJobLocked(job));
    if (!unwritten) return exists;
    return std::move(unwritten->events);
  }
  return SelectEvents("WHERE job_id = ?1", job, -1);
}

absl::StatusOr<std::vector<JobEvent>> SqliteStore::EventsAfter(
    int64_t after_sequence, int limit) const {
  MutexLock lock(&mu_);
  return SelectEvents("WHERE sequence > ?1", after_sequence, limit);
}

}  // namespace tiresias

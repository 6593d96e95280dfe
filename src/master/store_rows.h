// Internal to SqliteStore: the on-disk schema and the conversion of records
// to and from table rows. Reading checks what it reads: a row that a bug or
// a hand edit left malformed gets an error naming the file, the row and the
// column, never a crash.
#ifndef TIRESIAS_MASTER_STORE_ROWS_H_
#define TIRESIAS_MASTER_STORE_ROWS_H_

#include <iterator>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "master/job_record.h"
#include "master/sqlite_db.h"

namespace tiresias::store_internal {

// PRAGMA application_id of a Tiresias state file ("TIRE").
inline constexpr int32_t kApplicationId = 0x54495245;

// Schema version 1, as the first release wrote it; never changes. An empty
// file gets it and then every migration below, so that a new file and an
// upgraded one are alike. Lists (argv, nodes) and the environment are JSON
// text so that `sqlite3 state.db` shows them readably.
inline constexpr char kSchemaV1[] = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL, user TEXT NOT NULL, gpus INTEGER NOT NULL,
  command TEXT NOT NULL, env TEXT NOT NULL,
  checkpoint_dir TEXT NOT NULL, model TEXT NOT NULL,
  state TEXT NOT NULL, queue INTEGER NOT NULL,
  attained_gpu_seconds REAL NOT NULL, executed_seconds REAL NOT NULL,
  total_executed_seconds REAL NOT NULL,
  submit_time REAL NOT NULL, first_start_time REAL, end_time REAL,
  last_stop_time REAL NOT NULL,
  preemptions INTEGER NOT NULL, promotions INTEGER NOT NULL,
  restarts INTEGER NOT NULL, attempt INTEGER NOT NULL,
  nodes TEXT NOT NULL, exit_code INTEGER);
CREATE INDEX jobs_by_state ON jobs (state, id);
CREATE TABLE events (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs (id),
  time REAL NOT NULL, kind TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX events_by_job ON events (job_id, sequence);
CREATE TABLE nodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
  address TEXT NOT NULL, gpus INTEGER NOT NULL, state TEXT NOT NULL,
  last_heartbeat REAL NOT NULL);
)sql";

// kMigrations[i] takes a file from schema version i + 1 to i + 2. Each runs
// in the transaction that opens the file, with the version bump, so a crash
// leaves the file at the old version or the new one. Append only.
inline constexpr const char* kMigrations[] = {
    // 2: JobRecord::failed_starts, durable across master restarts.
    "ALTER TABLE jobs ADD COLUMN failed_starts INTEGER NOT NULL DEFAULT 0",
    // 3: which node ran each rank of each launch (where its log is).
    "CREATE TABLE launches ("
    "  job_id INTEGER NOT NULL REFERENCES jobs(id),"
    "  attempt INTEGER NOT NULL,"
    "  rank INTEGER NOT NULL,"
    "  node TEXT NOT NULL,"
    "  PRIMARY KEY (job_id, attempt, rank)) WITHOUT ROWID",
    // 4: the client's idempotency key of a submission (NULL when it gave
    // none; NULLs never collide in a unique index), listing filters by
    // user and by name in id order, and the hash of a node's agent token.
    "ALTER TABLE jobs ADD COLUMN request_id TEXT;"
    "CREATE UNIQUE INDEX jobs_by_request_id ON jobs (request_id);"
    "CREATE INDEX jobs_by_user ON jobs (user, id);"
    "CREATE INDEX jobs_by_name ON jobs (name, id);"
    "ALTER TABLE nodes ADD COLUMN agent_token_hash TEXT NOT NULL DEFAULT ''",
    // 5: bearer tokens (a salted hash of each secret, never the secret),
    // the audit log, and a cancel requested while a job's tasks still ran
    // (a restarted master finishes it).
    "ALTER TABLE jobs ADD COLUMN cancel_requested INTEGER NOT NULL "
    "DEFAULT 0;"
    "CREATE TABLE tokens ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  user TEXT NOT NULL, admin INTEGER NOT NULL,"
    "  salt TEXT NOT NULL, hash TEXT NOT NULL,"
    "  created REAL NOT NULL, expires REAL, revoked REAL,"
    "  description TEXT NOT NULL DEFAULT '');"
    "CREATE TABLE audit ("
    "  sequence INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  time REAL NOT NULL, principal TEXT NOT NULL, peer TEXT NOT NULL,"
    "  action TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL)",
    // 6: a job's traffic profile (JSON, NULL until measured), and the last
    // one measured per job signature (name, command, GPU count), which a
    // re-submitted job starts with.
    "ALTER TABLE jobs ADD COLUMN profile TEXT;"
    "CREATE TABLE profiles ("
    "  signature TEXT PRIMARY KEY,"
    "  job_id INTEGER NOT NULL REFERENCES jobs(id),"
    "  profile TEXT NOT NULL) WITHOUT ROWID",
    // 7: each launch's measured iteration time with its placement (spread
    // over servers or not), which PACKLIMIT is learnt from.
    "CREATE TABLE placement_runs ("
    "  job_id INTEGER NOT NULL REFERENCES jobs(id),"
    "  attempt INTEGER NOT NULL,"
    "  signature TEXT NOT NULL,"
    "  skew REAL NOT NULL, spread INTEGER NOT NULL,"
    "  iteration_s REAL NOT NULL, time REAL NOT NULL,"
    "  PRIMARY KEY (job_id, attempt)) WITHOUT ROWID",
    // 8: where a job's tasks start and the files their stdout and stderr
    // also go to (submit --chdir, --output, --error); '' for older jobs:
    // the agent's folder, no files.
    "ALTER TABLE jobs ADD COLUMN workdir TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN output TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN error TEXT NOT NULL DEFAULT ''",
    // 9: job control: a limit on executed time (0: none), never preempted,
    // submitted held, held now, and a stop at the time limit in progress
    // (with cancel_requested: a restarted master ends the job timeout).
    "ALTER TABLE jobs ADD COLUMN time_limit_seconds REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN no_preempt INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN submitted_held INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN held INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN timeout_requested INTEGER NOT NULL "
    "DEFAULT 0",
    // 10: a node drained by an admin (no new launches) and why; kept apart
    // from what an agent's registration writes.
    "ALTER TABLE nodes ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE nodes ADD COLUMN drain_reason TEXT NOT NULL DEFAULT ''",
    // 11: the jobs a job waits for (submit --dependency), a JSON array of
    // {"kind": "afterok", "job_id": 12}; '[]' for older jobs: none.
    "ALTER TABLE jobs ADD COLUMN dependencies TEXT NOT NULL DEFAULT '[]'",
    // 12: the cluster's history, sampled by the master
    // (cluster_history.h): busy GPUs and waiting jobs over time, for the
    // dashboard's chart; bounded by Store::AddClusterSample's pruning.
    "CREATE TABLE cluster_history ("
    "  time REAL PRIMARY KEY,"
    "  gpus_busy INTEGER NOT NULL, gpus_total INTEGER NOT NULL,"
    "  jobs_waiting INTEGER NOT NULL, jobs_running INTEGER NOT NULL)",
    // 13: job arrays (submit --array): the array's indices as written and
    // its running limit (the spec's), the array's id (its first job's) and
    // the job's index; '', 0, 0, 0 for older jobs: not in an array. Indexed
    // by array, for `jobs --array` and `cancel --array`.
    "ALTER TABLE jobs ADD COLUMN array_indices TEXT NOT NULL DEFAULT '';"
    "ALTER TABLE jobs ADD COLUMN array_max_running INTEGER NOT NULL "
    "DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN array_id INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN array_index INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_by_array ON jobs (array_id, id)",
    // 14: request ids are the submitting user's (issue 21): unique per
    // (user, request_id), no longer over all users, so that one user cannot
    // squat another's. Existing rows need no change: ids unique over all
    // users are unique per user.
    "DROP INDEX jobs_by_request_id;"
    "CREATE UNIQUE INDEX jobs_by_user_request_id ON jobs (user, request_id)",
    // 15: a job's spec is one column (issue 22): the v1::JobSpec it was
    // submitted with as protobuf bytes (EncodeSpec), less its name, user and
    // GPU count, which stay columns for listings to filter on. Its code step
    // (MigrateInCode) fills it from the 13 columns it replaces, then drops
    // them; a new per-job field needs no migration from here on.
    "ALTER TABLE jobs ADD COLUMN spec BLOB NOT NULL DEFAULT x''",
    // 16: what a job's ended tasks used, from their cgroups
    // (JobRecord::cpu_seconds, max_memory_bytes); 0 for older jobs.
    "ALTER TABLE jobs ADD COLUMN cpu_seconds REAL NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN max_memory_bytes INTEGER NOT NULL "
    "DEFAULT 0",
    // 17: virtual clusters (teams, issue 24): each VC's configuration as
    // the v1::VirtualCluster it was set with, as protobuf bytes.
    "CREATE TABLE vcs (name TEXT PRIMARY KEY, config BLOB NOT NULL)",
    // 18: each job's virtual cluster as a column too (it stays in the spec),
    // indexed for `jobs --vc`; its code step copies it from the spec of jobs
    // written at 17.
    "ALTER TABLE jobs ADD COLUMN vc TEXT NOT NULL DEFAULT '';"
    "CREATE INDEX jobs_by_vc ON jobs (vc, id)",
    // 19: priority levels (QOS, issue 24): each one's configuration as the
    // v1::Qos it was set with, as protobuf bytes.
    "CREATE TABLE qos (name TEXT PRIMARY KEY, config BLOB NOT NULL)",
    // 20: settings an admin changes at run time, by name, as protobuf bytes
    // (`tuning`: the v1::SetTuningRequest applied, with when and by whom).
    "CREATE TABLE settings (name TEXT PRIMARY KEY, config BLOB NOT NULL)",
    // 21: arrays stored as one record (issue 28): on an array's first job,
    // its job count and how many of its jobs are written as rows (the rest
    // exist only as the count until split off); 0 and 0 otherwise. Arrays
    // with jobs still unwritten are indexed, for reads to find them.
    "ALTER TABLE jobs ADD COLUMN array_count INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE jobs ADD COLUMN array_split INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX jobs_splitting_arrays ON jobs (id) "
    "WHERE array_split < array_count;"
    // and the array's spec as submitted (EncodeSpec) and GPU count, which
    // its unwritten jobs are made with: the first job's own may change
    // (`update`); x'' and 0 otherwise.
    "ALTER TABLE jobs ADD COLUMN array_spec BLOB NOT NULL DEFAULT x'';"
    "ALTER TABLE jobs ADD COLUMN array_gpus INTEGER NOT NULL DEFAULT 0",
    // 22: JobRecord::live_attempt, the launch released to the agents and
    // not stopped as of the last write: a restarted master adopts it also
    // while it was still starting (stored pending or preempted).
    "ALTER TABLE jobs ADD COLUMN live_attempt INTEGER NOT NULL DEFAULT 0",
};
// The schema version a file has after every migration.
inline constexpr int kLatestSchemaVersion =
    1 + static_cast<int>(std::size(kMigrations));

// Column lists, in the order the Decode functions read them.
inline constexpr char kJobColumns[] =
    "id, name, user, gpus, spec, state, queue, attained_gpu_seconds, "
    "executed_seconds, total_executed_seconds, submit_time, "
    "first_start_time, end_time, last_stop_time, preemptions, promotions, "
    "restarts, attempt, nodes, exit_code, failed_starts, request_id, "
    "cancel_requested, profile, held, timeout_requested, array_id, "
    "array_index, cpu_seconds, max_memory_bytes, array_count, array_split, "
    "live_attempt";
inline constexpr char kEventColumns[] =
    "sequence, job_id, time, kind, detail";
inline constexpr char kNodeColumns[] =
    "id, name, address, gpus, state, last_heartbeat, agent_token_hash, "
    "drained, drain_reason";

// The code step of the migration to `to_version`, run after its SQL
// (kMigrations[to_version - 2]) in the same transaction; nothing for most
// versions. Errors name the file, the row and the column, as DecodeJob's.
absl::Status MigrateInCode(SqliteDb& db, int to_version);

// JSON text of a string list. InvalidArgument naming `field` if a string is
// not valid UTF-8.
absl::StatusOr<std::string> EncodeStrings(const std::vector<std::string>& list,
                                          absl::string_view field);
// The spec column of a job: JobSpecToProto(spec) serialized, less the name,
// user and GPU count (columns of their own). DecodeJob reads it back whole.
std::string EncodeSpec(const JobRequest& spec);

// The spec an array's unwritten jobs are made with, from a row that
// selected kJobColumns then array_spec and array_gpus (columns 33 and 34):
// array_spec's, with the row's name and user. Errors as DecodeJob's.
absl::StatusOr<JobRequest> DecodeArraySpec(const SqliteQuery& row,
                                           absl::string_view path);

// InvalidArgument naming the field unless every number in `record` is
// finite and every count non-negative.
absl::Status CheckJobNumbers(const JobRecord& record);

// The current row of a query that selected kJobColumns (kEventColumns,
// kNodeColumns). Errors: DataLoss, "<path>: job 7: column 'state': ...".
absl::StatusOr<JobRecord> DecodeJob(const SqliteQuery& row,
                                    absl::string_view path);
absl::StatusOr<JobEvent> DecodeEvent(const SqliteQuery& row,
                                     absl::string_view path);
absl::StatusOr<NodeRecord> DecodeNode(const SqliteQuery& row,
                                      absl::string_view path);

}  // namespace tiresias::store_internal

#endif  // TIRESIAS_MASTER_STORE_ROWS_H_

// SqliteStore: what the traffic profiler measured. A job's profile and the
// last one per job signature (schema version 6), and each launch's measured
// speed with its placement (version 7), from which the master learns
// PACKLIMIT. Each write is one transaction, durable before it returns.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"

namespace tiresias {

absl::StatusOr<std::optional<JobProfile>>
SqliteStore::ProfileBySignatureLocked(const std::string& signature) const {
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT profile FROM profiles WHERE signature = ?"));
  query.Bind(1, signature);
  ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return std::nullopt;
  absl::StatusOr<JobProfile> profile = DecodeProfile(query.Text(0));
  if (!profile.ok()) {
    return absl::DataLossError(absl::StrCat(db_->path(), ": profiles: ",
                                            profile.status().message()));
  }
  return *profile;
}

absl::Status SqliteStore::SaveProfile(JobId job, const std::string& signature,
                                      const JobProfile& profile) {
  const std::string json = EncodeProfile(profile);
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  {
    ASSIGN_OR_RETURN(SqliteQuery update,
                     db_->Prepare("UPDATE jobs SET profile = ? WHERE id = ?"));
    RETURN_IF_ERROR(update.Bind(1, json).Bind(2, job).Run());
    if (db_->Changes() == 0) {
      return absl::NotFoundError(absl::StrCat("job ", job, ": no such job"));
    }
  }
  ASSIGN_OR_RETURN(SqliteQuery upsert,
                   db_->Prepare("INSERT OR REPLACE INTO profiles (signature, "
                                "job_id, profile) VALUES (?, ?, ?)"));
  RETURN_IF_ERROR(upsert.Bind(1, signature).Bind(2, job).Bind(3, json).Run());
  return CommitLocked(txn);
}

absl::Status SqliteStore::AddPlacementRun(const PlacementRunRecord& r) {
  const bool finite = std::isfinite(r.run.skew) &&
                      std::isfinite(r.run.iteration_s) &&
                      std::isfinite(r.time.count());
  if (!finite || r.run.signature.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "placement run of job ", r.job, " attempt ", r.attempt,
        ": expected a signature and finite skew, iteration time and time"));
  }
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      SqliteQuery insert,
      db_->Prepare("INSERT OR REPLACE INTO placement_runs (job_id, attempt, "
                   "signature, skew, spread, iteration_s, time) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?)"));
  RETURN_IF_ERROR(insert.Bind(1, r.job)
                      .Bind(2, int64_t{r.attempt})
                      .Bind(3, r.run.signature)
                      .Bind(4, r.run.skew)
                      .Bind(5, int64_t{r.run.spread})
                      .Bind(6, r.run.iteration_s)
                      .Bind(7, r.time.count())
                      .Run());
  return CommitLocked(txn);
}

absl::StatusOr<std::vector<PlacementRunRecord>>
SqliteStore::ListPlacementRuns() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT job_id, attempt, signature, skew, spread, "
                   "iteration_s, time FROM placement_runs "
                   "ORDER BY time, job_id, attempt"));
  std::vector<PlacementRunRecord> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    PlacementRunRecord& r = out.emplace_back();
    r.job = query.Int(0);
    r.attempt = static_cast<int>(query.Int(1));
    r.run.signature = query.Text(2);
    r.run.skew = query.Double(3);
    r.run.spread = query.Int(4) != 0;
    r.run.iteration_s = query.Double(5);
    r.time = Seconds{query.Double(6)};
  }
  return out;
}

}  // namespace tiresias

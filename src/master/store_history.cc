// SqliteStore: the cluster's history (cluster_history.h), one row per
// sample in the cluster_history table, keyed by time. Each write is one
// transaction, durable before it returns; it is not counted in commits()
// (which tests read to see submissions share transactions).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "master/cluster_history.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"

namespace tiresias {

std::vector<ClusterSample> ThinSamples(std::vector<ClusterSample> samples,
                                       int max_points) {
  if (max_points <= 0 || samples.size() <= static_cast<size_t>(max_points)) {
    return samples;
  }
  const size_t step = (samples.size() + max_points - 1) / max_points;
  std::vector<ClusterSample> out;
  out.reserve(max_points);
  // Counted back from the newest, so that the last one is always kept.
  const size_t last = samples.size() - 1;
  for (size_t i = last % step; i < samples.size(); i += step) {
    out.push_back(samples[i]);
  }
  return out;
}

absl::Status SqliteStore::AddClusterSample(const ClusterSample& s,
                                           const HistoryRetention& retention) {
  if (!std::isfinite(s.time.count()) || s.gpus_busy < 0 || s.gpus_total < 0 ||
      s.jobs_waiting < 0 || s.jobs_running < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster sample at ", s.time.count(),
        ": expected a finite time and non-negative counts"));
  }
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  {
    ASSIGN_OR_RETURN(
        SqliteQuery insert,
        db_->Prepare("INSERT OR REPLACE INTO cluster_history (time, "
                     "gpus_busy, gpus_total, jobs_waiting, jobs_running) "
                     "VALUES (?, ?, ?, ?, ?)"));
    RETURN_IF_ERROR(insert.Bind(1, s.time.count())
                        .Bind(2, s.gpus_busy)
                        .Bind(3, s.gpus_total)
                        .Bind(4, s.jobs_waiting)
                        .Bind(5, s.jobs_running)
                        .Run());
  }
  // Too old: gone.
  {
    ASSIGN_OR_RETURN(
        SqliteQuery drop,
        db_->Prepare("DELETE FROM cluster_history WHERE time < ?"));
    RETURN_IF_ERROR(drop.Bind(1, (s.time - retention.keep).count()).Run());
  }
  // Older than full resolution: the first of each coarse bucket stays.
  if (retention.coarse_bucket.count() > 0) {
    ASSIGN_OR_RETURN(
        SqliteQuery thin,
        db_->Prepare(
            "DELETE FROM cluster_history WHERE time < ?1 AND time NOT IN "
            "(SELECT min(time) FROM cluster_history WHERE time < ?1 "
            "GROUP BY CAST(time / ?2 AS INTEGER))"));
    RETURN_IF_ERROR(thin.Bind(1, (s.time - retention.full_resolution).count())
                        .Bind(2, retention.coarse_bucket.count())
                        .Run());
  }
  // Never more than max_rows: the oldest go.
  {
    ASSIGN_OR_RETURN(
        SqliteQuery cap,
        db_->Prepare("DELETE FROM cluster_history WHERE time NOT IN "
                     "(SELECT time FROM cluster_history ORDER BY time DESC "
                     "LIMIT ?)"));
    RETURN_IF_ERROR(
        cap.Bind(1, std::max<int64_t>(1, retention.max_rows)).Run());
  }
  return txn.Commit();
}

absl::StatusOr<std::vector<ClusterSample>> SqliteStore::ClusterHistory(
    Seconds since, Seconds until) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(
      SqliteQuery query,
      db_->Prepare("SELECT time, gpus_busy, gpus_total, jobs_waiting, "
                   "jobs_running FROM cluster_history WHERE time >= ? AND "
                   "time <= ? ORDER BY time"));
  query.Bind(1, since.count()).Bind(2, until.count());
  std::vector<ClusterSample> out;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) break;
    out.push_back(ClusterSample{.time = Seconds{query.Double(0)},
                                .gpus_busy = query.Int(1),
                                .gpus_total = query.Int(2),
                                .jobs_waiting = query.Int(3),
                                .jobs_running = query.Int(4)});
  }
  return out;
}

}  // namespace tiresias

// SqliteStore (sqlite_store.h): job arrays stored as one record. An array
// of N jobs is one row, its first job's, with array_count N and array_split
// 1; the ids after it are kept (sqlite_sequence) for the other N - 1, which
// are read from that row (UnwrittenJob) until SplitArray writes them, in
// position order, so that the unwritten jobs are always the positions
// array_split .. array_count - 1 and their ids the row's id plus those.
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/job_array.h"
#include "core/status_macros.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"
#include "master/store_rows.h"

namespace tiresias {
namespace {

using store_internal::DecodeJob;
using store_internal::kJobColumns;

using store_internal::DecodeArraySpec;

// The columns of an array's first job read here: the job's, then the
// array's spec and GPU count (DecodeArraySpec).
constexpr char kHeadExtra[] = ", array_spec, array_gpus";

// An array's first job as its unwritten jobs are made from: its row with
// the array's spec as submitted in place of the job's own (which `update`
// may have changed).
absl::StatusOr<JobRecord> DecodeHead(const SqliteQuery& row,
                                     absl::string_view path) {
  ASSIGN_OR_RETURN(JobRecord head, DecodeJob(row, path));
  ASSIGN_OR_RETURN(head.spec, DecodeArraySpec(row, path));
  return head;
}

// Job `position` of the array whose first job is `head` (DecodeHead), as
// CreateJobs would have written it: pending, never run, held if the array
// was submitted held, "<base>#<position>" for the head's "<base>#0".
JobRecord UnwrittenJob(const JobRecord& head, int position, int index) {
  JobRecord rec;
  rec.id = head.id + position;
  rec.spec = head.spec;
  rec.state = JobRecordState::kPending;
  rec.submit_time = head.submit_time;
  rec.last_stop_time = head.submit_time;
  if (absl::EndsWith(head.request_id, "#0")) {
    rec.request_id = absl::StrCat(
        head.request_id.substr(0, head.request_id.size() - 2), "#", position);
  }
  rec.held = head.spec.hold;
  rec.array_id = head.id;
  rec.array_index = index;
  return rec;
}

// The "submitted" event every job is written with.
JobEvent SubmittedEvent(const JobRecord& rec) {
  return JobEvent{rec.id, 0, rec.submit_time, "submitted",
                  absl::StrCat(rec.spec.num_gpus,
                               rec.spec.num_gpus == 1 ? " GPU" : " GPUs")};
}

// The array's indices, from the stored spec (validated when submitted).
absl::StatusOr<std::vector<int>> IndicesOf(const JobRecord& head,
                                           absl::string_view path) {
  absl::StatusOr<std::vector<int>> indices =
      ExpandArrayIndices(head.spec.array.indices);
  if (!indices.ok() || static_cast<int>(indices->size()) != head.array_count) {
    return absl::DataLossError(absl::StrCat(
        path, ": job ", head.id, ": array of ", head.array_count,
        " jobs with indices \"", head.spec.array.indices, "\"",
        indices.ok() ? "" : ": ",
        indices.ok() ? "" : std::string(indices.status().message())));
  }
  return indices;
}

// Whether the query selects the unwritten jobs of the array of `head`
// (every one of them alike: pending, never ended).
bool Selects(const JobQuery& q, const JobRecord& head) {
  if (!q.states.empty() &&
      std::find(q.states.begin(), q.states.end(), JobRecordState::kPending) ==
          q.states.end()) {
    return false;
  }
  return (!q.user || head.spec.user == *q.user) &&
         (!q.name || head.spec.name == *q.name) &&
         (!q.submitted_since || head.submit_time >= *q.submitted_since) &&
         !q.ended_since && !q.ended_before &&
         (!q.array_id || head.id == *q.array_id) &&
         (!q.vc || head.spec.vc == *q.vc);
}

}  // namespace

absl::StatusOr<std::vector<JobRecord>> SqliteStore::UnwrittenJobsLocked(
    const JobQuery& query, JobId after, JobId upto, int64_t limit) const {
  // Arrays with unwritten ids in (after, upto]: the partial index holds
  // only arrays with jobs unwritten.
  ASSIGN_OR_RETURN(
      SqliteQuery heads,
      db_->Prepare(absl::StrCat(
          "SELECT ", kJobColumns, kHeadExtra,
          " FROM jobs WHERE array_split < array_count AND id <= ?2 AND "
          "id + array_count - 1 > ?1 ORDER BY id")));
  heads.Bind(1, int64_t{after}).Bind(2, int64_t{upto});
  std::vector<JobRecord> out;
  while (limit < 0 || static_cast<int64_t>(out.size()) < limit) {
    ASSIGN_OR_RETURN(bool row, heads.Step());
    if (!row) break;
    ASSIGN_OR_RETURN(JobRecord head, DecodeHead(heads, db_->path()));
    if (!Selects(query, head)) continue;
    ASSIGN_OR_RETURN(std::vector<int> indices, IndicesOf(head, db_->path()));
    const int64_t first =
        std::max<int64_t>(head.array_split, after - head.id + 1);
    const int64_t end = std::min<int64_t>(head.array_count, upto - head.id + 1);
    for (int64_t p = first;
         p < end && (limit < 0 || static_cast<int64_t>(out.size()) < limit);
         ++p) {
      out.push_back(UnwrittenJob(head, static_cast<int>(p), indices[p]));
    }
  }
  return out;
}

absl::StatusOr<std::optional<JobRecord>> SqliteStore::UnwrittenJobLocked(
    JobId id) const {
  ASSIGN_OR_RETURN(std::vector<JobRecord> one,
                   UnwrittenJobsLocked(JobQuery{}, id - 1, id, 1));
  if (one.empty()) return std::optional<JobRecord>();
  one[0].events.push_back(SubmittedEvent(one[0]));
  return std::optional<JobRecord>(std::move(one[0]));
}

absl::StatusOr<int64_t> SqliteStore::UnwrittenCountLocked() const {
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT total(array_count - array_split) "
                                "FROM jobs WHERE array_split < array_count"));
  ASSIGN_OR_RETURN(bool row, query.Step());
  return row ? static_cast<int64_t>(query.Double(0)) : int64_t{0};
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::SplitArray(JobId array_id,
                                                               int from,
                                                               int split_to) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery read,
                   db_->Prepare(absl::StrCat("SELECT ", kJobColumns, kHeadExtra,
                                             " FROM jobs WHERE id = ?1 AND "
                                             "array_count > 0")));
  ASSIGN_OR_RETURN(bool found, read.Bind(1, int64_t{array_id}).Step());
  if (!found) {
    return absl::NotFoundError(
        absl::StrCat("job ", array_id, ": no array stored as one record"));
  }
  ASSIGN_OR_RETURN(const JobRecord head, DecodeHead(read, db_->path()));
  if (split_to > head.array_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("array ", array_id, ": split to ", split_to, " of its ",
                     head.array_count, " jobs"));
  }
  // Written already (by a split whose answer was lost): as stored.
  std::vector<JobRecord> out;
  if (from < std::min(head.array_split, split_to)) {
    ASSIGN_OR_RETURN(
        SqliteQuery written,
        db_->Prepare(absl::StrCat("SELECT ", kJobColumns,
                                  " FROM jobs WHERE id >= ?1 AND id < ?2 "
                                  "ORDER BY id")));
    written.Bind(1, int64_t{array_id + std::max(from, 0)})
        .Bind(2, int64_t{array_id + std::min(head.array_split, split_to)});
    while (true) {
      ASSIGN_OR_RETURN(bool row, written.Step());
      if (!row) break;
      ASSIGN_OR_RETURN(JobRecord job, DecodeJob(written, db_->path()));
      out.push_back(std::move(job));
    }
  }
  if (split_to <= head.array_split) return out;
  ASSIGN_OR_RETURN(std::vector<int> indices, IndicesOf(head, db_->path()));
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  // Each job starts with the profile a job submitted now would.
  ASSIGN_OR_RETURN(std::optional<JobProfile> profile,
                   ProfileBySignatureLocked(JobSignature(head.spec)));
  const std::string encoded = store_internal::EncodeSpec(head.spec);
  out.reserve(out.size() + split_to - head.array_split);
  for (int p = head.array_split; p < split_to; ++p) {
    JobRecord rec = UnwrittenJob(head, p, indices[p]);
    rec.profile = profile;
    NewJob job{rec.spec, rec.request_id, rec.array_index};
    ASSIGN_OR_RETURN(JobId id, InsertJobLocked(job, encoded, head.submit_time,
                                               profile, array_id, rec.id));
    if (id != rec.id) {
      return absl::InternalError(absl::StrCat("array ", array_id, ": job ",
                                              rec.id, " written as ", id));
    }
    out.push_back(std::move(rec));
  }
  ASSIGN_OR_RETURN(SqliteQuery update,
                   db_->Prepare("UPDATE jobs SET array_split = ?2 WHERE "
                                "id = ?1"));
  RETURN_IF_ERROR(
      update.Bind(1, int64_t{array_id}).Bind(2, int64_t{split_to}).Run());
  RETURN_IF_ERROR(CommitLocked(txn));
  return out;
}

namespace {

// "<base>#<k>" with k a number written without leading zeros: k; else -1.
int64_t PositionIn(std::string_view request_id, std::string_view base) {
  if (request_id.size() <= base.size() + 1 ||
      request_id.substr(0, base.size()) != base ||
      request_id[base.size()] != '#') {
    return -1;
  }
  std::string_view digits = request_id.substr(base.size() + 1);
  if (digits.size() > 9 || (digits.size() > 1 && digits[0] == '0')) return -1;
  int64_t k = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    k = k * 10 + (c - '0');
  }
  return k;
}

}  // namespace

absl::StatusOr<std::optional<JobRecord>>
SqliteStore::UnwrittenByRequestIdLocked(const std::string& user,
                                        const std::string& request_id) const {
  // "<base>#<k>": job k of the array whose first job is "<base>#0".
  const size_t hash = request_id.rfind('#');
  if (hash == std::string::npos) return std::optional<JobRecord>();
  const std::string base = request_id.substr(0, hash);
  const int64_t k = PositionIn(request_id, base);
  if (k < 1) return std::optional<JobRecord>();
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat(
                       "SELECT ", kJobColumns, kHeadExtra,
                       " FROM jobs WHERE user = ?1 AND request_id = ?2 AND "
                       "array_split <= ?3 AND array_count > ?3")));
  query.Bind(1, user).Bind(2, absl::StrCat(base, "#0")).Bind(3, k);
  ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return std::optional<JobRecord>();
  ASSIGN_OR_RETURN(JobRecord head, DecodeHead(query, db_->path()));
  ASSIGN_OR_RETURN(std::vector<int> indices, IndicesOf(head, db_->path()));
  return std::optional<JobRecord>(
      UnwrittenJob(head, static_cast<int>(k), indices[k]));
}

absl::StatusOr<std::optional<JobRecord>> SqliteStore::ArrayRequestIdTakenLocked(
    const std::string& user, const std::string& first_request_id,
    int count) const {
  if (!absl::EndsWith(first_request_id, "#0")) {
    return std::optional<JobRecord>();
  }
  const std::string base =
      first_request_id.substr(0, first_request_id.size() - 2);
  // Every request id "<base>#..." of the user, by the (user, request_id)
  // index: '$' follows '#'.
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat(
                       "SELECT ", kJobColumns,
                       " FROM jobs WHERE user = ?1 AND request_id > ?2 AND "
                       "request_id < ?3 ORDER BY request_id")));
  query.Bind(1, user)
      .Bind(2, absl::StrCat(base, "#"))
      .Bind(3, absl::StrCat(base, "$"));
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return std::optional<JobRecord>();
    ASSIGN_OR_RETURN(JobRecord job, DecodeJob(query, db_->path()));
    const int64_t k = PositionIn(job.request_id, base);
    if (k >= 1 && k < count) return std::optional<JobRecord>(std::move(job));
  }
}

absl::StatusOr<std::vector<JobRecord>> SqliteStore::ListSplittingArrays()
    const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat(
                       "SELECT ", kJobColumns, kHeadExtra,
                       " FROM jobs WHERE array_split < array_count ORDER BY "
                       "id")));
  std::vector<JobRecord> heads;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return heads;
    ASSIGN_OR_RETURN(JobRecord head, DecodeHead(query, db_->path()));
    heads.push_back(std::move(head));
  }
}

}  // namespace tiresias

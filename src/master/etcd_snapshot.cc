#include "master/etcd_snapshot.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "master/etcd_chunks.h"
#include "master/sqlite_db.h"

namespace tiresias {
namespace {

std::string RecordKey(const std::string& prefix) { return prefix + "snapshot"; }
std::string ChunkDir(const std::string& prefix, int64_t index, uint64_t epoch) {
  return absl::StrFormat("%ssnapshot/%020d.%020d/", prefix, index, epoch);
}

absl::Status Errno(const std::string& path, const char* what) {
  return absl::InternalError(
      absl::StrCat(path, ": ", what, ": ", std::strerror(errno)));
}

absl::Status RemoveDatabase(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
    const std::string file = path + suffix;
    if (unlink(file.c_str()) != 0 && errno != ENOENT) {
      return Errno(file, "cannot remove");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Errno(path, "cannot read");
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Writes `bytes` to a new file at `path` and fsyncs it.
absl::Status WriteSynced(const std::string& path, const std::string& bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Errno(path, "cannot create");
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::Status s = Errno(path, "cannot write");
      close(fd);
      return s;
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0) {
    absl::Status s = Errno(path, "cannot fsync");
    close(fd);
    return s;
  }
  close(fd);
  return absl::OkStatus();
}

// Makes the renames and removals in `path`'s folder durable.
void SyncFolder(const std::string& path) {
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int fd = open(folder.empty() ? "." : folder.c_str(), O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

// The first column of the first row of `sql` on `db`, as text; "" if none.
absl::StatusOr<std::string> QueryText(SqliteDb& db, const std::string& sql) {
  ASSIGN_OR_RETURN(SqliteQuery query, db.Prepare(sql));
  ASSIGN_OR_RETURN(bool row, query.Step());
  return row ? std::string(query.Text(0)) : std::string();
}

// The snapshot's file, checked before it replaces anything: SQLite finds
// it whole, and it is this cluster's and schema's, at `index`.
absl::Status CheckSnapshotFile(const std::string& path, int64_t index,
                               const std::string& cluster_id) {
  ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db, SqliteDb::Open(path));
  const auto bad = [&](const std::string& what) {
    return absl::DataLossError(
        absl::StrCat("the store's snapshot at log entry ", index, ": ", what));
  };
  absl::StatusOr<std::string> check = QueryText(*db, "PRAGMA quick_check");
  if (!check.ok() || *check != "ok") {
    return bad(absl::StrCat("not a whole SQLite database (",
                            check.ok() ? *check : check.status().message(),
                            ")"));
  }
  ASSIGN_OR_RETURN(std::string schema,
                   QueryText(*db,
                             "SELECT value FROM meta WHERE key = "
                             "'schema_version'"));
  if (schema != absl::StrCat(SqliteStore::kSchemaVersion)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the store's snapshot at log entry ", index, " is of store schema ",
        schema, ", this build's is ", SqliteStore::kSchemaVersion,
        ": run the same build on every master"));
  }
  ASSIGN_OR_RETURN(std::string id,
                   QueryText(*db,
                             "SELECT value FROM meta WHERE key = "
                             "'cluster_id'"));
  if (id != cluster_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("the store's snapshot at log entry ", index,
                     " is of cluster ", id, ", not ", cluster_id));
  }
  ASSIGN_OR_RETURN(std::string at,
                   QueryText(*db,
                             "SELECT value FROM meta WHERE key = "
                             "'log_index'"));
  if (at != absl::StrCat(index)) {
    return bad(absl::StrCat("its file holds log entry ", at));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<storelog::Snapshot>> ReadSnapshotRecord(
    EtcdClient& client, const std::string& prefix, int64_t* revision) {
  const std::string key = RecordKey(prefix);
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got, client.Range(key));
  if (got.kvs().empty()) return std::nullopt;
  storelog::Snapshot record;
  if (!record.ParseFromString(got.kvs(0).value()) || record.index() < 1 ||
      record.chunks() < 1) {
    return absl::DataLossError(
        absl::StrCat(key, ": not a snapshot record of this build's"));
  }
  if (revision != nullptr) *revision = got.kvs(0).mod_revision();
  return record;
}

absl::StatusOr<SnapshotImage> TakeSnapshotImage(const SqliteStore& store,
                                                const std::string& tmp_path) {
  absl::StatusOr<int64_t> index = store.CopyTo(tmp_path);
  absl::StatusOr<std::string> file =
      index.ok() ? ReadWhole(tmp_path) : index.status();
  // The copy holds every job's environment: not left behind.
  RETURN_IF_ERROR(RemoveDatabase(tmp_path));
  if (!file.ok()) return file.status();
  if (*index < 1) {
    return absl::FailedPreconditionError("a snapshot: nothing in the log yet");
  }
  SnapshotImage image;
  image.index = *index;
  image.file_bytes = static_cast<int64_t>(file->size());
  uLongf size = compressBound(file->size());
  image.compressed.resize(size);
  if (compress2(reinterpret_cast<Bytef*>(image.compressed.data()), &size,
                reinterpret_cast<const Bytef*>(file->data()), file->size(),
                Z_BEST_SPEED) != Z_OK) {
    return absl::InternalError("a snapshot: cannot compress it");
  }
  image.compressed.resize(size);
  return image;
}

etcdserverpb::TxnRequest SnapshotRecordTxn(
    const std::string& prefix, const std::string& leader_key, uint64_t epoch,
    const SnapshotImage& image, size_t chunk_bytes, int64_t record_revision) {
  if (chunk_bytes == 0) chunk_bytes = kSnapshotChunkBytes;
  const int64_t index = image.index;
  const std::string& packed = image.compressed;
  const std::string dir = ChunkDir(prefix, index, epoch);
  storelog::Snapshot record;
  record.set_index(index);
  record.set_schema_version(SqliteStore::kSchemaVersion);
  record.set_chunks(ChunkCount(packed.size(), chunk_bytes));
  record.set_compressed_bytes(static_cast<int64_t>(packed.size()));
  record.set_crc32(Crc32(packed));
  record.set_file_bytes(image.file_bytes);
  record.set_epoch(epoch);
  record.set_time(static_cast<double>(absl::ToUnixMicros(absl::Now())) / 1e6);
  etcdserverpb::TxnRequest txn;
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(RecordKey(prefix));
  put->set_value(record.SerializeAsString());
  const auto remove = [&](const std::string& from, const std::string& to) {
    etcdserverpb::DeleteRangeRequest* d =
        txn.add_success()->mutable_request_delete_range();
    d->set_key(from);
    d->set_range_end(to);
  };
  remove(prefix + "log/", LogEntryKey(prefix, index + 1));  // the log to here
  remove(prefix + "part/", LogPartsDir(prefix, index + 1, 0, 0));  // parts
  const std::string all = prefix + "snapshot/";
  remove(all, dir);                        // older snapshots' chunks
  remove(PrefixEnd(dir), PrefixEnd(all));  // a deposed leader's later ones
  CompareCreatedAt(&txn, leader_key, static_cast<int64_t>(epoch));
  // The record as it was read before: a try that etcd applies after a
  // newer snapshot's (a member that answered too late, the call having
  // moved on) would put the older record back and delete the newer
  // snapshot's chunks, leaving a record whose chunks are gone.
  etcdserverpb::Compare* same = txn.add_compare();
  same->set_key(RecordKey(prefix));
  same->set_target(etcdserverpb::Compare::MOD);
  same->set_result(etcdserverpb::Compare::EQUAL);
  same->set_mod_revision(record_revision);
  return txn;
}

absl::Status PublishSnapshot(EtcdClient& client, const std::string& prefix,
                             const EtcdLead& lead, const SnapshotImage& image,
                             size_t chunk_bytes,
                             const std::function<bool()>& stop) {
  const uint64_t epoch = lead.epoch();
  if (epoch == 0) {
    return absl::FailedPreconditionError("a snapshot: not leading");
  }
  if (chunk_bytes == 0) chunk_bytes = kSnapshotChunkBytes;
  const int64_t index = image.index;
  const std::string what =
      absl::StrCat("the store's snapshot at log entry ", index);
  // Read before the chunks go up: a late try of an earlier publish that
  // lands while they do deletes them, and must then refuse this one. Only
  // the key's revision, not ReadSnapshotRecord: a record that does not
  // parse must not keep a good snapshot from replacing it.
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse before,
                   client.Range(RecordKey(prefix)));
  const int64_t record_revision =
      before.kvs().empty() ? 0 : before.kvs(0).mod_revision();
  RETURN_IF_ERROR(PutChunks(client, lead.leader_key(), epoch,
                            ChunkDir(prefix, index, epoch), image.compressed,
                            chunk_bytes, stop, what));
  if (stop && stop()) {
    return absl::CancelledError(absl::StrCat(what, ": the master is stopping"));
  }
  ASSIGN_OR_RETURN(
      etcdserverpb::TxnResponse done,
      client.Txn(SnapshotRecordTxn(prefix, lead.leader_key(), epoch, image,
                                   chunk_bytes, record_revision)));
  if (done.succeeded()) return absl::OkStatus();
  // A try of this call that timed out may have landed before the one that
  // answered: then the record is this one.
  ASSIGN_OR_RETURN(std::optional<storelog::Snapshot> now,
                   ReadSnapshotRecord(client, prefix));
  if (now && now->index() == index && now->epoch() == epoch &&
      now->crc32() == Crc32(image.compressed)) {
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse key,
                   client.Range(lead.leader_key()));
  if (key.kvs().empty() ||
      key.kvs(0).create_revision() != static_cast<int64_t>(epoch)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": this master no longer leads (", lead.leader_key(), ")"));
  }
  return absl::AbortedError(absl::StrCat(
      what, ": another snapshot was written while this one was (at log entry ",
      now ? now->index() : 0, "); the next one goes on from it"));
}

absl::StatusOr<int64_t> InstallSnapshot(EtcdClient& client,
                                        const std::string& prefix,
                                        const std::string& path,
                                        const std::string& cluster_id) {
  // Its chunks are read at the record's revision: a newer snapshot written
  // meanwhile does not mix in. Only once etcd compacted that revision away
  // (OutOfRange) is the newer record read instead.
  constexpr int kReads = 3;
  storelog::Snapshot record;
  std::string packed;
  for (int read = 1;; ++read) {
    int64_t revision = 0;
    ASSIGN_OR_RETURN(std::optional<storelog::Snapshot> latest,
                     ReadSnapshotRecord(client, prefix, &revision));
    if (!latest) {
      return absl::NotFoundError("the store has no snapshot");
    }
    record = *latest;
    if (record.schema_version() != SqliteStore::kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the store's snapshot at log entry ", record.index(),
          " is of store schema ", record.schema_version(), ", this build's is ",
          SqliteStore::kSchemaVersion, ": run the same build on every master"));
    }
    const std::string dir = ChunkDir(prefix, record.index(), record.epoch());
    absl::StatusOr<std::string> got = GetChunks(
        client, dir, record.chunks(), revision,
        absl::StrCat("the store's snapshot at log entry ", record.index()));
    if (got.ok()) {
      packed = *std::move(got);
      break;
    }
    if (!absl::IsOutOfRange(got.status()) || read == kReads) {
      return got.status();
    }
  }
  const int64_t index = record.index();
  const auto bad = [&](const std::string& what) {
    return absl::DataLossError(
        absl::StrCat("the store's snapshot at log entry ", index, ": ", what));
  };
  if (static_cast<int64_t>(packed.size()) != record.compressed_bytes() ||
      Crc32(packed) != record.crc32()) {
    return bad(absl::StrCat(packed.size(),
                            " bytes whose CRC does not match "
                            "its record's (",
                            record.compressed_bytes(), " bytes)"));
  }
  if (record.file_bytes() < 0 || record.file_bytes() > (int64_t{1} << 40)) {
    return bad("its size");
  }
  std::string file(static_cast<size_t>(record.file_bytes()), '\0');
  uLongf size = file.size();
  if (uncompress(reinterpret_cast<Bytef*>(file.data()), &size,
                 reinterpret_cast<const Bytef*>(packed.data()),
                 packed.size()) != Z_OK ||
      size != file.size()) {
    return bad("cannot inflate it");
  }
  const std::string tmp = path + ".snapshot";
  RETURN_IF_ERROR(RemoveDatabase(tmp));
  RETURN_IF_ERROR(WriteSynced(tmp, file));
  if (absl::Status checked = CheckSnapshotFile(tmp, index, cluster_id);
      !checked.ok()) {
    RemoveDatabase(tmp).IgnoreError();
    return checked;
  }
  // The old file's WAL goes aside first: left beside the new file, SQLite
  // would apply it there. A crash before the rename leaves the old file
  // without its last commits: it is behind, and is replaced again.
  const std::string wal = path + "-wal", aside = path + "-wal.replaced";
  const bool had_wal = rename(wal.c_str(), aside.c_str()) == 0;
  if (!had_wal && errno != ENOENT) return Errno(wal, "cannot move aside");
  unlink((path + "-shm").c_str());
  for (const char* suffix : {"-wal", "-shm"}) {  // the check's, if any
    unlink((tmp + suffix).c_str());
  }
  SyncFolder(path);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    absl::Status s = Errno(path, "cannot replace it by the snapshot");
    if (had_wal) rename(aside.c_str(), wal.c_str());
    return s;
  }
  SyncFolder(path);
  unlink(aside.c_str());
  return index;
}

}  // namespace tiresias

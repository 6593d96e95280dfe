#include "master/etcd_store.h"

#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <random>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/status_macros.h"
#include "master/etcd_chunks.h"
#include "master/etcd_snapshot.h"
#include "proto/store_log.pb.h"

namespace tiresias {
namespace {

// What an entry written in parts holds first (then a Parts record): no
// entry's plain size begins so.
constexpr std::string_view kPartsMark("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
// Entries read per etcd range while catching up.
constexpr int64_t kCatchUpBatch = 256;
// Tries of one append (each up to the client's timeout) before the leader
// gives up the lead, not knowing whether it landed.
constexpr int kAppendAttempts = 3;
// The most an entry's parts may take to write (under the master's lock)
// before its transaction fails.
constexpr absl::Duration kPartsDeadline = absl::Seconds(10);

size_t PartBytes(size_t asked) {
  constexpr size_t kMost = size_t{1} << 20;
  return asked == 0 ? kMost : std::min(asked, kMost);
}

}  // namespace

absl::StatusOr<std::string> EtcdClusterId(EtcdClient& client,
                                          const std::string& prefix) {
  const std::string key = prefix + "cluster_id";
  std::random_device random;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(
        &id, absl::Hex(static_cast<uint32_t>(random()), absl::kZeroPad8));
  }
  etcdserverpb::TxnRequest txn;
  PutIfCreatedAt(&txn, key, 0, id);
  txn.add_failure()->mutable_request_range()->set_key(key);
  ASSIGN_OR_RETURN(etcdserverpb::TxnResponse done, client.Txn(txn));
  if (done.succeeded()) return id;
  if (done.responses_size() != 1 ||
      done.responses(0).response_range().kvs_size() != 1 ||
      done.responses(0).response_range().kvs(0).value().empty()) {
    return absl::DataLossError(absl::StrCat(key, ": no cluster id in it"));
  }
  return done.responses(0).response_range().kvs(0).value();
}

std::string EncodeLogEntry(uint64_t epoch, int schema_version,
                           const std::vector<SqliteWrite>& writes) {
  storelog::Entry entry;
  entry.set_epoch(epoch);
  entry.set_schema_version(schema_version);
  absl::flat_hash_map<std::string_view, uint32_t> sql_index;
  for (const SqliteWrite& w : writes) {
    storelog::Statement* s = entry.add_statements();
    auto [it, added] =
        sql_index.try_emplace(w.sql, static_cast<uint32_t>(entry.sql_size()));
    if (added) entry.add_sql(w.sql);
    s->set_sql(it->second);
    s->set_changes(w.changes);
    for (const SqliteValue& v : w.binds) {
      storelog::Value* out = s->add_binds();
      switch (v.kind) {
        case SqliteValue::Kind::kNull:
          out->set_null(true);
          break;
        case SqliteValue::Kind::kInteger:
          out->set_integer(v.integer);
          break;
        case SqliteValue::Kind::kReal:
          out->set_real(v.real);
          break;
        case SqliteValue::Kind::kText:
          out->set_text(v.bytes);
          break;
        case SqliteValue::Kind::kBlob:
          out->set_blob(v.bytes);
          break;
      }
    }
  }
  const std::string plain = entry.SerializeAsString();
  uLongf size = compressBound(plain.size());
  std::string packed(size, '\0');
  compress2(reinterpret_cast<Bytef*>(packed.data()), &size,
            reinterpret_cast<const Bytef*>(plain.data()), plain.size(),
            Z_BEST_SPEED);
  packed.resize(size);
  // Its plain size first (8 bytes, little-endian), for the inflate.
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>(
        (static_cast<uint64_t>(plain.size()) >> (8 * i)) & 0xff);
  }
  return out + packed;
}

absl::StatusOr<std::vector<SqliteWrite>> DecodeLogEntry(
    int64_t index, int schema_version, const std::string& bytes) {
  const auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(
        "log entry ", index, ": not a store log entry (", what, ")"));
  };
  if (bytes.size() < 8) return corrupt("too short");
  uint64_t plain_size = 0;
  for (int i = 0; i < 8; ++i) {
    plain_size |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i]))
                  << (8 * i);
  }
  if (plain_size > (uint64_t{1} << 31)) return corrupt("its size");
  std::string plain(plain_size, '\0');
  uLongf size = plain_size;
  if (uncompress(reinterpret_cast<Bytef*>(plain.data()), &size,
                 reinterpret_cast<const Bytef*>(bytes.data() + 8),
                 bytes.size() - 8) != Z_OK ||
      size != plain_size) {
    return corrupt("cannot inflate it");
  }
  storelog::Entry entry;
  if (!entry.ParseFromString(plain)) return corrupt("cannot parse it");
  if (entry.schema_version() != schema_version) {
    return absl::FailedPreconditionError(absl::StrCat(
        "log entry ", index, ": written by a build of store schema ",
        entry.schema_version(), ", this one's is ", schema_version,
        ": run the same build on every master"));
  }
  std::vector<SqliteWrite> writes;
  writes.reserve(entry.statements_size());
  for (const storelog::Statement& s : entry.statements()) {
    if (s.sql() >= static_cast<uint32_t>(entry.sql_size())) {
      return corrupt("a statement's SQL");
    }
    SqliteWrite w;
    w.sql = entry.sql(static_cast<int>(s.sql()));
    w.changes = s.changes();
    for (const storelog::Value& v : s.binds()) {
      SqliteValue value;
      switch (v.kind_case()) {
        case storelog::Value::kInteger:
          value.kind = SqliteValue::Kind::kInteger;
          value.integer = v.integer();
          break;
        case storelog::Value::kReal:
          value.kind = SqliteValue::Kind::kReal;
          value.real = v.real();
          break;
        case storelog::Value::kText:
          value.kind = SqliteValue::Kind::kText;
          value.bytes = v.text();
          break;
        case storelog::Value::kBlob:
          value.kind = SqliteValue::Kind::kBlob;
          value.bytes = v.blob();
          break;
        default:
          break;  // NULL
      }
      w.binds.push_back(std::move(value));
    }
    writes.push_back(std::move(w));
  }
  return writes;
}

std::string EtcdLog::EntryKey(int64_t index) const {
  return LogEntryKey(prefix_, index);
}

absl::StatusOr<std::string> EtcdLog::WriteParts(int64_t index, uint64_t epoch,
                                                const std::string& value) {
  // Before the entry: parts without an entry (a leader that died between)
  // are never read, and go with the log at the next snapshot.
  // Each try in its own folder: a put of a failed try that lands late
  // (etcd commits a proposal the client gave up on) touches no other's.
  const std::string what =
      absl::StrCat("the store's log entry ", index, "'s parts");
  const size_t part_bytes = PartBytes(options_.part_bytes);
  const absl::Time deadline = absl::Now() + kPartsDeadline;
  absl::Status put;
  uint64_t attempt = 0;
  for (int i = 0; i < kAppendAttempts; ++i) {
    attempt = ++parts_tries_;
    put = PutChunks(
        *client_, lead_->leader_key(), epoch,
        LogPartsDir(prefix_, index, epoch, attempt), value, part_bytes,
        [&] { return absl::Now() > deadline; }, what);
    if (put.ok() || absl::IsFailedPrecondition(put) || absl::IsCancelled(put)) {
      break;
    }
  }
  if (absl::IsCancelled(put)) {
    return absl::UnavailableError(absl::StrCat(
        what, ": not written within ", absl::FormatDuration(kPartsDeadline)));
  }
  RETURN_IF_ERROR(put);
  storelog::Parts parts;
  parts.set_epoch(epoch);
  parts.set_attempt(attempt);
  parts.set_parts(ChunkCount(value.size(), part_bytes));
  parts.set_bytes(static_cast<int64_t>(value.size()));
  parts.set_crc32(Crc32(value));
  return std::string(kPartsMark) + parts.SerializeAsString();
}

absl::StatusOr<std::string> EtcdLog::ReadParts(int64_t index,
                                               const std::string& value,
                                               int64_t revision) const {
  const auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(
        absl::StrCat("log entry ", index, ": its parts' record ", what));
  };
  storelog::Parts parts;
  if (!parts.ParseFromArray(
          value.data() + kPartsMark.size(),
          static_cast<int>(value.size() - kPartsMark.size()))) {
    return corrupt("cannot be parsed");
  }
  if (parts.parts() < 1 || parts.bytes() < 1 ||
      parts.bytes() > static_cast<int64_t>(kMaxEntryBytes)) {
    return corrupt(absl::StrCat("says ", parts.parts(), " parts of ",
                                parts.bytes(), " bytes"));
  }
  const std::string dir =
      LogPartsDir(prefix_, index, parts.epoch(), parts.attempt());
  const std::string what = absl::StrCat("log entry ", index, "'s parts");
  absl::StatusOr<std::string> bytes =
      GetChunks(*client_, dir, parts.parts(), revision, what);
  if (absl::IsOutOfRange(bytes.status())) {  // compacted since: as they are
    bytes = GetChunks(*client_, dir, parts.parts(), 0, what);
  }
  RETURN_IF_ERROR(bytes.status());
  if (static_cast<int64_t>(bytes->size()) != parts.bytes() ||
      Crc32(*bytes) != parts.crc32()) {
    return corrupt(absl::StrCat("says ", parts.bytes(), " bytes and a CRC its ",
                                bytes->size(), " bytes do not match"));
  }
  return bytes;
}

EtcdLog::~EtcdLog() {
  StopSnapshots();
  SqliteStore* store;
  {
    MutexLock lock(&mu_);
    while (snapshot_running_) snapshot_cv_.Wait(&mu_);  // a direct caller's
    store = store_;
    store_ = nullptr;
  }
  // A store that outlives its log (in tests: a master's log outlives its
  // store) is no longer replicated.
  if (store != nullptr) store->SetReplicator(nullptr);
}

absl::StatusOr<int64_t> EtcdLog::CatchUp(SqliteStore& store) {
  ASSIGN_OR_RETURN(int64_t applied, store.log_index());
  // Whether the log's entries after `applied` were compacted away.
  const auto behind = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::optional<storelog::Snapshot> snapshot,
                     ReadSnapshotRecord(*client_, prefix_));
    if (!snapshot || snapshot->index() <= applied) return absl::OkStatus();
    return absl::OutOfRangeError(absl::StrCat(
        "this copy holds the store's log to entry ", applied,
        "; the log now begins after the snapshot at entry ", snapshot->index(),
        ": the copy is to be replaced by the snapshot"));
  };
  RETURN_IF_ERROR(behind());
  const std::string end = PrefixEnd(prefix_ + "log/");
  int64_t count = 0;
  for (;;) {
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got,
                     client_->Range(EntryKey(applied + 1), end, kCatchUpBatch));
    for (const etcdserverpb::KeyValue& kv : got.kvs()) {
      const int64_t index = applied + 1;
      if (kv.key() != EntryKey(index)) {
        RETURN_IF_ERROR(behind());  // a snapshot since the first look
        return absl::DataLossError(
            absl::StrCat("the store's log skips from entry ", applied, " to ",
                         kv.key(), ": this copy cannot be brought up to date"));
      }
      const std::string* bytes = &kv.value();
      std::string joined;
      if (kv.value().starts_with(kPartsMark)) {
        absl::StatusOr<std::string> parts =
            ReadParts(index, kv.value(), got.header().revision());
        if (!parts.ok()) {
          // Their entry compacted into a snapshot since it was read.
          if (absl::IsDataLoss(parts.status())) RETURN_IF_ERROR(behind());
          return parts.status();
        }
        joined = *std::move(parts);
        bytes = &joined;
      }
      ASSIGN_OR_RETURN(
          std::vector<SqliteWrite> writes,
          DecodeLogEntry(index, SqliteStore::kSchemaVersion, *bytes));
      RETURN_IF_ERROR(store.ApplyLogEntry(index, writes));
      applied = index;
      ++count;
    }
    if (!got.more() || got.kvs().empty()) {
      // Nothing after the copy's entry: a snapshot may have passed it
      // since the first look (the entries after it not yet written).
      if (count == 0) RETURN_IF_ERROR(behind());
      return count;
    }
  }
}

absl::Status EtcdLog::StartLeading(SqliteStore& store, EtcdLead* lead) {
  if (!lead->leading()) {
    return absl::FailedPreconditionError("the store's log: not leading");
  }
  // The lead is ours: no other master appends, so this reads the log's end.
  RETURN_IF_ERROR(CatchUp(store).status());
  ASSIGN_OR_RETURN(int64_t applied, store.log_index());
  ASSIGN_OR_RETURN(std::optional<storelog::Snapshot> snapshot,
                   ReadSnapshotRecord(*client_, prefix_));
  {
    MutexLock lock(&mu_);
    lead_ = lead;
    store_ = &store;
    next_ = applied + 1;
    last_index_.store(applied);
    snapshot_index_ = snapshot ? snapshot->index() : 0;
    stopping_ = false;
  }
  store.SetReplicator(this);
  if (options_.snapshot_every > 0 && !snapshot_thread_.joinable()) {
    snapshot_thread_ = std::thread([this] { SnapshotLoop(); });
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> EtcdLog::ReplaceBySnapshot(
    std::unique_ptr<SqliteStore>* store, const SqliteStoreOptions& options) {
  const std::string path = (*store)->path();
  store->reset();
  absl::StatusOr<int64_t> installed =
      InstallSnapshot(*client_, prefix_, path, options.cluster_id);
  // The old file again when the snapshot could not replace it.
  ASSIGN_OR_RETURN(*store, SqliteStore::Open(path, options));
  return installed;
}

absl::StatusOr<int64_t> EtcdLog::Snapshot() {
  SqliteStore* store;
  EtcdLead* lead;
  {
    MutexLock lock(&mu_);
    while (snapshot_running_) snapshot_cv_.Wait(&mu_);
    if (lead_ == nullptr || store_ == nullptr || broken_ || stopping_) {
      return absl::FailedPreconditionError(
          "a snapshot of the store: this master does not lead");
    }
    if (next_ - 1 <= snapshot_index_) return snapshot_index_;  // no news
    snapshot_running_ = copying_ = true;
    store = store_;
    lead = lead_;
  }
  const auto done = [&](absl::StatusOr<int64_t> index) {
    MutexLock lock(&mu_);
    snapshot_running_ = copying_ = false;
    if (index.ok()) {
      snapshot_index_ = std::max(snapshot_index_, *index);
      ++snapshots_;
    }
    snapshot_cv_.SignalAll();
    return index;
  };
  // The store is used only for its copy: a master stopping waits for that
  // (Detach), not for the upload.
  absl::StatusOr<SnapshotImage> image =
      TakeSnapshotImage(*store, store->path() + ".snapshot-out");
  {
    MutexLock lock(&mu_);
    copying_ = false;
    snapshot_cv_.SignalAll();
    if (image.ok() && image->index <= snapshot_index_) {
      snapshot_running_ = false;
      return snapshot_index_;
    }
  }
  if (!image.ok()) return done(image.status());
  absl::Status published = PublishSnapshot(*client_, prefix_, *lead, *image,
                                           options_.chunk_bytes, [this] {
                                             MutexLock lock(&mu_);
                                             return stopping_;
                                           });
  if (!published.ok()) return done(published);
  return done(image->index);
}

int64_t EtcdLog::snapshots() const {
  MutexLock lock(&mu_);
  return snapshots_;
}

void EtcdLog::SnapshotLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && !snapshot_wanted_) snapshot_cv_.Wait(&mu_);
      if (stopping_) return;
      snapshot_wanted_ = false;
    }
    absl::StatusOr<int64_t> index = Snapshot();
    if (!index.ok()) {
      std::fprintf(stderr, "tiresias master: the store's snapshot: %s\n",
                   std::string(index.status().message()).c_str());
    }
  }
}

void EtcdLog::StopSnapshots() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    snapshot_cv_.SignalAll();
  }
  if (snapshot_thread_.joinable()) snapshot_thread_.join();
}

void EtcdLog::Detach() {
  // The snapshot thread is joined by the destructor: an upload under way
  // stops at its next chunk, and needs the store no more.
  MutexLock lock(&mu_);
  stopping_ = true;
  snapshot_cv_.SignalAll();
  while (copying_) snapshot_cv_.Wait(&mu_);
  store_ = nullptr;
}

int64_t EtcdLog::appended() const {
  MutexLock lock(&mu_);
  return appended_;
}

int64_t EtcdLog::next_index() const {
  MutexLock lock(&mu_);
  return next_;
}

absl::StatusOr<bool> EtcdLog::WasWritten(const std::string& key,
                                         const std::string& value) {
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got, client_->Range(key));
  return !got.kvs().empty() && got.kvs(0).value() == value;
}

absl::Status EtcdLog::Replicate(SqliteDb& db, std::vector<SqliteWrite> writes) {
  EtcdLead* lost_lead = nullptr;
  std::string why;
  {
    MutexLock lock(&mu_);
    if (lead_ == nullptr || broken_) {
      return absl::UnavailableError(
          "the replicated store takes no writes: this master does not lead");
    }
    const int64_t index = next_;
    const uint64_t epoch = lead_->epoch();
    const std::string key = EntryKey(index);
    std::string value =
        EncodeLogEntry(epoch, SqliteStore::kSchemaVersion, writes);
    if (value.size() > kMaxEntryBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "one store write of ", value.size(), " bytes: more than the ",
          kMaxEntryBytes, " an etcd log entry may hold"));
    }
    if (value.size() > PartBytes(options_.part_bytes)) {
      absl::StatusOr<std::string> where = WriteParts(index, epoch, value);
      if (where.ok()) {
        value = *std::move(where);
      } else if (absl::IsFailedPrecondition(where.status())) {
        why = std::string(where.status().message());  // no longer leads
      } else {
        // The entry is not written: this transaction fails alone.
        return absl::UnavailableError(where.status().message());
      }
    }
    etcdserverpb::TxnRequest txn;
    CompareCreatedAt(&txn, lead_->leader_key(), static_cast<int64_t>(epoch));
    PutIfCreatedAt(&txn, key, 0, value);
    // Until etcd says: a call that failed may still land (a proposal that
    // timed out here commits later, or a member tried after another got
    // it), so the same transaction is sent again, which the free index
    // makes safe, and a refusal is judged by what the log then holds.
    // Never "not written" without etcd's word: the client would be told a
    // failure of what the log holds.
    bool written = false;
    std::string errors;
    for (int attempt = 0; attempt < kAppendAttempts && why.empty() && !written;
         ++attempt) {
      absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
      if (!done.ok()) {
        absl::StrAppend(&errors, errors.empty() ? "" : "; ",
                        done.status().message());
        continue;
      }
      if (done->succeeded()) {
        written = true;
        break;
      }
      absl::StatusOr<bool> was = WasWritten(key, value);
      if (!was.ok()) {
        absl::StrAppend(&errors, errors.empty() ? "" : "; ",
                        was.status().message());
        continue;
      }
      if (*was) {
        written = true;  // an earlier try of this transaction landed
      } else {
        why = absl::StrCat("the store's log entry ", index,
                           " was refused: this master no longer leads (",
                           lead_->leader_key(), " is not its epoch ", epoch,
                           "'s)");
      }
    }
    if (!written && why.empty()) {
      why = absl::StrCat("cannot tell whether the store's log entry ", index,
                         " was written: ", errors);
    }
    if (written) {
      absl::Status recorded = WriteLogIndex(db, index);
      if (recorded.ok()) {
        next_ = index + 1;
        last_index_.store(index);
        ++appended_;
        if (options_.snapshot_every > 0 && !snapshot_wanted_ &&
            !snapshot_running_ &&
            index - std::max(snapshot_index_, snapshot_tried_at_) >=
                options_.snapshot_every) {
          snapshot_wanted_ = true;
          snapshot_tried_at_ = index;
          snapshot_cv_.SignalAll();
        }
        return absl::OkStatus();
      }
      // In the log, not in this copy: the copy catches up when it leads
      // again; this master may not go on.
      why =
          absl::StrCat("the store's log holds entry ", index,
                       " but this copy cannot record it: ", recorded.message());
    }
    broken_ = true;
    lost_lead = lead_;
  }
  lost_lead->Lost(why);
  return absl::UnavailableError(why);
}

void EtcdLog::CommitFailed(const absl::Status& status) {
  EtcdLead* lead;
  {
    MutexLock lock(&mu_);
    broken_ = true;
    lead = lead_;
  }
  if (lead != nullptr) {
    lead->Lost(
        absl::StrCat("the store's log holds an entry this master could "
                     "not commit to its copy: ",
                     status.message()));
  }
}

}  // namespace tiresias

// Snapshots of the replicated store (etcd_store.h), so that its log does
// not grow for ever: the leader writes its copy of the state as of log
// entry I (a SQLite file, zlib-compressed, in chunks of at most 1 MiB
// under <prefix>snapshot/<I>.<epoch>/), then, in one transaction fenced
// by its epoch and by the record's last revision, the record <prefix>snapshot
// (proto/store_log.proto, Snapshot) with the deletion of the log's entries up
// to I and of every other snapshot's chunks. A copy behind I (a new master, or
// one stopped for a while) cannot replay the log from its entry: it replaces
// its file by the snapshot (read at the record's revision, so a newer snapshot
// meanwhile does not mix in), then replays the entries after I.
//
//   leader:  ASSIGN_OR_RETURN(SnapshotImage image,
//                             TakeSnapshotImage(store, tmp));   // the store
//            RETURN_IF_ERROR(PublishSnapshot(client, prefix, lead, image));
//   a copy:  the store closed,
//            ASSIGN_OR_RETURN(int64_t i, InstallSnapshot(client, prefix,
//                                                       path, cluster_id));
//
// A deposed leader's snapshot never becomes the record (its chunks are
// deleted by the next one's transaction). etcd keeps deleted keys in its
// history until compacted: run it with --auto-compaction-retention.
#ifndef TIRESIAS_MASTER_ETCD_SNAPSHOT_H_
#define TIRESIAS_MASTER_ETCD_SNAPSHOT_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "master/etcd_client.h"
#include "master/etcd_lead.h"
#include "master/sqlite_store.h"
#include "proto/store_log.pb.h"

namespace tiresias {

inline constexpr size_t kSnapshotChunkBytes = 1 << 20;

// The record, nullopt if no snapshot was ever written; `revision`, when
// given, is set to the etcd revision it was written at.
absl::StatusOr<std::optional<storelog::Snapshot>> ReadSnapshotRecord(
    EtcdClient& client, const std::string& prefix, int64_t* revision = nullptr);

// A copy of the store's file, compressed, and the log index it holds.
struct SnapshotImage {
  int64_t index = 0;
  int64_t file_bytes = 0;
  std::string compressed;
};
// The leader's copy as it is now, through `tmp_path` (a scratch file,
// removed after, whatever happens); the only part that uses the store.
absl::StatusOr<SnapshotImage> TakeSnapshotImage(const SqliteStore& store,
                                                const std::string& tmp_path);
// Writes `image` as the store's snapshot, fenced by `lead`'s epoch, and
// drops the log up to it. FailedPrecondition when the lead is no longer
// this master's (nothing is published), Aborted when another snapshot's
// record was written meanwhile (nothing is published), Cancelled when
// `stop` says so (asked before each chunk and before the record).
absl::Status PublishSnapshot(EtcdClient& client, const std::string& prefix,
                             const EtcdLead& lead, const SnapshotImage& image,
                             size_t chunk_bytes = kSnapshotChunkBytes,
                             const std::function<bool()>& stop = {});

// The transaction that makes `image` (its chunks put under its folder)
// the store's snapshot: only while `leader_key` was created at `epoch` and
// the record was last written at `record_revision` (0: never), so that a
// try of it that etcd applies late, after a newer snapshot's, changes
// nothing. What PublishSnapshot sends; exposed for tests.
etcdserverpb::TxnRequest SnapshotRecordTxn(
    const std::string& prefix, const std::string& leader_key, uint64_t epoch,
    const SnapshotImage& image, size_t chunk_bytes, int64_t record_revision);

// A copy: replaces the SQLite file at `path` (which no store may hold; its
// WAL is removed too) by the latest snapshot, checked first (size, CRC,
// SQLite's quick_check, the schema, `cluster_id`, its log index); the
// index. Nothing is replaced when a check fails (DataLoss, or
// FailedPrecondition for another schema or cluster); NotFound when there
// is no snapshot.
absl::StatusOr<int64_t> InstallSnapshot(EtcdClient& client,
                                        const std::string& prefix,
                                        const std::string& path,
                                        const std::string& cluster_id);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ETCD_SNAPSHOT_H_

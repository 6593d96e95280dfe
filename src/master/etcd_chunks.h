// The replicated store's keys in etcd (etcd_store.h), and values too large
// for one etcd request (its default limit is 1.5 MiB) kept as chunks under
// a folder of keys, each put fenced by the lead's epoch:
//
//   <prefix>log/<index>                  one log entry (or where its parts are)
//   <prefix>part/<index>.<epoch>.<try>/<k>  the parts of an entry too large
//   <prefix>snapshot/<index>.<epoch>/<k> a snapshot's chunks
//
//   RETURN_IF_ERROR(PutChunks(client, lead.leader_key(), epoch, dir, bytes,
//                             1 << 20, stop, "the store's snapshot"));
//   ASSIGN_OR_RETURN(std::string bytes,
//                    GetChunks(client, dir, count, revision, "..."));
#ifndef TIRESIAS_MASTER_ETCD_CHUNKS_H_
#define TIRESIAS_MASTER_ETCD_CHUNKS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "master/etcd_client.h"

namespace tiresias {

std::string LogEntryKey(const std::string& prefix, int64_t index);
// The folder of the parts of the entry at `index` written at `epoch` by
// the leader's try `attempt` (a failed try's late put never lands in
// another's folder); the parts of every entry up to `index` lie before
// LogPartsDir(prefix, index + 1, 0, 0).
std::string LogPartsDir(const std::string& prefix, int64_t index,
                        uint64_t epoch, uint64_t attempt);
std::string ChunkKey(const std::string& dir, int64_t chunk);
// How many chunks of at most `chunk_bytes` hold `bytes` (1 at least).
int64_t ChunkCount(size_t bytes, size_t chunk_bytes);
uint32_t Crc32(std::string_view bytes);

// Puts `bytes` under `dir` in ChunkCount chunks, one put a call, each only
// while `leader_key` was created at `epoch`: FailedPrecondition (naming
// `what`) once it is not, and only then (a call that failed is
// Unavailable, whatever etcd said), Cancelled when `stop` says so between
// chunks. A put that failed may be sent again: it writes the same value.
absl::Status PutChunks(EtcdClient& client, const std::string& leader_key,
                       uint64_t epoch, const std::string& dir,
                       std::string_view bytes, size_t chunk_bytes,
                       const std::function<bool()>& stop,
                       const std::string& what);
// The `count` chunks under `dir` joined, read one a call (the answer stays
// small) at `revision` (0: now; OutOfRange once etcd compacted it away);
// DataLoss naming `what` when one is missing.
absl::StatusOr<std::string> GetChunks(EtcdClient& client,
                                      const std::string& dir, int64_t count,
                                      int64_t revision,
                                      const std::string& what);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ETCD_CHUNKS_H_

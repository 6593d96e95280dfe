#include "master/etcd_chunks.h"

#include <zlib.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/status_macros.h"

namespace tiresias {

std::string LogEntryKey(const std::string& prefix, int64_t index) {
  return absl::StrFormat("%slog/%020d", prefix, index);
}

std::string LogPartsDir(const std::string& prefix, int64_t index,
                        uint64_t epoch, uint64_t attempt) {
  return absl::StrFormat("%spart/%020d.%020d.%d/", prefix, index, epoch,
                         attempt);
}

std::string ChunkKey(const std::string& dir, int64_t chunk) {
  return absl::StrFormat("%s%06d", dir, chunk);
}

int64_t ChunkCount(size_t bytes, size_t chunk_bytes) {
  return std::max<int64_t>(
      1, static_cast<int64_t>((bytes + chunk_bytes - 1) / chunk_bytes));
}

uint32_t Crc32(std::string_view bytes) {
  return static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()),
            static_cast<uInt>(bytes.size())));
}

absl::Status PutChunks(EtcdClient& client, const std::string& leader_key,
                       uint64_t epoch, const std::string& dir,
                       std::string_view bytes, size_t chunk_bytes,
                       const std::function<bool()>& stop,
                       const std::string& what) {
  const int64_t chunks = ChunkCount(bytes.size(), chunk_bytes);
  for (int64_t k = 0; k < chunks; ++k) {
    if (stop && stop()) {
      return absl::CancelledError(
          absl::StrCat(what, ": the master is stopping"));
    }
    etcdserverpb::TxnRequest txn;
    CompareCreatedAt(&txn, leader_key, static_cast<int64_t>(epoch));
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(ChunkKey(dir, k));
    put->set_value(std::string(
        bytes.substr(static_cast<size_t>(k) * chunk_bytes, chunk_bytes)));
    absl::StatusOr<etcdserverpb::TxnResponse> done = client.Txn(txn);
    if (!done.ok()) {
      return absl::UnavailableError(
          absl::StrCat(what, ": ", done.status().message()));
    }
    if (!done->succeeded()) {
      return absl::FailedPreconditionError(absl::StrCat(
          what, ": this master no longer leads (", leader_key, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GetChunks(EtcdClient& client,
                                      const std::string& dir, int64_t count,
                                      int64_t revision,
                                      const std::string& what) {
  std::string bytes;
  for (int64_t k = 0; k < count; ++k) {
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got,
                     client.Range(ChunkKey(dir, k), "", 0, revision));
    if (got.kvs().empty()) {
      return absl::DataLossError(
          absl::StrCat(what, ": chunk ", k, " of ", count, " is missing"));
    }
    bytes += got.kvs(0).value();
  }
  return bytes;
}

}  // namespace tiresias

// Which master leads, as the rest of the master sees it: the lead's epoch,
// its record, the standbys and the store's health. Two kinds: StateDirLead
// (state_dir_lead.h, masters of one state dir on one host or a shared file
// system) and EtcdLead (etcd_lead.h, masters on an etcd store, on any
// machines).
#ifndef TIRESIAS_MASTER_MASTER_LEAD_H_
#define TIRESIAS_MASTER_MASTER_LEAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

// What is kept of the last master to take the lead.
struct LeaderRecord {
  uint64_t epoch = 0;
  int64_t pid = 0;
  std::string host;
  double since = 0;     // Unix seconds it took the lead
  std::string address;  // where it listens; empty until it says
};

// One member of the store (etcd), as the leader last asked it.
struct StoreMemberHealth {
  std::string endpoint;  // host:port
  bool in_use = false;   // the member this master's calls go to
  std::string error;     // why it did not answer; empty: it did
  std::string version;   // etcd's
  int64_t db_size = 0;   // bytes
  bool raft_leader = false;
  bool has_leader = false;  // it knows a raft leader: it has a quorum
  uint64_t raft_index = 0;
  std::vector<std::string> alarms;  // etcd's errors ("NOSPACE")
};

// The store, as the lead last saw it.
struct StoreHealth {
  std::string kind;       // "sqlite" (a state dir) or "etcd"; "": unknown
  std::string where;      // the state dir, or the etcd URL
  int64_t log_index = 0;  // etcd: the last log entry this copy holds
  double checked = 0;     // Unix seconds `members` were asked; 0: not yet
  std::vector<StoreMemberHealth> members;
};

class MasterLead {
 public:
  using Record = LeaderRecord;
  virtual ~MasterLead() = default;
  // This lead's epoch: 0 until leading, then larger than every earlier
  // lead's. The master puts it in its answers to agents, which refuse a
  // lower one than they have seen (a deposed leader).
  virtual uint64_t epoch() const = 0;
  // This lead's record (a copy).
  virtual LeaderRecord record() const = 0;
  // The other live masters, as "pid@host", sorted.
  virtual std::vector<std::string> Standbys() const = 0;
  // Whether the lead is certainly still this master's, so that it may
  // command the agents. A lock held by the process always is; a lease
  // (EtcdLead) is not once a renewal is overdue.
  virtual bool Holds() const { return true; }
  // The store's health, from memory (refreshed apart from any request).
  virtual StoreHealth Store() const { return {}; }
};

// "epoch 7, pid 123 on host h since 2026-12-06 04:40:00 UTC, at 10.0.0.1:50051"
std::string DescribeLeader(const LeaderRecord& record);

// One field a line ("epoch 7\npid 123\n..."), and back. Decode's errors
// name `where` (a file, an etcd key) and the line; an unknown name is a
// later build's field, skipped. Without `need_epoch`, the epoch may be
// missing or 0 (etcd keeps it as the key's revision).
std::string EncodeLeaderRecord(const LeaderRecord& record);
absl::StatusOr<LeaderRecord> DecodeLeaderRecord(const std::string& where,
                                                const std::string& text,
                                                bool need_epoch = true);

// This machine's host name ("unknown" if it has none).
std::string LeadHostName();

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_MASTER_LEAD_H_

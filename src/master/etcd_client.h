// A small client of etcd's v3 API (proto/etcd.proto) for a master on an
// etcd store: ranges, transactions, leases. Speaks to one member at a time
// and moves to the next on a failure that says the member cannot answer
// (unavailable, deadline exceeded, no raft leader), within the call's
// deadline, so that one member down costs a retry, not an error. The first
// four tries that wait get 250 ms each, the next ones twice as long each: a
// write taken by a member whose raft leader just died is never answered.
//
//   ASSIGN_OR_RETURN(EtcdUrl url, ParseEtcdUrl("etcd://a:2379,b:2379/t1"));
//   ASSIGN_OR_RETURN(auto client, EtcdClient::Connect({.endpoints =
//                                                       url.endpoints}));
//   ASSIGN_OR_RETURN(etcdserverpb::RangeResponse r,
//                    client->Range(url.prefix + "log/", PrefixEnd(...)));
//
// Thread-safe.
#ifndef TIRESIAS_MASTER_ETCD_CLIENT_H_
#define TIRESIAS_MASTER_ETCD_CLIENT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/etcd.grpc.pb.h"

namespace tiresias {

// `--store etcd://HOST:PORT[,HOST:PORT...][/PREFIX]`: the members, and the
// key prefix under which this cluster keeps everything (default
// "/tiresias/"; always ends in '/').
struct EtcdUrl {
  std::vector<std::string> endpoints;
  std::string prefix = "/tiresias/";
};
// InvalidArgument naming what is wrong: the scheme, an empty or portless
// member.
absl::StatusOr<EtcdUrl> ParseEtcdUrl(const std::string& url);

// The key just past every key that starts with `prefix` (etcd's range_end
// for a prefix).
std::string PrefixEnd(const std::string& prefix);

// Adds to `txn` the condition that `key` was created at `revision` (0: it
// does not exist), and on success a put of `value` there under `lease`
// (0: none); returns the put, for more.
etcdserverpb::PutRequest* PutIfCreatedAt(etcdserverpb::TxnRequest* txn,
                                         const std::string& key,
                                         int64_t revision,
                                         const std::string& value,
                                         int64_t lease = 0);
// Adds only the condition.
void CompareCreatedAt(etcdserverpb::TxnRequest* txn, const std::string& key,
                      int64_t revision);

// Whether a call's failure on one member says only that this member could
// not answer now (it is down, in an election, or timed out), so that the
// next member may be asked; else the answer is etcd's and final.
bool EtcdMemberCannotAnswer(const grpc::Status& status);

class EtcdClient {
 public:
  struct Options {
    std::vector<std::string> endpoints;  // host:port
    // TLS to etcd when `ca_file` is set (PEM); a client certificate when
    // `cert_file` and `key_file` are.
    std::string ca_file, cert_file, key_file;
    // Each call's deadline, over every member it tries.
    std::chrono::milliseconds timeout{3000};
  };
  static absl::StatusOr<std::unique_ptr<EtcdClient>> Connect(
      const Options& options);

  // At `revision` when not 0 (OutOfRange once etcd compacted it away).
  absl::StatusOr<etcdserverpb::RangeResponse> Range(
      const std::string& key, const std::string& range_end = "",
      int64_t limit = 0, int64_t revision = 0);
  absl::StatusOr<etcdserverpb::PutResponse> Put(const std::string& key,
                                                const std::string& value,
                                                int64_t lease = 0);
  absl::StatusOr<etcdserverpb::TxnResponse> Txn(
      const etcdserverpb::TxnRequest& request);
  absl::StatusOr<etcdserverpb::DeleteRangeResponse> Delete(
      const std::string& key, const std::string& range_end = "");

  // A lease of `ttl` seconds; its id.
  absl::StatusOr<int64_t> GrantLease(int64_t ttl);
  // Renews `lease` once, within `timeout` (not the calls' usual one, so
  // that a lease's keeper sees its lease lapse in time); its new TTL in
  // seconds, 0 if it has expired.
  absl::StatusOr<int64_t> KeepAlive(int64_t lease,
                                    std::chrono::milliseconds timeout);
  absl::Status RevokeLease(int64_t lease);

  // The member calls go to first ("host:port").
  std::string current_endpoint() const;

  // What each member says of itself, asked directly (no other member
  // tried), each within `timeout`; in the order the members were given.
  struct MemberStatus {
    std::string endpoint;
    bool in_use = false;  // the member calls go to first
    absl::Status answer;  // not OK: it did not answer; the rest is empty
    std::string version;  // etcd's, "3.4.23"
    int64_t db_size = 0;  // bytes of its database file
    bool raft_leader = false;
    bool has_leader = false;  // it knows of a raft leader (a quorum)
    uint64_t raft_index = 0;
    std::vector<std::string> errors;  // alarms ("NOSPACE") and health
  };
  std::vector<MemberStatus> MemberStatuses(std::chrono::milliseconds timeout);

 private:
  struct Member {
    std::string endpoint;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance;
  };
  explicit EtcdClient(Options options) : options_(std::move(options)) {}

  // Calls `call(member, context)` on the current member, then the next ones
  // while they cannot answer, until the deadline. `bytes`: the request's
  // size (a large write's tries are longer).
  template <typename Response, typename Call>
  absl::StatusOr<Response> Retry(const char* what, Call call, size_t bytes = 0);
  template <typename Response, typename Call>
  absl::StatusOr<Response> Retry(const char* what,
                                 std::chrono::milliseconds timeout, Call call,
                                 size_t bytes = 0);

  const Options options_;
  std::vector<Member> members_;
  std::atomic<size_t> current_{0};
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ETCD_CLIENT_H_

#include "master/etcd_client.h"

#include <algorithm>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/grpcpp.h"
#include "security/pem_files.h"

namespace tiresias {
namespace {

// The PEM text of a --etcd-* file, checked to hold what the flag names
// (security::ReadPem), errors prefixed with the flag.
absl::StatusOr<std::string> ReadPem(const std::string& flag,
                                    const std::string& path,
                                    security::PemKind kind) {
  absl::StatusOr<std::string> text = security::ReadPem(path, kind);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", text.status().message()));
  }
  return text;
}

// How long a call's try waits for its member, given how many of the
// call's tries waited out their time before it: 250 ms for the first four
// (a second), then twice as long each, never past the call's deadline. A
// member whose raft leader just died still forwards a write to it until
// its election timeout shows the loss, and etcd drops that write without
// an answer; until a new leader is elected (an election timeout to twice
// that, 1-2 s with etcd's defaults) every write a live member still takes
// is lost so. Short tries end within a quarter second of the election; a
// slow but live etcd gets the time it needs on the later ones (each try
// that timed out may still land: every write is safe to send again,
// etcd_store.cc). A member that refuses at once (dead, or in an election)
// does not count. A write of over 256 KiB (a part of a large log entry,
// of a snapshot) gets 1 s tries: each copy that lands stays in etcd's
// history until compaction.
std::chrono::milliseconds TryTimeout(size_t waited, size_t bytes) {
  const std::chrono::milliseconds first{bytes > (size_t{256} << 10) ? 1000
                                                                    : 250};
  constexpr size_t kShortTries = 4;
  if (waited < kShortTries) return first;
  return first * (int64_t{1} << std::min<size_t>(waited - kShortTries + 1, 8));
}

}  // namespace

bool EtcdMemberCannotAnswer(const grpc::Status& s) {
  // etcd 3.4 sends two errors it has no gRPC code for as UNKNOWN: a read
  // whose deadline passed while it waited for its raft leader (a
  // linearizable read, in an election) ends with Go's context error; a
  // write its raft dropped unproposed (no leader known when it was
  // proposed, or one handing its lead over) with raft's ErrProposalDropped.
  // Neither took effect: the next member may be asked.
  return s.error_code() == grpc::StatusCode::UNAVAILABLE ||
         s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
         (s.error_code() == grpc::StatusCode::UNKNOWN &&
          (s.error_message() == "context deadline exceeded" ||
           s.error_message() == "raft proposal dropped"));
}

absl::StatusOr<EtcdUrl> ParseEtcdUrl(const std::string& url) {
  constexpr absl::string_view kScheme = "etcd://";
  if (!absl::StartsWith(url, kScheme)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", url, "\": expected etcd://HOST:PORT[,HOST:PORT...][/PREFIX]"));
  }
  absl::string_view rest = absl::string_view(url).substr(kScheme.size());
  EtcdUrl out;
  const size_t slash = rest.find('/');
  if (slash != absl::string_view::npos) {
    std::string prefix(rest.substr(slash));
    if (prefix.size() > 1) {
      if (prefix.back() != '/') prefix += '/';
      out.prefix = prefix;
    }
    rest = rest.substr(0, slash);
  }
  for (absl::string_view member : absl::StrSplit(rest, ',')) {
    const size_t colon = member.rfind(':');
    if (member.empty() || colon == absl::string_view::npos || colon == 0 ||
        colon + 1 == member.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "\"", url, "\": member \"", member, "\": expected HOST:PORT"));
    }
    out.endpoints.emplace_back(member);
  }
  return out;
}

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(end.back() + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

void CompareCreatedAt(etcdserverpb::TxnRequest* txn, const std::string& key,
                      int64_t revision) {
  etcdserverpb::Compare* c = txn->add_compare();
  c->set_key(key);
  c->set_target(etcdserverpb::Compare::CREATE);
  c->set_result(etcdserverpb::Compare::EQUAL);
  c->set_create_revision(revision);
}

etcdserverpb::PutRequest* PutIfCreatedAt(etcdserverpb::TxnRequest* txn,
                                         const std::string& key,
                                         int64_t revision,
                                         const std::string& value,
                                         int64_t lease) {
  CompareCreatedAt(txn, key, revision);
  etcdserverpb::PutRequest* put = txn->add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  put->set_lease(lease);
  return put;
}

absl::StatusOr<std::unique_ptr<EtcdClient>> EtcdClient::Connect(
    const Options& options) {
  if (options.endpoints.empty()) {
    return absl::InvalidArgumentError("etcd: no member to connect to");
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-cert and --etcd-key: give both or neither");
  }
  if (options.ca_file.empty() && !options.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "--etcd-cert: TLS to etcd needs --etcd-ca too (the CA that signed "
        "etcd's certificate)");
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  if (!options.ca_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    absl::StatusOr<std::string> ca =
        ReadPem("--etcd-ca", options.ca_file, security::PemKind::kCertificate);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    if (!options.cert_file.empty() || !options.key_file.empty()) {
      absl::StatusOr<std::string> cert = ReadPem(
          "--etcd-cert", options.cert_file, security::PemKind::kCertificate);
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = ReadPem("--etcd-key", options.key_file,
                                                security::PemKind::kPrivateKey);
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *cert;
      ssl.pem_private_key = *key;
    }
    credentials = grpc::SslCredentials(ssl);
  } else {
    credentials = grpc::InsecureChannelCredentials();
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient(options));
  for (const std::string& endpoint : options.endpoints) {
    grpc::ChannelArguments args;
    // A member that went away is tried again soon, not after gRPC's
    // default backoff (up to two minutes).
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // A range of log entries (each up to 1 MiB) passes gRPC's 4 MiB.
    args.SetMaxReceiveMessageSize(-1);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(endpoint, credentials, args);
    client->members_.push_back({endpoint, etcdserverpb::KV::NewStub(channel),
                                etcdserverpb::Lease::NewStub(channel),
                                etcdserverpb::Maintenance::NewStub(channel)});
  }
  return client;
}

std::string EtcdClient::current_endpoint() const {
  return members_[current_.load() % members_.size()].endpoint;
}

std::vector<EtcdClient::MemberStatus> EtcdClient::MemberStatuses(
    std::chrono::milliseconds timeout) {
  std::vector<MemberStatus> out;
  const size_t current = current_.load() % members_.size();
  for (size_t i = 0; i < members_.size(); ++i) {
    MemberStatus s;
    s.endpoint = members_[i].endpoint;
    s.in_use = i == current;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    etcdserverpb::StatusResponse r;
    grpc::Status got = members_[i].maintenance->Status(
        &context, etcdserverpb::StatusRequest(), &r);
    if (!got.ok()) {
      s.answer = absl::Status(static_cast<absl::StatusCode>(got.error_code()),
                              got.error_message());
    } else {
      s.version = r.version();
      s.db_size = r.dbsize();
      s.has_leader = r.leader() != 0;
      s.raft_leader = s.has_leader && r.leader() == r.header().member_id();
      s.raft_index = r.raftindex();
      s.errors.assign(r.errors().begin(), r.errors().end());
    }
    out.push_back(std::move(s));
  }
  return out;
}

template <typename Response, typename Call>
absl::StatusOr<Response> EtcdClient::Retry(const char* what, Call call,
                                           size_t bytes) {
  return Retry<Response>(what, options_.timeout, std::move(call), bytes);
}

template <typename Response, typename Call>
absl::StatusOr<Response> EtcdClient::Retry(const char* what,
                                           std::chrono::milliseconds timeout,
                                           Call call, size_t bytes) {
  const auto deadline = std::chrono::system_clock::now() + timeout;
  size_t index = current_.load();
  std::string errors;
  size_t waited = 0;  // tries that waited out their time
  for (size_t tried = 0;; ++tried) {
    Member& member = members_[index % members_.size()];
    grpc::ClientContext context;
    const auto try_deadline = std::min(
        deadline, std::chrono::system_clock::now() + TryTimeout(waited, bytes));
    context.set_deadline(try_deadline);
    // A member that knows of no raft leader (an election under way, or
    // it is cut off from the others) says so at once (etcd's "no leader",
    // UNAVAILABLE) instead of taking the call (etcd clientv3's
    // WithRequireLeader).
    context.AddMetadata("hasleader", "true");
    Response response;
    grpc::Status status = call(member, &context, &response);
    if (status.ok()) {
      current_.store(index % members_.size());
      return response;
    }
    absl::StrAppend(&errors, errors.empty() ? "" : "; ", member.endpoint, ": ",
                    status.error_message());
    if (!EtcdMemberCannotAnswer(status)) {
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat("etcd ", what, ": ", errors));
    }
    ++index;
    // (etcd's own answer to a deadline may come a little before it.)
    if (std::chrono::system_clock::now() + std::chrono::milliseconds(20) >=
        try_deadline) {
      ++waited;
    }
    if (std::chrono::system_clock::now() >= deadline) {
      return absl::UnavailableError(
          absl::StrCat("etcd ", what, ": no member answered: ", errors));
    }
    // After each round of the members: not a busy loop while every one
    // refuses at once (none reachable, or etcd without a quorum), 20 ms
    // after the first round, twice as long after each next, 200 ms at most.
    if ((tried + 1) % members_.size() == 0) {
      const size_t rounds = (tried + 1) / members_.size();
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(
          int64_t{20} << std::min<size_t>(rounds - 1, 4), 200)));
    }
  }
}

absl::StatusOr<etcdserverpb::RangeResponse> EtcdClient::Range(
    const std::string& key, const std::string& range_end, int64_t limit,
    int64_t revision) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  request.set_limit(limit);
  request.set_revision(revision);
  return Retry<etcdserverpb::RangeResponse>(
      "range",
      [&](Member& m, grpc::ClientContext* c, etcdserverpb::RangeResponse* r) {
        return m.kv->Range(c, request, r);
      });
}

absl::StatusOr<etcdserverpb::PutResponse> EtcdClient::Put(
    const std::string& key, const std::string& value, int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  return Retry<etcdserverpb::PutResponse>(
      "put",
      [&](Member& m, grpc::ClientContext* c, etcdserverpb::PutResponse* r) {
        return m.kv->Put(c, request, r);
      },
      request.ByteSizeLong());
}

absl::StatusOr<etcdserverpb::TxnResponse> EtcdClient::Txn(
    const etcdserverpb::TxnRequest& request) {
  return Retry<etcdserverpb::TxnResponse>(
      "txn",
      [&](Member& m, grpc::ClientContext* c, etcdserverpb::TxnResponse* r) {
        return m.kv->Txn(c, request, r);
      },
      request.ByteSizeLong());
}

absl::StatusOr<etcdserverpb::DeleteRangeResponse> EtcdClient::Delete(
    const std::string& key, const std::string& range_end) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  request.set_range_end(range_end);
  return Retry<etcdserverpb::DeleteRangeResponse>(
      "delete", [&](Member& m, grpc::ClientContext* c,
                    etcdserverpb::DeleteRangeResponse* r) {
        return m.kv->DeleteRange(c, request, r);
      });
}

absl::StatusOr<int64_t> EtcdClient::GrantLease(int64_t ttl) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl);
  absl::StatusOr<etcdserverpb::LeaseGrantResponse> granted =
      Retry<etcdserverpb::LeaseGrantResponse>(
          "lease grant", [&](Member& m, grpc::ClientContext* c,
                             etcdserverpb::LeaseGrantResponse* r) {
            return m.lease->LeaseGrant(c, request, r);
          });
  if (!granted.ok()) return granted.status();
  if (!granted->error().empty()) {
    return absl::UnavailableError(
        absl::StrCat("etcd lease grant: ", granted->error()));
  }
  return granted->id();
}

absl::StatusOr<int64_t> EtcdClient::KeepAlive(
    int64_t lease, std::chrono::milliseconds timeout) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  absl::StatusOr<etcdserverpb::LeaseKeepAliveResponse> renewed =
      Retry<etcdserverpb::LeaseKeepAliveResponse>(
          "lease keep-alive", timeout,
          [&](Member& m, grpc::ClientContext* c,
              etcdserverpb::LeaseKeepAliveResponse* r) {
            std::unique_ptr<
                grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                         etcdserverpb::LeaseKeepAliveResponse>>
                stream = m.lease->LeaseKeepAlive(c);
            if (!stream->Write(request) || !stream->Read(r)) {
              stream->WritesDone();
              grpc::Status s = stream->Finish();
              return s.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                           "keep-alive stream closed")
                            : s;
            }
            stream->WritesDone();
            c->TryCancel();  // one renewal is all this call wants
            stream->Finish().ok();
            return grpc::Status::OK;
          });
  if (!renewed.ok()) return renewed.status();
  return renewed->ttl();
}

absl::Status EtcdClient::RevokeLease(int64_t lease) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  return Retry<etcdserverpb::LeaseRevokeResponse>(
             "lease revoke",
             [&](Member& m, grpc::ClientContext* c,
                 etcdserverpb::LeaseRevokeResponse* r) {
               return m.lease->LeaseRevoke(c, request, r);
             })
      .status();
}

}  // namespace tiresias

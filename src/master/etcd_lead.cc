#include "master/etcd_lead.h"

#include <unistd.h>

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/status_macros.h"

namespace tiresias {
namespace {
// A renewal counts from when it was sent, less this for clock rates.
constexpr std::chrono::milliseconds kMargin{500};
// How often a lease is renewed (the TTL is 2 s at least): an outage of up
// to about the TTL less 1.5 s, whenever it begins, is outlived.
constexpr std::chrono::milliseconds kPeriod{500};
// A renewal that failed is tried again this soon: the lead lasts only
// until its last renewal's TTL (less the margin) runs out, and one etcd
// member's death costs an election and a move to another member.
constexpr std::chrono::milliseconds kRetry{100};
}  // namespace

EtcdLead::EtcdLead(std::shared_ptr<EtcdClient> client, std::string prefix,
                   Options options)
    : client_(std::move(client)),
      prefix_(std::move(prefix)),
      leader_key_(prefix_ + "leader"),
      options_(std::move(options)) {
  std::random_device random;
  self_name_ =
      absl::StrCat(getpid(), "@", LeadHostName(), "#",
                   absl::Hex(static_cast<uint32_t>(random()), absl::kZeroPad8));
}

absl::StatusOr<std::unique_ptr<EtcdLead>> EtcdLead::Join(
    std::shared_ptr<EtcdClient> client, std::string prefix, Options options) {
  if (options.ttl < std::chrono::seconds(2)) {
    return absl::InvalidArgumentError("lead TTL: expected at least 2 s");
  }
  std::unique_ptr<EtcdLead> lead(
      new EtcdLead(std::move(client), std::move(prefix), std::move(options)));
  RETURN_IF_ERROR(lead->NewLease());
  lead->keeper_ = std::thread([l = lead.get()] { l->KeepAliveLoop(); });
  lead->health_thread_ = std::thread([l = lead.get()] { l->HealthLoop(); });
  return lead;
}

EtcdLead::~EtcdLead() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (keeper_.joinable()) keeper_.join();
  int64_t lease = 0;
  {
    MutexLock lock(&mu_);  // the keeper may have taken a new one
    lease = lease_;
  }
  // First: a standby takes over at once. The health thread may be waiting
  // on a member that does not answer.
  if (lease != 0) client_->RevokeLease(lease).IgnoreError();
  if (health_thread_.joinable()) health_thread_.join();
}

absl::Status EtcdLead::NewLease() {
  const Steady::time_point sent = Steady::now();
  ASSIGN_OR_RETURN(int64_t lease, client_->GrantLease(options_.ttl.count()));
  RETURN_IF_ERROR(client_
                      ->Put(absl::StrCat(prefix_, "masters/", self_name_),
                            absl::StrCat(getpid(), "@", LeadHostName()), lease)
                      .status());
  MutexLock lock(&mu_);
  lease_ = lease;
  valid_until_ = sent + options_.ttl - kMargin;
  return absl::OkStatus();
}

absl::StatusOr<bool> EtcdLead::TryLead() {
  if (leading()) return true;
  int64_t lease;
  LeaderRecord r;
  {
    MutexLock lock(&mu_);
    if (lost_) return absl::UnavailableError("the lead was lost");
    lease = lease_;
  }
  r.pid = getpid();
  r.host = LeadHostName();
  r.since = static_cast<double>(absl::ToUnixMicros(absl::Now())) / 1e6;
  etcdserverpb::TxnRequest txn;
  // Epoch 0 in the value: the key's create revision is the epoch.
  PutIfCreatedAt(&txn, leader_key_, 0, EncodeLeaderRecord(r), lease);
  absl::StatusOr<etcdserverpb::TxnResponse> done = client_->Txn(txn);
  if (done.ok() && done->succeeded()) {
    r.epoch = static_cast<uint64_t>(done->header().revision());
  } else {
    // A try that failed, or was sent again to another member, may have
    // made the key after all: then it is under this master's lease and
    // the lead is ours (else nobody could lead until the lease ends).
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got,
                     client_->Range(leader_key_));
    if (got.kvs().empty() || got.kvs(0).lease() != lease) {
      if (!done.ok()) return done.status();
      return false;
    }
    r.epoch = static_cast<uint64_t>(got.kvs(0).create_revision());
  }
  MutexLock lock(&mu_);
  record_ = r;
  return true;
}

bool EtcdLead::Holds() const {
  MutexLock lock(&mu_);
  return record_.epoch != 0 && !lost_ && Steady::now() < valid_until_;
}

uint64_t EtcdLead::epoch() const {
  MutexLock lock(&mu_);
  return record_.epoch;
}

LeaderRecord EtcdLead::record() const {
  MutexLock lock(&mu_);
  return record_;
}

std::vector<std::string> EtcdLead::Standbys() const {
  MutexLock lock(&mu_);
  return standbys_;
}

StoreHealth EtcdLead::Store() const {
  MutexLock lock(&mu_);
  return health_;
}

void EtcdLead::RefreshHealth() {
  constexpr std::chrono::milliseconds kAsk{500};
  StoreHealth h;
  h.kind = "etcd";
  h.where = options_.where;
  if (options_.log_index) h.log_index = options_.log_index();
  h.checked = static_cast<double>(absl::ToUnixMicros(absl::Now())) / 1e6;
  for (EtcdClient::MemberStatus& s : client_->MemberStatuses(kAsk)) {
    StoreMemberHealth m;
    m.endpoint = std::move(s.endpoint);
    m.in_use = s.in_use;
    if (!s.answer.ok()) {
      m.error = std::string(s.answer.message());
      if (m.error.empty()) m.error = absl::StatusCodeToString(s.answer.code());
    }
    m.version = std::move(s.version);
    m.db_size = s.db_size;
    m.raft_leader = s.raft_leader;
    m.has_leader = s.has_leader;
    m.raft_index = s.raft_index;
    m.alarms = std::move(s.errors);
    h.members.push_back(std::move(m));
  }
  {
    MutexLock lock(&mu_);
    health_ = std::move(h);
  }
  // The standbys: every master's key but this one's. Kept as they were
  // when etcd cannot say.
  const std::string dir = prefix_ + "masters/";
  absl::StatusOr<etcdserverpb::RangeResponse> masters =
      client_->Range(dir, PrefixEnd(dir));
  if (!masters.ok()) return;
  MutexLock lock(&mu_);
  standbys_.clear();
  for (const etcdserverpb::KeyValue& kv : masters->kvs()) {
    if (kv.key() == dir + self_name_) continue;
    standbys_.push_back(kv.value());
  }
  std::sort(standbys_.begin(), standbys_.end());
}

void EtcdLead::HealthLoop() {
  for (;;) {
    // At once on taking the lead, then every period.
    const Steady::time_point next = Steady::now() + options_.health_period;
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
        if (record_.epoch != 0 && health_.checked == 0) break;
      }
      if (Steady::now() >= next) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (leading()) RefreshHealth();
  }
}

absl::Status EtcdLead::SetAddress(const std::string& address) {
  LeaderRecord r;
  int64_t lease;
  {
    MutexLock lock(&mu_);
    if (record_.epoch == 0) {
      return absl::FailedPreconditionError("not leading: no record to write");
    }
    record_.address = address;
    r = record_;
    lease = lease_;
  }
  // Only over this lead's own key.
  etcdserverpb::TxnRequest txn;
  PutIfCreatedAt(&txn, leader_key_, static_cast<int64_t>(r.epoch),
                 EncodeLeaderRecord(r), lease);
  ASSIGN_OR_RETURN(etcdserverpb::TxnResponse done, client_->Txn(txn));
  if (!done.succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat(leader_key_, ": no longer this master's lead"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<LeaderRecord>> EtcdLead::ReadLeader() const {
  ASSIGN_OR_RETURN(etcdserverpb::RangeResponse got,
                   client_->Range(leader_key_));
  if (got.kvs().empty()) return std::nullopt;
  const etcdserverpb::KeyValue& kv = got.kvs(0);
  ASSIGN_OR_RETURN(LeaderRecord r, DecodeLeaderRecord(leader_key_, kv.value(),
                                                      /*need_epoch=*/false));
  r.epoch = static_cast<uint64_t>(kv.create_revision());
  return std::optional<LeaderRecord>(r);
}

void EtcdLead::Lost(const std::string& why) {
  {
    MutexLock lock(&mu_);
    if (lost_) return;
    lost_ = true;
  }
  if (options_.on_lost) options_.on_lost(why);
}

void EtcdLead::KeepAliveLoop() {
  Steady::time_point next = Steady::now() + kPeriod;
  for (;;) {
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
        if (record_.epoch != 0 && !lost_ && Steady::now() >= valid_until_) {
          break;  // judged below, without waiting for the next renewal
        }
      }
      if (Steady::now() >= next) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    int64_t lease;
    bool leading_now, lapsed;
    {
      MutexLock lock(&mu_);
      lease = lease_;
      leading_now = record_.epoch != 0;
      lapsed = leading_now && !lost_ && Steady::now() >= valid_until_;
    }
    if (lapsed) {
      Lost("no renewal of the lead's etcd lease confirmed within its TTL");
      next = Steady::now() + kPeriod;
      continue;
    }
    const Steady::time_point sent = Steady::now();
    // A leader waits as long as its lead is sure (a slow etcd's answer
    // counts until then), and no longer: then it judges. A standby has
    // no lead to lose.
    std::chrono::milliseconds timeout{1000};
    {
      MutexLock lock(&mu_);
      if (record_.epoch != 0) {
        timeout =
            std::max(std::chrono::duration_cast<std::chrono::milliseconds>(
                         valid_until_ - sent),
                     std::chrono::milliseconds(50));
      }
    }
    absl::StatusOr<int64_t> ttl = client_->KeepAlive(lease, timeout);
    if (ttl.ok() && *ttl > 0) {
      MutexLock lock(&mu_);
      if (lease_ == lease) {
        valid_until_ =
            std::max(valid_until_, sent + std::chrono::seconds(*ttl) - kMargin);
      }
      next = sent + kPeriod;
      continue;
    }
    next = Steady::now() + kPeriod;
    if (ttl.ok()) {
      // Whether it leads now: the lead may have been taken (TryLead)
      // while the renewal was under way, under the lease that expired.
      MutexLock lock(&mu_);
      leading_now = record_.epoch != 0;
    }
    if (ttl.ok() && leading_now) {
      Lost("the lead's etcd lease expired");
    } else if (ttl.ok()) {
      NewLease().IgnoreError();  // a standby: joins again with a new lease
    } else {
      next = Steady::now() + kRetry;  // while the lease may live
    }
  }
}

}  // namespace tiresias

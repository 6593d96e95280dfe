// `tiresias master`'s lead of its state dir (master/state_dir_lead.h) or of
// an etcd store (master/etcd_lead.h): TakeLead and TakeEtcdLead, declared
// in master_flags.h.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/master_flags.h"
#include "core/status_macros.h"
#include "master/etcd_store.h"
#include "master/state_dir_lead.h"

namespace tiresias {
namespace {

// What a standby says once each time another master takes the lead:
// "standby: another master leads WHERE (WHO); taking over when UNTIL".
void SayStandby(const std::string& where, const std::string& who,
                const char* until, uint64_t epoch,
                std::optional<uint64_t>* told) {
  if (*told && **told == epoch) return;
  std::fprintf(stderr,
               "tiresias master: standby: another master leads %s (%s); "
               "taking over when %s\n",
               where.c_str(), who.c_str(), until);
  *told = epoch;
}

// A start without --wait-as-standby while another master leads.
absl::Status AnotherLeads(
    const absl::StatusOr<std::optional<LeaderRecord>>& leader) {
  return absl::FailedPreconditionError(absl::StrCat(
      "another master leads it (",
      leader.ok() && *leader ? DescribeLeader(**leader) : "unknown", ")"));
}

}  // namespace

absl::StatusOr<std::shared_ptr<StateDirLead>> TakeLead(
    const std::string& state_dir, bool wait) {
  ASSIGN_OR_RETURN(std::unique_ptr<StateDirLead> lead,
                   StateDirLead::Join(state_dir));
  std::optional<uint64_t> told;  // the epoch last said, 0: none read
  for (;;) {
    ASSIGN_OR_RETURN(bool led, lead->TryLead());
    if (led) break;
    absl::StatusOr<std::optional<StateDirLead::Record>> leader =
        lead->ReadLeader();
    if (!wait) return AnotherLeads(leader);
    SayStandby(state_dir,
               !leader.ok() ? std::string(leader.status().message())
               : *leader    ? DescribeLeader(**leader)
                            : "not recorded yet",
               "it ends", leader.ok() && *leader ? (*leader)->epoch : 0, &told);
    if (const char* signal = StopSignalWithin(std::chrono::milliseconds(100))) {
      return absl::CancelledError(
          absl::StrCat(signal, " received while standby"));
    }
  }
  if (told) {  // a standby taking over (a plain start says its epoch later)
    std::fprintf(stderr, "tiresias master: taking over %s: %s\n",
                 state_dir.c_str(), DescribeLeader(lead->record()).c_str());
  }
  return std::shared_ptr<StateDirLead>(std::move(lead));
}

absl::StatusOr<TakenLead> TakeLeadToStart(
    const MasterFlags& f, bool existed,
    const std::function<absl::Status()>& make_private, MasterOptions* options,
    RunningMaster* m) {
  const bool on_etcd = absl::StartsWith(f.store, "etcd://");
  if (!on_etcd && !f.store.empty() && f.store != "sqlite") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--store ", f.store,
        ": expected sqlite or etcd://HOST:PORT[,HOST:PORT...][/PREFIX]"));
  }
  if (!on_etcd &&
      (!f.etcd_ca.empty() || !f.etcd_cert.empty() || !f.etcd_key.empty())) {
    return absl::InvalidArgumentError(
        "--etcd-ca, --etcd-cert and --etcd-key: only with --store etcd://");
  }
  if (!existed || on_etcd) RETURN_IF_ERROR(make_private());
  TakenLead out;
  out.on_etcd = on_etcd;
  if (on_etcd) {
    absl::StatusOr<EtcdStart> etcd = TakeEtcdLead(f);
    if (!etcd.ok()) {
      if (absl::IsCancelled(etcd.status())) return etcd.status();
      return absl::Status(
          etcd.status().code(),
          absl::StrCat("--store ", f.store, ": ", etcd.status().message()));
    }
    m->etcd_lead = etcd->lead;
    m->etcd_log = etcd->log;
    out.store = std::move(etcd->store);
    options->lead = etcd->lead;
    // Each commit waits on etcd: batch concurrent submissions more
    // (bench/store_compare.sh: 2,028 against 1,834 jobs/s, 8 clients).
    options->submit_linger = std::chrono::milliseconds(1);
    out.set_address = [lead = etcd->lead](const std::string& a) {
      return lead->SetAddress(a);
    };
  } else {
    absl::StatusOr<std::shared_ptr<StateDirLead>> lead =
        TakeLead(f.state_dir, f.wait_as_standby);
    if (!lead.ok()) {
      if (absl::IsCancelled(lead.status())) return lead.status();
      return absl::Status(lead.status().code(),
                          absl::StrCat("--state-dir ", f.state_dir, ": ",
                                       lead.status().message()));
    }
    if (existed) RETURN_IF_ERROR(make_private());
    options->lead = *lead;
    out.set_address = [lead = *lead](const std::string& a) {
      return lead->SetAddress(a);
    };
  }
  return out;
}

namespace {

// Retries `call` while etcd cannot answer (saying so once), until a stop
// signal.
template <typename T, typename Call>
absl::StatusOr<T> WhileEtcdDown(const char* what, Call call) {
  bool said = false;
  for (;;) {
    absl::StatusOr<T> got = call();
    if (got.ok() || !absl::IsUnavailable(got.status())) return got;
    if (!said) {
      std::fprintf(stderr, "tiresias master: waiting for etcd (%s): %s\n", what,
                   std::string(got.status().message()).c_str());
      said = true;
    }
    if (const char* signal = StopSignalWithin(std::chrono::milliseconds(500))) {
      return absl::CancelledError(
          absl::StrCat(signal, " received while waiting for etcd"));
    }
  }
}

}  // namespace

absl::StatusOr<EtcdStart> TakeEtcdLead(const MasterFlags& f) {
  ASSIGN_OR_RETURN(EtcdUrl url, ParseEtcdUrl(f.store));
  if (!(f.lead_ttl_seconds >= 2 && f.lead_ttl_seconds <= 3600)) {
    return absl::InvalidArgumentError("--lead-ttl: expected 2 to 3600 seconds");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> made,
                   EtcdClient::Connect({.endpoints = url.endpoints,
                                        .ca_file = f.etcd_ca,
                                        .cert_file = f.etcd_cert,
                                        .key_file = f.etcd_key}));
  std::shared_ptr<EtcdClient> client(std::move(made));
  ASSIGN_OR_RETURN(std::string cluster_id,
                   WhileEtcdDown<std::string>("the cluster id", [&] {
                     return EtcdClusterId(*client, url.prefix);
                   }));
  if (f.snapshot_every < 0) {
    return absl::InvalidArgumentError(
        "--snapshot-every: expected a count of log entries, 0 for never");
  }
  const std::string path = f.state_dir + "/state.db";
  const SqliteStoreOptions store_options = {.sync_every_commit = false,
                                            .cluster_id = cluster_id};
  absl::StatusOr<std::unique_ptr<SqliteStore>> store =
      SqliteStore::Open(path, store_options);
  if (!store.ok()) return store.status();
  EtcdStart out;
  out.store = std::move(*store);
  out.log = std::make_shared<EtcdLog>(
      client, url.prefix, EtcdLog::Options{.snapshot_every = f.snapshot_every});
  // A copy the log's start has passed (a new master's, or one stopped for
  // long) is replaced by the store's snapshot first.
  const auto replace_if_behind = [&](const absl::Status& status) {
    if (!absl::IsOutOfRange(status)) return status;
    std::fprintf(stderr, "tiresias master: %s: %s\n", path.c_str(),
                 std::string(status.message()).c_str());
    absl::StatusOr<int64_t> replaced =
        out.log->ReplaceBySnapshot(&out.store, store_options);
    if (!replaced.ok()) {
      return absl::Status(replaced.status().code(),
                          absl::StrCat(path,
                                       ": replacing it by the store's "
                                       "snapshot: ",
                                       replaced.status().message()));
    }
    std::fprintf(stderr,
                 "tiresias master: %s: replaced by the store's snapshot at "
                 "log entry %lld\n",
                 path.c_str(), static_cast<long long>(*replaced));
    return absl::OkStatus();
  };
  EtcdLead::Options options;
  options.ttl =
      std::chrono::seconds(static_cast<int64_t>(std::ceil(f.lead_ttl_seconds)));
  options.where = f.store;
  options.log_index = [log = out.log] { return log->last_index(); };
  options.on_lost = [](const std::string& why) {
    // Nothing more may be commanded: another master may lead once the
    // lease can have lapsed. A supervisor starts this one again, as a
    // standby; its copy catches up from the log.
    std::fprintf(stderr, "tiresias master: stepping down: %s\n", why.c_str());
    std::fflush(stderr);
    _exit(3);
  };
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdLead> joined,
                   WhileEtcdDown<std::unique_ptr<EtcdLead>>("joining", [&] {
                     return EtcdLead::Join(client, url.prefix, options);
                   }));
  out.lead = std::move(joined);
  std::optional<uint64_t> told;  // the leader's epoch last said
  for (;;) {
    // A standby keeps its copy current, so that taking over is quick.
    absl::StatusOr<int64_t> applied = out.log->CatchUp(*out.store);
    if (!applied.ok() && absl::IsOutOfRange(applied.status())) {
      absl::Status replacing = replace_if_behind(applied.status());
      if (replacing.ok()) continue;  // catches up from the snapshot at once
      if (!absl::IsUnavailable(replacing)) return replacing;
      applied = replacing;  // etcd out of reach meanwhile: waited out below
    }
    if (!applied.ok() && !absl::IsUnavailable(applied.status())) {
      return absl::Status(applied.status().code(),
                          absl::StrCat(path, ": bringing it up to date: ",
                                       applied.status().message()));
    }
    absl::StatusOr<bool> led = out.lead->TryLead();
    if (led.ok() && *led) break;
    absl::StatusOr<std::optional<LeaderRecord>> leader = out.lead->ReadLeader();
    if (led.ok() && !f.wait_as_standby) return AnotherLeads(leader);
    SayStandby(f.store,
               !led.ok()      ? std::string(led.status().message())
               : !leader.ok() ? std::string(leader.status().message())
               : *leader      ? DescribeLeader(**leader)
                              : "nobody now",
               "its lease ends", leader.ok() && *leader ? (*leader)->epoch : 0,
               &told);
    if (const char* signal = StopSignalWithin(std::chrono::milliseconds(200))) {
      return absl::CancelledError(
          absl::StrCat(signal, " received while standby"));
    }
  }
  for (;;) {  // a snapshot may have passed the copy since its last look
    absl::Status started = out.log->StartLeading(*out.store, out.lead.get());
    if (!absl::IsOutOfRange(started)) {
      RETURN_IF_ERROR(started);
      break;
    }
    RETURN_IF_ERROR(replace_if_behind(started));
  }
  if (told) {
    std::fprintf(stderr, "tiresias master: taking over %s: %s\n",
                 f.store.c_str(), DescribeLeader(out.lead->record()).c_str());
  }
  return out;
}

}  // namespace tiresias

// SqliteStore: virtual clusters (schema version 17) and priority levels
// (QOS, 19), one row each, its configuration the v1::VirtualCluster's or
// v1::Qos's protobuf bytes (so a new field needs no migration). Each write
// is one transaction, durable before it returns.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/sqlite_db.h"
#include "master/sqlite_store.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

void VcToProto(const VcRecord& vc, v1::VirtualCluster* out) {
  out->set_name(vc.name);
  out->set_quota(vc.quota);
  out->set_weight(vc.weight);
  out->set_borrow_limit(vc.borrow_limit);
  out->set_lend_limit(vc.lend_limit);
  out->set_fair_per_user(vc.fair_per_user);
  out->set_fair_quantum_seconds(vc.fair_quantum);
  out->mutable_members()->Assign(vc.members.begin(), vc.members.end());
  out->mutable_default_for()->Assign(vc.default_for.begin(),
                                     vc.default_for.end());
}

VcRecord VcFromProto(const v1::VirtualCluster& vc) {
  VcRecord out;
  out.name = vc.name();
  out.quota = vc.quota();
  out.weight = vc.weight();
  out.borrow_limit = vc.borrow_limit();
  out.lend_limit = vc.lend_limit();
  out.fair_per_user = vc.fair_per_user();
  out.fair_quantum = vc.fair_quantum_seconds();
  out.members.assign(vc.members().begin(), vc.members().end());
  out.default_for.assign(vc.default_for().begin(), vc.default_for().end());
  return out;
}

void QosToProto(const QosRecord& qos, v1::Qos* out) {
  out->set_name(qos.name);
  out->set_priority(qos.priority);
  out->set_allow_no_preempt(qos.allow_no_preempt);
  out->set_max_gpus_per_user(qos.max_gpus_per_user);
  out->mutable_users()->Assign(qos.users.begin(), qos.users.end());
  out->mutable_vcs()->Assign(qos.vcs.begin(), qos.vcs.end());
  out->set_description(qos.description);
}

QosRecord QosFromProto(const v1::Qos& qos) {
  QosRecord out;
  out.name = qos.name();
  out.priority = qos.priority();
  out.allow_no_preempt = qos.allow_no_preempt();
  out.max_gpus_per_user = qos.max_gpus_per_user();
  out.users.assign(qos.users().begin(), qos.users().end());
  out.vcs.assign(qos.vcs().begin(), qos.vcs().end());
  out.description = qos.description();
  return out;
}

absl::Status SqliteStore::PutConfigRow(std::string_view table,
                                       const std::string& name,
                                       const std::string& bytes) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(SqliteQuery upsert,
                   db_->Prepare(absl::StrCat(
                       "INSERT INTO ", ToAbsl(table),
                       " (name, config) VALUES (?1, ?2) "
                       "ON CONFLICT (name) DO UPDATE SET config = ?2")));
  RETURN_IF_ERROR(upsert.Bind(1, name).BindBlob(2, bytes).Run());
  return CommitLocked(txn);
}

absl::Status SqliteStore::RemoveConfigRow(std::string_view table,
                                          std::string_view what,
                                          std::string_view short_name,
                                          const std::string& name) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(SqliteQuery erase,
                   db_->Prepare(absl::StrCat("DELETE FROM ", ToAbsl(table),
                                             " WHERE name = ?")));
  RETURN_IF_ERROR(erase.Bind(1, name).Run());
  if (db_->Changes() == 0) {
    return absl::NotFoundError(absl::StrCat(
        ToAbsl(what), " \"", name, "\": no such ", ToAbsl(short_name)));
  }
  return CommitLocked(txn);
}

template <typename Proto, typename Record>
absl::StatusOr<std::vector<Record>> SqliteStore::ListConfigRows(
    std::string_view table, Record (*from_proto)(const Proto&)) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare(absl::StrCat("SELECT name, config FROM ",
                                             ToAbsl(table), " ORDER BY name")));
  std::vector<Record> records;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return records;
    Proto proto;
    if (!proto.ParseFromString(query.Blob(1))) {
      return absl::DataLossError(
          absl::StrCat(db_->path(), ": table ", ToAbsl(table), ", row \"",
                       query.Text(0), "\", column config: not a serialized ",
                       proto.GetDescriptor()->name()));
    }
    records.push_back(from_proto(proto));
  }
}

absl::Status SqliteStore::PutVc(const VcRecord& vc) {
  v1::VirtualCluster proto;
  VcToProto(vc, &proto);
  return PutConfigRow("vcs", vc.name, proto.SerializeAsString());
}

absl::Status SqliteStore::RemoveVc(const std::string& name) {
  return RemoveConfigRow("vcs", "virtual cluster", "VC", name);
}

absl::StatusOr<std::vector<VcRecord>> SqliteStore::ListVcs() const {
  return ListConfigRows<v1::VirtualCluster, VcRecord>("vcs", &VcFromProto);
}

absl::Status SqliteStore::PutQos(const QosRecord& qos) {
  v1::Qos proto;
  QosToProto(qos, &proto);
  return PutConfigRow("qos", qos.name, proto.SerializeAsString());
}

absl::Status SqliteStore::RemoveQos(const std::string& name) {
  return RemoveConfigRow("qos", "QOS", "QOS", name);
}

absl::StatusOr<std::vector<QosRecord>> SqliteStore::ListQos() const {
  return ListConfigRows<v1::Qos, QosRecord>("qos", &QosFromProto);
}

absl::Status SqliteStore::PutSetting(const std::string& name,
                                     const std::string& bytes) {
  return PutConfigRow("settings", name, bytes);
}

absl::StatusOr<std::optional<std::string>> SqliteStore::GetSetting(
    const std::string& name) const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT config FROM settings WHERE name = ?"));
  query.Bind(1, name);
  ASSIGN_OR_RETURN(bool row, query.Step());
  if (!row) return std::nullopt;
  return std::optional<std::string>(query.Blob(0));
}

}  // namespace tiresias

// SqliteStore: virtual clusters (schema version 17), one row each, its
// configuration the v1::VirtualCluster's protobuf bytes (so a new field
// needs no migration). Each write is one transaction, durable before it
// returns.
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
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

absl::Status SqliteStore::PutVc(const VcRecord& vc) {
  v1::VirtualCluster proto;
  VcToProto(vc, &proto);
  const std::string bytes = proto.SerializeAsString();
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(
      SqliteQuery upsert,
      db_->Prepare("INSERT INTO vcs (name, config) VALUES (?1, ?2) "
                   "ON CONFLICT (name) DO UPDATE SET config = ?2"));
  RETURN_IF_ERROR(upsert.Bind(1, vc.name).BindBlob(2, bytes).Run());
  return CommitLocked(txn);
}

absl::Status SqliteStore::RemoveVc(const std::string& name) {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteTransaction txn, SqliteTransaction::Begin(*db_));
  ASSIGN_OR_RETURN(SqliteQuery erase,
                   db_->Prepare("DELETE FROM vcs WHERE name = ?"));
  RETURN_IF_ERROR(erase.Bind(1, name).Run());
  if (db_->Changes() == 0) {
    return absl::NotFoundError(
        absl::StrCat("virtual cluster \"", name, "\": no such VC"));
  }
  return CommitLocked(txn);
}

absl::StatusOr<std::vector<VcRecord>> SqliteStore::ListVcs() const {
  MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(SqliteQuery query,
                   db_->Prepare("SELECT name, config FROM vcs ORDER BY name"));
  std::vector<VcRecord> vcs;
  while (true) {
    ASSIGN_OR_RETURN(bool row, query.Step());
    if (!row) return vcs;
    v1::VirtualCluster proto;
    if (!proto.ParseFromString(query.Blob(1))) {
      return absl::DataLossError(
          absl::StrCat(db_->path(), ": table vcs, row \"", query.Text(0),
                       "\", column config: not a serialized VirtualCluster"));
    }
    vcs.push_back(VcFromProto(proto));
  }
}

}  // namespace tiresias

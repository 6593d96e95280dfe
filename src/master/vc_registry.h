// The master's virtual clusters (teams) as admins set them: validation of
// a VC (names, cells, limits, members), the rules between VCs (one default
// per user, quotas that fit the cluster at once), the scheduler's VcSpecs,
// and which VC a submission runs in. No I/O, no locking: MasterState
// holds one under its mutex and stores what it accepts.
//
//   ASSIGN_OR_RETURN(VcSpec spec, registry.CheckSet(vc, /*create=*/true,
//                                                   &registered_topology));
//   RETURN_IF_ERROR(store->PutVc(vc));  // vc as CheckSet normalized it
//   registry.Put(vc, spec);
//   RETURN_IF_ERROR(registry.Resolve(job_spec, who.admin, "spec"));
#ifndef TIRESIAS_MASTER_VC_REGISTRY_H_
#define TIRESIAS_MASTER_VC_REGISTRY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "core/topology.h"
#include "master/job_record.h"
#include "master/vc_record.h"
#include "sched/vcs.h"

namespace tiresias {

// A VC's or QOS's name: 1 to 64 bytes of [A-Za-z0-9_.-], not starting
// with '-' or '.'; InvalidArgument naming `field` ("vc.name") else.
absl::Status CheckRecordName(std::string_view field, const std::string& name);
// Sorts `users` and drops duplicates; each must be a user name (or "*"
// where `star`). InvalidArgument naming `field` ("vc.members").
absl::Status CheckUserList(std::vector<std::string>& users,
                           std::string_view field, bool star);

class VcRegistry {
 public:
  // Validates `vc` and normalizes it in place (quota as CellsText, weight
  // 0 as 1, members and default_for sorted without duplicates): its
  // scheduler spec, or InvalidArgument naming the field ("vc.quota: ...").
  static absl::StatusOr<VcSpec> Check(VcRecord& vc);
  static bool IsMember(const VcRecord& vc, std::string_view user);

  // Adds VCs read from the store; DataLoss naming one that fails Check.
  absl::Status Load(std::vector<VcRecord> stored);
  // Check, then the rules against the other VCs: AlreadyExists (create) or
  // NotFound (change); FailedPrecondition for a user whose default is
  // another VC; InvalidArgument ("vc.quota: ...") when every VC's cells,
  // with this one's, do not fit `registered` at once (null: not checked).
  absl::StatusOr<VcSpec> CheckSet(VcRecord& vc, bool create,
                                  const Topology* registered) const;
  void Put(VcRecord vc, VcSpec spec);
  bool Remove(const std::string& name);  // false if there is none

  bool empty() const { return records_.empty(); }
  bool contains(const std::string& name) const {
    return records_.contains(name);
  }
  const std::map<std::string, VcRecord>& records() const { return records_; }
  int QuotaGpus(const std::string& name) const {
    return specs_.at(name).quota_gpus();
  }

  // The scheduler's VCs, by name, then "" (no cells) for jobs without
  // one; empty without VCs.
  std::vector<VcSpec> SchedulerVcs() const;
  // `vc` if it is a VC here, else "" (a job whose VC went meanwhile).
  std::string SchedulerName(const std::string& vc) const;

  // Sets spec.vc for a submission of spec.user: as named (it must exist,
  // and the user must be a member unless `admin`), else the user's default
  // (default_for), else the only VC the user is a member of; an admin in
  // none gets none (VC "": it only borrows). Without VCs,
  // spec.vc must be empty. InvalidArgument or PermissionDenied, naming
  // `field`.vc and the user's VCs.
  absl::Status Resolve(JobRequest& spec, bool admin,
                       std::string_view field) const;

 private:
  std::map<std::string, VcRecord> records_;
  std::map<std::string, VcSpec> specs_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_VC_REGISTRY_H_

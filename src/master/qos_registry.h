// The master's priority levels (QOS) as admins set them: validation of a
// QOS (name, priority, limit, users, VCs), the scheduler's QosSpecs, and
// whether a submission may use the QOS it names and ask never to be
// preempted. No I/O, no locking: MasterState holds one under its mutex and
// stores what it accepts (master_qos.cc).
//
//   RETURN_IF_ERROR(registry.CheckSet(qos, /*create=*/true));
//   RETURN_IF_ERROR(store->PutQos(qos));  // qos as CheckSet normalized it
//   registry.Put(qos);
//   RETURN_IF_ERROR(registry.Resolve(job_spec, who.admin, check, "spec"));
#ifndef TIRESIAS_MASTER_QOS_REGISTRY_H_
#define TIRESIAS_MASTER_QOS_REGISTRY_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "master/job_record.h"
#include "master/qos_record.h"
#include "sched/scheduler.h"

namespace tiresias {

class QosRegistry {
 public:
  // Validates `qos` and normalizes it in place (users and VCs sorted
  // without duplicates); InvalidArgument naming the field ("qos.priority:
  // ...") else.
  static absl::Status Check(QosRecord& qos);
  // Whether `user` may name `qos` for a job in VC `vc` (admins aside).
  static bool MayUse(const QosRecord& qos, std::string_view user,
                     std::string_view vc);

  // Adds QOS read from the store; DataLoss naming one that fails Check.
  absl::Status Load(std::vector<QosRecord> stored);
  // Check, then AlreadyExists (create) or NotFound (change).
  absl::Status CheckSet(QosRecord& qos, bool create) const;
  void Put(QosRecord qos) { records_[qos.name] = std::move(qos); }
  bool Remove(const std::string& name) { return records_.erase(name) > 0; }
  bool contains(const std::string& name) const {
    return records_.contains(name);
  }
  const std::map<std::string, QosRecord>& records() const { return records_; }
  std::vector<QosSpec> SchedulerQos() const;

  // Checks a submission of spec.user in spec.vc (already resolved): the
  // QOS it names must exist and be one the user may use (unless `admin`)
  // and hold the job (its per-user GPU limit); and a job never preempted
  // (spec.no_preempt) needs `admin`, or `no_preempt_users`, or a QOS that
  // allows it. InvalidArgument (no such QOS) or PermissionDenied, naming
  // `field`.qos or `field`.no_preempt and the QOS the user may use.
  absl::Status Resolve(const JobRequest& spec, bool admin,
                       bool no_preempt_users, std::string_view field) const;

 private:
  // The QOS `user` may use in `vc` ("high, urgent"; "none").
  std::string Usable(std::string_view user, std::string_view vc,
                     bool no_preempt_only) const;
  std::map<std::string, QosRecord> records_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_QOS_REGISTRY_H_

// QosRegistry: see qos_registry.h.
#include "master/qos_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/vc_registry.h"

namespace tiresias {

absl::Status QosRegistry::Check(QosRecord& qos) {
  RETURN_IF_ERROR(CheckRecordName("qos.name", qos.name));
  if (qos.priority < -kMaxQosPriority || qos.priority > kMaxQosPriority) {
    return absl::InvalidArgumentError(
        absl::StrCat("qos.priority: expected -", kMaxQosPriority, " to ",
                     kMaxQosPriority, ", got ", qos.priority));
  }
  if (qos.max_gpus_per_user < -1) {
    return absl::InvalidArgumentError(
        absl::StrCat("qos.max_gpus_per_user: expected a GPU count or -1 (no "
                     "limit), got ",
                     qos.max_gpus_per_user));
  }
  if (qos.description.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "qos.description: at most 256 bytes, got ", qos.description.size()));
  }
  RETURN_IF_ERROR(CheckUserList(qos.users, "qos.users", /*star=*/true));
  if (qos.vcs.size() > 10'000) {
    return absl::InvalidArgumentError(
        absl::StrCat("qos.vcs: at most 10,000 VCs, got ", qos.vcs.size()));
  }
  std::sort(qos.vcs.begin(), qos.vcs.end());
  qos.vcs.erase(std::unique(qos.vcs.begin(), qos.vcs.end()), qos.vcs.end());
  for (const std::string& vc : qos.vcs) {
    RETURN_IF_ERROR(CheckRecordName("qos.vcs", vc));
  }
  return absl::OkStatus();
}

bool QosRegistry::MayUse(const QosRecord& qos, std::string_view user,
                         std::string_view vc) {
  for (const std::string& u : qos.users) {
    if (u == "*" || u == user) return true;
  }
  return !vc.empty() &&
         std::find(qos.vcs.begin(), qos.vcs.end(), vc) != qos.vcs.end();
}

absl::Status QosRegistry::Load(std::vector<QosRecord> stored) {
  for (QosRecord& qos : stored) {
    if (absl::Status valid = Check(qos); !valid.ok()) {
      return absl::DataLossError(
          absl::StrCat("stored QOS \"", qos.name, "\": ", valid.message()));
    }
    Put(std::move(qos));
  }
  return absl::OkStatus();
}

absl::Status QosRegistry::CheckSet(QosRecord& qos, bool create) const {
  RETURN_IF_ERROR(Check(qos));
  const bool exists = records_.contains(qos.name);
  if (create && exists) {
    return absl::AlreadyExistsError(absl::StrCat(
        "QOS \"", qos.name, "\" exists (`tiresias admin qos set` changes it)"));
  }
  if (!create && !exists) {
    return absl::NotFoundError(absl::StrCat(
        "QOS \"", qos.name,
        "\": no such QOS (`tiresias admin qos create` makes one)"));
  }
  return absl::OkStatus();
}

std::vector<QosSpec> QosRegistry::SchedulerQos() const {
  std::vector<QosSpec> specs;
  for (const auto& [name, qos] : records_) {
    specs.push_back(QosSpec{.name = name,
                            .priority = qos.priority,
                            .max_gpus_per_user = qos.max_gpus_per_user < 0
                                                     ? kUnlimited
                                                     : qos.max_gpus_per_user});
  }
  return specs;
}

std::string QosRegistry::Usable(std::string_view user, std::string_view vc,
                                bool no_preempt_only) const {
  std::vector<std::string> names;
  for (const auto& [name, qos] : records_) {
    if (MayUse(qos, user, vc) && (!no_preempt_only || qos.allow_no_preempt)) {
      names.push_back(name);
    }
  }
  return names.empty() ? std::string("none") : absl::StrJoin(names, ", ");
}

absl::Status QosRegistry::Resolve(const JobRequest& spec, bool admin,
                                  bool no_preempt_users,
                                  std::string_view field) const {
  const QosRecord* qos = nullptr;
  if (!spec.qos.empty()) {
    auto it = records_.find(spec.qos);
    if (it == records_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ToAbsl(field), ".qos: no QOS \"", spec.qos, "\" (", spec.user,
          "'s: ", Usable(spec.user, spec.vc, false), "; `tiresias qos list`)"));
    }
    qos = &it->second;
    if (!admin && !MayUse(*qos, spec.user, spec.vc)) {
      return absl::PermissionDeniedError(absl::StrCat(
          ToAbsl(field), ".qos: ", spec.user, " may not use QOS \"", spec.qos,
          "\"", spec.vc.empty() ? "" : absl::StrCat(" in vc ", spec.vc), " (",
          spec.user, "'s: ", Usable(spec.user, spec.vc, false), ")"));
    }
  }
  if (qos != nullptr && qos->max_gpus_per_user >= 0 &&
      spec.num_gpus > qos->max_gpus_per_user) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field), ".qos: the job needs ", spec.num_gpus,
        " GPUs, more than QOS \"", qos->name, "\" lets one user's jobs hold (",
        qos->max_gpus_per_user, "): it could never start"));
  }
  if (!spec.no_preempt || admin || no_preempt_users ||
      (qos != nullptr && qos->allow_no_preempt)) {
    return absl::OkStatus();
  }
  const std::string allowing = Usable(spec.user, spec.vc, true);
  return absl::PermissionDeniedError(absl::StrCat(
      ToAbsl(field), ".no_preempt: ",
      qos == nullptr
          ? std::string("a job never preempted (--no-preempt) needs an "
                        "admin, a QOS that allows it, or a master that lets "
                        "every user (`tiresias master --no-preempt-for "
                        "users`)")
          : absl::StrCat("QOS \"", qos->name, "\" does not allow --no-preempt"),
      allowing == "none"
          ? absl::StrCat("; no QOS allows it for ", spec.user,
                         " (an admin grants it with `tiresias admin qos set "
                         "NAME --allow-no-preempt --add-user ",
                         spec.user, "`)")
          : absl::StrCat("; QOS that allow it for ", spec.user, ": ", allowing,
                         " (submit --qos NAME)")));
}

}  // namespace tiresias

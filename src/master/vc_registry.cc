// VcRegistry: see vc_registry.h.
#include "master/vc_registry.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "security/identity.h"

namespace tiresias {
absl::Status CheckRecordName(std::string_view field, const std::string& name) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(ToAbsl(field), ": ",
                                                   ToAbsl(why), ", got \"",
                                                   absl::CEscape(name), "\""));
  };
  if (name.empty() || name.size() > 64) return bad("expected 1 to 64 bytes");
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '.' && c != '-') {
      return bad("expected letters, digits, '_', '.' and '-'");
    }
  }
  if (name[0] == '-' || name[0] == '.') {
    return bad("must not start with '-' or '.'");
  }
  return absl::OkStatus();
}

absl::Status CheckUserList(std::vector<std::string>& users,
                           std::string_view field, bool star) {
  if (users.size() > 10'000) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field), ": at most 10,000 users, got ", users.size()));
  }
  std::sort(users.begin(), users.end());
  users.erase(std::unique(users.begin(), users.end()), users.end());
  for (const std::string& user : users) {
    if (star && user == "*") continue;
    if (absl::Status valid = security::ValidateUserName(user); !valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(field), ": ", valid.message()));
    }
  }
  return absl::OkStatus();
}

namespace {

bool IsMemberOf(const VcRecord& vc, std::string_view user) {
  for (const std::string& m : vc.members) {
    if (m == "*" || m == user) return true;
  }
  return false;
}

}  // namespace

bool VcRegistry::IsMember(const VcRecord& vc, std::string_view user) {
  return IsMemberOf(vc, user);
}

absl::StatusOr<VcSpec> VcRegistry::Check(VcRecord& vc) {
  RETURN_IF_ERROR(CheckRecordName("vc.name", vc.name));
  VcSpec spec;
  spec.name = vc.name;
  absl::StatusOr<std::vector<int>> cells = ParseCells(vc.quota);
  if (!cells.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("vc.quota: ", cells.status().message()));
  }
  spec.cells = *std::move(cells);
  vc.quota = CellsText(spec.cells);
  if (!std::isfinite(vc.weight) || vc.weight < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vc.weight: expected a positive number (0: 1), got ", vc.weight));
  }
  if (vc.weight == 0) vc.weight = 1;
  spec.weight = vc.weight;
  for (auto [field, limit, out] :
       {std::tuple{"borrow_limit", vc.borrow_limit, &spec.borrow_limit},
        std::tuple{"lend_limit", vc.lend_limit, &spec.lend_limit}}) {
    if (limit < -1) {
      return absl::InvalidArgumentError(
          absl::StrCat("vc.", field,
                       ": expected a GPU count or -1 (no limit), got ", limit));
    }
    *out = limit < 0 ? kUnlimited : limit;
  }
  if (!std::isfinite(vc.fair_quantum) || vc.fair_quantum < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vc.fair_quantum_seconds: expected a positive number of GPU-seconds "
        "(0: ",
        kDefaultFairQuantum, "), got ", vc.fair_quantum));
  }
  spec.fair_per_user = vc.fair_per_user;
  spec.fair_quantum =
      vc.fair_quantum > 0 ? vc.fair_quantum : kDefaultFairQuantum;
  RETURN_IF_ERROR(CheckUserList(vc.members, "vc.members", /*star=*/true));
  RETURN_IF_ERROR(
      CheckUserList(vc.default_for, "vc.default_for", /*star=*/false));
  for (const std::string& user : vc.default_for) {
    if (!IsMember(vc, user)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "vc.default_for: ", user, " is not a member of ", vc.name,
          " (members: ", absl::StrJoin(vc.members, ","), ")"));
    }
  }
  return spec;
}

absl::Status VcRegistry::Load(std::vector<VcRecord> stored) {
  for (VcRecord& vc : stored) {
    absl::StatusOr<VcSpec> spec = Check(vc);
    if (!spec.ok()) {
      return absl::DataLossError(absl::StrCat("stored virtual cluster \"",
                                              vc.name,
                                              "\": ", spec.status().message()));
    }
    Put(std::move(vc), *std::move(spec));
  }
  return absl::OkStatus();
}

absl::StatusOr<VcSpec> VcRegistry::CheckSet(VcRecord& vc, bool create,
                                            const Topology* registered) const {
  ASSIGN_OR_RETURN(VcSpec spec, Check(vc));
  const bool exists = records_.contains(vc.name);
  if (create && exists) {
    return absl::AlreadyExistsError(
        absl::StrCat("virtual cluster \"", vc.name,
                     "\" exists (`tiresias admin vc set` changes it)"));
  }
  if (!create && !exists) {
    return absl::NotFoundError(
        absl::StrCat("virtual cluster \"", vc.name,
                     "\": no such VC (`tiresias admin vc create` makes one)"));
  }
  for (const std::string& user : vc.default_for) {
    for (const auto& [name, other] : records_) {
      if (name != vc.name &&
          std::find(other.default_for.begin(), other.default_for.end(), user) !=
              other.default_for.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("vc.default_for: ", user, "'s default VC is ", name,
                         " (a user has one default VC)"));
      }
    }
  }
  if (registered == nullptr) return spec;
  std::vector<VcSpec> all;
  for (const auto& [name, other] : specs_) {
    if (name != vc.name) all.push_back(other);
  }
  all.push_back(spec);
  if (absl::Status fit = CheckVcsFit(all, *registered); !fit.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "vc.quota: with ", vc.name, " at ", vc.quota,
        ", the quotas do not fit the cluster's ", registered->num_servers(),
        " registered nodes (", registered->total_gpus(),
        " GPUs) at once: ", fit.message()));
  }
  return spec;
}

void VcRegistry::Put(VcRecord vc, VcSpec spec) {
  specs_[vc.name] = std::move(spec);
  records_[vc.name] = std::move(vc);
}

bool VcRegistry::Remove(const std::string& name) {
  specs_.erase(name);
  return records_.erase(name) > 0;
}

std::vector<VcSpec> VcRegistry::SchedulerVcs() const {
  std::vector<VcSpec> vcs;
  if (records_.empty()) return vcs;
  for (const auto& [name, spec] : specs_) vcs.push_back(spec);
  // Jobs without a VC (submitted before there were any) only borrow.
  vcs.push_back(VcSpec{.name = ""});
  return vcs;
}

std::string VcRegistry::SchedulerName(const std::string& vc) const {
  return records_.contains(vc) ? vc : std::string();
}

absl::Status VcRegistry::Resolve(JobRequest& spec, bool admin,
                                 std::string_view field) const {
  if (records_.empty()) {
    if (spec.vc.empty()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field),
        ".vc: this cluster has no virtual clusters; submit without "
        "--vc"));
  }
  std::vector<std::string> mine;
  for (const auto& [name, vc] : records_) {
    if (IsMemberOf(vc, spec.user)) mine.push_back(name);
  }
  const std::string yours =
      mine.empty() ? std::string("none") : absl::StrJoin(mine, ", ");
  if (!spec.vc.empty()) {
    auto it = records_.find(spec.vc);
    if (it == records_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(field), ".vc: no virtual cluster \"", spec.vc,
                       "\" (", spec.user, "'s: ", yours, ")"));
    }
    if (!admin && !IsMemberOf(it->second, spec.user)) {
      return absl::PermissionDeniedError(absl::StrCat(
          ToAbsl(field), ".vc: ", spec.user, " is not a member of \"", spec.vc,
          "\" (", spec.user, "'s: ", yours, ")"));
    }
    return absl::OkStatus();
  }
  for (const auto& [name, vc] : records_) {
    if (std::find(vc.default_for.begin(), vc.default_for.end(), spec.user) !=
        vc.default_for.end()) {
      spec.vc = name;
      return absl::OkStatus();
    }
  }
  if (mine.size() == 1) {
    spec.vc = mine[0];
    return absl::OkStatus();
  }
  if (mine.empty() && admin) return absl::OkStatus();  // VC "": borrows only
  if (mine.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        ToAbsl(field), ".vc: ", spec.user,
        " is in no virtual cluster; an admin adds members with `tiresias "
        "admin vc set NAME --add-member ",
        spec.user, "`"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(ToAbsl(field), ".vc: ", spec.user,
                   " is in several virtual "
                   "clusters (",
                   yours,
                   ") and has no default; name one "
                   "with --vc"));
}

}  // namespace tiresias

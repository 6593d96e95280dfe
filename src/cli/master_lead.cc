// `tiresias master`'s lead of its state dir (master/state_dir_lead.h):
// TakeLead, declared in master_flags.h.
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/master_flags.h"
#include "core/status_macros.h"
#include "master/state_dir_lead.h"

namespace tiresias {

absl::StatusOr<std::shared_ptr<StateDirLead>> TakeLead(
    const std::string& state_dir, bool wait) {
  ASSIGN_OR_RETURN(std::unique_ptr<StateDirLead> lead,
                   StateDirLead::Join(state_dir));
  std::optional<uint64_t> told;  // the epoch last said, 0: none read
  for (;;) {
    ASSIGN_OR_RETURN(bool led, lead->TryLead());
    if (led) break;
    if (!wait) {
      absl::StatusOr<std::optional<StateDirLead::Record>> leader =
          lead->ReadLeader();
      return absl::FailedPreconditionError(absl::StrCat(
          "another master leads it (",
          leader.ok() && *leader ? DescribeLeader(**leader) : "unknown", ")"));
    }
    absl::StatusOr<std::optional<StateDirLead::Record>> leader =
        lead->ReadLeader();
    const uint64_t epoch = leader.ok() && *leader ? (*leader)->epoch : 0;
    if (!told || epoch != *told) {
      std::fprintf(stderr,
                   "tiresias master: standby: another master leads %s (%s); "
                   "taking over when it ends\n",
                   state_dir.c_str(),
                   !leader.ok() ? std::string(leader.status().message()).c_str()
                   : *leader    ? DescribeLeader(**leader).c_str()
                                : "not recorded yet");
      told = epoch;
    }
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

}  // namespace tiresias

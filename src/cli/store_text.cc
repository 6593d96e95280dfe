#include "cli/store_text.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/memory_size.h"

namespace tiresias::cli {

std::string DescribeStore(const v1::StoreHealth& s) {
  if (s.kind() == "sqlite") return absl::StrCat("SQLite in ", s.where());
  if (s.kind() != "etcd") return "";
  std::string out = absl::StrCat(s.where(), " at log entry ", s.log_index());
  if (s.checked() == 0) return out + ", members not asked yet";
  int up = 0;
  std::vector<std::string> members;
  for (const v1::StoreMember& m : s.members()) {
    if (!m.error().empty()) {
      members.push_back(absl::StrCat(m.endpoint(), " DOWN (", m.error(), ")"));
      continue;
    }
    std::vector<std::string> said;
    if (m.in_use()) said.push_back("in use");
    if (m.raft_leader()) {
      said.push_back("raft leader");
    } else if (!m.has_leader()) {
      said.push_back("NO QUORUM");
    }
    said.push_back(absl::StrCat("etcd ", m.version()));
    said.push_back(ByteSizeText(m.db_size()));
    for (const std::string& a : m.alarms()) {
      said.push_back(absl::StrCat("ALARM ", a));
    }
    if (m.has_leader() && m.alarms().empty()) ++up;
    members.push_back(
        absl::StrCat(m.endpoint(), " (", absl::StrJoin(said, ", "), ")"));
  }
  return absl::StrCat(out, ", ", up, " of ", s.members_size(), " member",
                      s.members_size() == 1 ? "" : "s",
                      " up: ", absl::StrJoin(members, "; "));
}

}  // namespace tiresias::cli

#include "cli/store_text.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tiresias::cli {
namespace {

std::string Bytes(int64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  if (n < (int64_t{1} << 20)) return absl::StrFormat("%.0f KiB", n / 1024.0);
  if (n < (int64_t{1} << 30)) {
    return absl::StrFormat("%.1f MiB", n / 1048576.0);
  }
  return absl::StrFormat("%.2f GiB", n / 1073741824.0);
}

}  // namespace

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
    said.push_back(Bytes(m.db_size()));
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

#include "master/master_lead.h"

#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

namespace tiresias {

std::string LeadHostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

std::string EncodeLeaderRecord(const LeaderRecord& r) {
  // One field a line: "name value"; the address last (it may be empty).
  return absl::StrCat("epoch ", r.epoch, "\npid ", r.pid, "\nhost ", r.host,
                      "\nsince ", absl::StrFormat("%.3f", r.since),
                      "\naddress ", r.address, "\n");
}

absl::StatusOr<LeaderRecord> DecodeLeaderRecord(const std::string& path,
                                                const std::string& text,
                                                bool need_epoch) {
  LeaderRecord r;
  bool epoch = false;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    ++line_number;
    const size_t space = line.find(' ');
    const absl::string_view name = line.substr(0, space);
    const absl::string_view value =
        space == absl::string_view::npos ? "" : line.substr(space + 1);
    bool ok = true;
    if (name == "epoch") {
      ok = absl::SimpleAtoi(value, &r.epoch) && (r.epoch > 0 || !need_epoch);
      epoch = ok;
    } else if (name == "pid") {
      ok = absl::SimpleAtoi(value, &r.pid);
    } else if (name == "host") {
      r.host = std::string(value);
    } else if (name == "since") {
      ok = absl::SimpleAtod(value, &r.since);
    } else if (name == "address") {
      r.address = std::string(value);
    }  // other names: a later build's; kept out
    if (!ok) {
      return absl::DataLossError(absl::StrCat(path, ": line ", line_number,
                                              ": ", name, ": cannot read \"",
                                              value, "\""));
    }
  }
  if (!epoch && need_epoch) {
    return absl::DataLossError(absl::StrCat(
        path,
        ": no epoch (a positive integer on a line \"epoch N\"); the "
        "next lead's epoch is unknown, so no master may lead until it "
        "is mended"));
  }
  return r;
}

std::string DescribeLeader(const LeaderRecord& r) {
  const absl::Time since =
      absl::FromUnixMicros(static_cast<int64_t>(r.since * 1e6));
  return absl::StrCat(
      "epoch ", r.epoch, ", pid ", r.pid, " on ", r.host, " since ",
      absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", since, absl::UTCTimeZone()),
      r.address.empty() ? "" : absl::StrCat(", at ", r.address));
}

}  // namespace tiresias

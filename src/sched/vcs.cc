#include "sched/vcs.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/cells.h"
#include "core/to_absl.h"

namespace tiresias {

int VcSpec::quota_gpus() const {
  int total = 0;
  for (int size : cells) total += size;
  return total;
}

absl::StatusOr<std::vector<int>> ParseCells(std::string_view text) {
  std::vector<int> cells;
  if (text.empty()) return cells;
  for (absl::string_view part : absl::StrSplit(ToAbsl(text), ',')) {
    auto bad = [&](std::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat("cells \"", std::string(text), "\": \"",
                       std::string(part), "\": ", std::string(why)));
    };
    int count = 1, size = 0;
    std::vector<absl::string_view> fields = absl::StrSplit(part, 'x');
    if (fields.size() > 2 ||
        (fields.size() == 2 && !absl::SimpleAtoi(fields[0], &count)) ||
        !absl::SimpleAtoi(fields.back(), &size)) {
      return bad("expected COUNTxSIZE, e.g. 2x8");
    }
    if (count < 1 || count > 100000) return bad("expected a count 1..100000");
    if (size < 1 || size > 64 || !std::has_single_bit(unsigned(size))) {
      return bad("expected a size that is a power of two, 1..64");
    }
    cells.insert(cells.end(), count, size);
  }
  std::sort(cells.rbegin(), cells.rend());
  return cells;
}

std::string CellsText(const std::vector<int>& cells) {
  std::map<int, int, std::greater<>> by_size;
  for (int size : cells) ++by_size[size];
  std::vector<std::string> parts;
  for (auto [size, count] : by_size) {
    parts.push_back(absl::StrCat(count, "x", size));
  }
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::vector<VcSpec>> ParseVcs(std::string_view text,
                                             std::string_view source) {
  std::vector<VcSpec> vcs;
  absl::flat_hash_set<std::string> names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(ToAbsl(text), '\n')) {
    ++line_number;
    auto error = [&](std::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(source), ":", line_number, ": ", std::string(what)));
    };
    if (size_t hash = line.find('#'); hash != line.npos) {
      line = line.substr(0, hash);
    }
    std::vector<absl::string_view> tokens =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (tokens.empty()) continue;
    VcSpec vc;
    vc.name = std::string(tokens[0]);
    if (vc.name.find('=') != std::string::npos) {
      return error("expected the VC's name first, then key=value fields");
    }
    if (!names.insert(vc.name).second) {
      return error(absl::StrCat("VC \"", vc.name, "\" is defined twice"));
    }
    bool has_quota = false;
    for (size_t i = 1; i < tokens.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv =
          absl::StrSplit(tokens[i], absl::MaxSplits('=', 1));
      const std::string key(kv.first), value(kv.second);
      auto limit = [&](int* out) -> absl::Status {
        if (value == "all") {
          *out = kUnlimited;
        } else if (!absl::SimpleAtoi(value, out) || *out < 0) {
          return error(absl::StrCat(
              "field ", key, ": expected a GPU count >= 0 or all, got \"",
              value, "\""));
        }
        return absl::OkStatus();
      };
      if (key == "quota") {
        absl::StatusOr<std::vector<int>> cells = ParseCells(value);
        if (!cells.ok()) {
          return error(absl::StrCat("field quota: ", cells.status().message()));
        }
        vc.cells = *std::move(cells);
        has_quota = true;
      } else if (key == "weight") {
        if (!absl::SimpleAtod(value, &vc.weight) || !(vc.weight > 0) ||
            vc.weight > 1e6) {
          return error(absl::StrCat(
              "field weight: expected a number > 0, got \"", value, "\""));
        }
      } else if (key == "fair") {
        if (value != "user" && value != "job") {
          return error(absl::StrCat("field fair: expected user or job, got \"",
                                    value, "\""));
        }
        vc.fair_per_user = value == "user";
      } else if (key == "fair-quantum") {
        if (!absl::SimpleAtod(value, &vc.fair_quantum) ||
            !(vc.fair_quantum > 0) || !std::isfinite(vc.fair_quantum)) {
          return error(absl::StrCat(
              "field fair-quantum: expected GPU-seconds > 0, got \"", value,
              "\""));
        }
      } else if (key == "borrow") {
        if (absl::Status s = limit(&vc.borrow_limit); !s.ok()) return s;
      } else if (key == "lend") {
        if (absl::Status s = limit(&vc.lend_limit); !s.ok()) return s;
      } else {
        return error(absl::StrCat("unknown field \"", key,
                                  "\": expected quota, weight, borrow, lend, "
                                  "fair or fair-quantum"));
      }
    }
    if (!has_quota) return error("field quota is missing (quota=2x8,4x1)");
    vcs.push_back(std::move(vc));
  }
  if (vcs.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": no virtual cluster defined"));
  }
  return vcs;
}

absl::StatusOr<std::vector<VcSpec>> ReadVcFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot read VC file ", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseVcs(text.str(), path);
}

absl::Status CheckVcsFit(const std::vector<VcSpec>& vcs,
                         const Topology& topology) {
  std::vector<int> all;
  int total = 0;
  for (const VcSpec& vc : vcs) {
    all.insert(all.end(), vc.cells.begin(), vc.cells.end());
    total += vc.quota_gpus();
  }
  if (CellPool(topology).CanBindAll(all)) return absl::OkStatus();
  std::sort(all.rbegin(), all.rend());
  return absl::InvalidArgumentError(
      absl::StrCat("the VCs' quotas (", CellsText(all), ": ", total,
                   " GPUs) do not fit the cluster (", topology.Describe(),
                   ") as whole cells at once"));
}

}  // namespace tiresias

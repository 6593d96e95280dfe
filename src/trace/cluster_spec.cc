#include "trace/cluster_spec.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "trace/csv.h"

namespace tiresias {
namespace {

using trace_internal::CsvReader;
using trace_internal::Quote;

constexpr char kTiresiasSpecHeader[] =
    "num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node";
constexpr char kPhillyListHeader[] =
    "machineId, number of GPUs, single GPU mem";

absl::Status TooBig(std::string_view spec, int64_t gpus) {
  return absl::InvalidArgumentError(
      absl::StrCat("spec ", Quote(spec, std::string_view::npos), ": ", gpus,
                   " GPUs, more than the ", kMaxClusterGpus, " allowed"));
}

// True if `spec` has the shape of "NxG" or "RxNxG" (2 or 3 parts of digits
// and signs), whether or not the numbers are valid.
bool LooksLikeShape(std::string_view spec,
                    std::vector<std::string_view>* parts) {
  parts->clear();
  for (size_t start = 0;;) {
    const size_t x = spec.find('x', start);
    parts->push_back(spec.substr(start, x - start));
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (parts->size() != 2 && parts->size() != 3) return false;
  for (std::string_view part : *parts) {
    if (part.empty()) return false;
    for (char c : part) {
      if (!(c >= '0' && c <= '9') && c != '-' && c != '+') return false;
    }
  }
  return true;
}

absl::StatusOr<Topology> FromShape(std::string_view spec,
                                   const std::vector<std::string_view>& parts) {
  std::vector<int> counts;
  int64_t total = 1;
  for (std::string_view part : parts) {
    int count;
    if (!trace_internal::ParseInt(part, &count) || count <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec ", Quote(spec, std::string_view::npos),
          ": expected positive integers in NxG or RxNxG, got ", Quote(part)));
    }
    counts.push_back(count);
    total *= count;
    if (total > kMaxClusterGpus) {
      return TooBig(spec, total);
    }
  }
  if (counts.size() == 2) return Topology::Uniform(1, counts[0], counts[1]);
  return Topology::Uniform(counts[0], counts[1], counts[2]);
}

absl::StatusOr<Topology> ReadTiresiasSpec(CsvReader& csv) {
  constexpr std::string_view kWhat = "Tiresias cluster spec";
  ASSIGN_OR_RETURN(const int racks_col, csv.RequireColumn("num_switch", kWhat));
  ASSIGN_OR_RETURN(const int servers_col,
                   csv.RequireColumn("num_node_p_switch", kWhat));
  ASSIGN_OR_RETURN(const int gpus_col,
                   csv.RequireColumn("num_gpu_p_node", kWhat));
  ASSIGN_OR_RETURN(const bool has_row, csv.Next());
  if (!has_row) return csv.FileError("no data row after the header");
  ASSIGN_OR_RETURN(const int racks, csv.PositiveInt(racks_col));
  ASSIGN_OR_RETURN(const int servers, csv.PositiveInt(servers_col));
  ASSIGN_OR_RETURN(const int gpus, csv.PositiveInt(gpus_col));
  const int64_t total = int64_t{racks} * servers * gpus;
  if (total > kMaxClusterGpus) {
    return csv.LineError(absl::StrCat(total, " GPUs, more than the ",
                                      kMaxClusterGpus, " allowed"));
  }
  ASSIGN_OR_RETURN(const bool another_row, csv.Next());
  if (another_row) {
    return csv.LineError("expected one data row in a cluster spec, got more");
  }
  return Topology::Uniform(racks, servers, gpus);
}

absl::StatusOr<Topology> ReadPhillyMachineList(CsvReader& csv) {
  constexpr std::string_view kWhat = "Philly machine list";
  ASSIGN_OR_RETURN(const int name_col, csv.RequireColumn("machineId", kWhat));
  ASSIGN_OR_RETURN(const int gpus_col,
                   csv.RequireColumn("number of GPUs", kWhat));
  std::vector<ServerSpec> servers;
  absl::flat_hash_map<std::string, int> line_of_name;
  int64_t total = 0;
  while (true) {
    ASSIGN_OR_RETURN(const bool more, csv.Next());
    if (!more) break;
    ASSIGN_OR_RETURN(const std::string_view name, csv.NonEmpty(name_col));
    auto [it, inserted] =
        line_of_name.try_emplace(std::string(name), csv.line_number());
    if (!inserted) {
      return csv.LineError(
          absl::StrCat("column 'machineId': duplicate machine ", Quote(name),
                       ", first on line ", it->second));
    }
    ASSIGN_OR_RETURN(const int gpus, csv.PositiveInt(gpus_col));
    total += gpus;
    if (total > kMaxClusterGpus) {
      return csv.LineError(absl::StrCat(total, " GPUs so far, more than the ",
                                        kMaxClusterGpus, " allowed"));
    }
    servers.push_back(ServerSpec{0, gpus, std::string(name)});
  }
  if (servers.empty()) return csv.FileError("no machines after the header");
  return Topology::Create(std::move(servers));
}

absl::StatusOr<Topology> FromFile(std::string_view spec) {
  const std::string path(spec);
  absl::StatusOr<std::string> text = trace_internal::ReadWholeFile(path);
  if (absl::IsNotFound(text.status())) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec ", Quote(spec, std::string_view::npos),
                     ": expected NxG, RxNxG or a cluster file"));
  }
  if (!text.ok()) return text.status();
  CsvReader csv(path, *text);
  RETURN_IF_ERROR(csv.ReadHeader());
  if (csv.FindColumn("num_switch") >= 0) return ReadTiresiasSpec(csv);
  if (csv.FindColumn("machineId") >= 0) return ReadPhillyMachineList(csv);
  return csv.LineError(
      absl::StrCat("unknown cluster file header ", Quote(csv.header_text()),
                   "; understood: Tiresias spec \"", kTiresiasSpecHeader,
                   "\" or Philly machine list \"", kPhillyListHeader, "\""));
}

}  // namespace

absl::StatusOr<Topology> ParseClusterSpec(std::string_view spec) {
  std::vector<std::string_view> parts;
  if (LooksLikeShape(spec, &parts)) return FromShape(spec, parts);
  return FromFile(spec);
}

}  // namespace tiresias

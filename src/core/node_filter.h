// Which servers may run a job (`submit --gpu-type`, `--constraint`,
// `--nodelist`, `--exclude`): JobSpec::filter. A job with a filter is
// placed by its scheme (or its shape) on the servers that pass it, as if
// the others were not there (PlaceJob in core/shape.h), and its pending
// reason counts only those.
//
// Matching, all case-sensitive except the GPU type:
//   - gpu_type T: the server's GPU model split into words at spaces, '-'
//     and '_' has the word T, or is T whole, case ignored ("a100" and
//     "A100-SXM4-80GB" both match "NVIDIA A100-SXM4-80GB"; "a10" does
//     not). An empty model matches no type.
//   - constraint: Slurm's --constraint without brackets or counts: features
//     joined by '&' (all) and '|' (any), '&' binding tighter ("ib&nvme|big"
//     = (ib and nvme) or big).
//   - nodelist: the server's name is one of these (the job runs on some of
//     them, as many as it needs; Slurm's --nodelist would also make it take
//     all of them). exclude: its name is none of these.
//   - cpus_per_gpu, mem_per_gpu_mib (`--cpus-per-gpu`, `--mem-per-gpu`):
//     each GPU of a server carries an equal slice of its CPUs and memory
//     (Server::cpus / num_gpus, rounded down), and the job's must fit in
//     it. A job thus never takes more of a server than its GPUs' slices,
//     and jobs on one server never overcommit it. A server whose agent
//     told neither (0) takes no job that asks.
#ifndef TIRESIAS_CORE_NODE_FILTER_H_
#define TIRESIAS_CORE_NODE_FILTER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias {

struct Server;

// Limits on what users and agents may give.
inline constexpr size_t kMaxFeatureBytes = 64;
inline constexpr size_t kMaxFeatures = 64;  // per node
inline constexpr size_t kMaxConstraintBytes = 1024;
inline constexpr size_t kMaxGpuTypeBytes = 128;
inline constexpr size_t kMaxGpuModelBytes = 128;
inline constexpr size_t kMaxFilterNodes = 1024;  // nodelist, exclude

// 1 to 64 bytes of [A-Za-z0-9_.:+-].
bool ValidFeature(std::string_view feature);

// A parsed --constraint: any of the groups, each needing all its features.
// Empty: no constraint.
using Constraint = std::vector<std::vector<std::string>>;

// Parses "a&b|c". InvalidArgument naming the offending part and what was
// expected: an empty feature ("a&&b", "|a"), a character outside a
// feature's, or more than kMaxConstraintBytes. "" is no constraint.
absl::StatusOr<Constraint> ParseConstraint(std::string_view text);

// Whether GPU model `model` has the type `type` (see the file comment).
bool GpuTypeMatches(std::string_view model, std::string_view type);

struct NodeFilter {
  std::string gpu_type;               // "": any
  Constraint constraint;              // empty: any
  std::string constraint_text;        // as given, for people
  std::vector<std::string> nodelist;  // empty: any
  std::vector<std::string> exclude;
  int cpus_per_gpu = 0;         // 0: any
  int64_t mem_per_gpu_mib = 0;  // 0: any

  bool empty() const {
    return gpu_type.empty() && constraint.empty() && nodelist.empty() &&
           exclude.empty() && cpus_per_gpu == 0 && mem_per_gpu_mib == 0;
  }
  // Whether `server` may run the job. O(features x constraint + names).
  bool Admits(const Server& server) const;
  // "GPU type a100, features ib&nvme, nodes n1,n2, not n3, 8 CPUs per GPU,
  // 32G memory per GPU": the parts set.
  std::string Describe() const;
  // The same text for equal filters and different texts for different
  // ones (each part length-prefixed: names may hold any separator), to
  // group jobs by filter.
  std::string Key() const;
};

}  // namespace tiresias

#endif  // TIRESIAS_CORE_NODE_FILTER_H_

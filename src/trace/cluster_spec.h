// Turns a user's cluster description into a Topology. A spec is one of
//   "NxG"      N servers of G GPUs each, in one rack        ("64x8")
//   "RxNxG"    R racks of N servers of G GPUs each          ("4x16x8")
//   a path     to a cluster file, either
//     - the Tiresias spec CSV: header
//       num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node
//       and one data row (switches are racks; CPU and memory are ignored), or
//     - the Philly machine list: header
//       "machineId, number of GPUs, single GPU mem", one server per line,
//       all in rack 0, named by machineId (unique, non-empty).
// All counts are positive integers; a cluster has at most
// kMaxClusterGpus GPUs. Errors name the place:
//   spec "64y8": expected NxG, RxNxG or a cluster file
//   data/c.csv:3: column 'number of GPUs': expected a positive integer, got "0"
#ifndef TIRESIAS_TRACE_CLUSTER_SPEC_H_
#define TIRESIAS_TRACE_CLUSTER_SPEC_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "core/topology.h"

namespace tiresias {

// A guard against typos such as "64x80000" that would build a cluster too
// big to simulate.
inline constexpr int kMaxClusterGpus = 1'000'000;

// InvalidArgument for a malformed spec or file; a name that is neither a
// shape nor an existing file gets the "expected NxG, RxNxG or a cluster file"
// error. Reads the file system only when `spec` is not a shape.
absl::StatusOr<Topology> ParseClusterSpec(std::string_view spec);

}  // namespace tiresias

#endif  // TIRESIAS_TRACE_CLUSTER_SPEC_H_

// `submit --gpu-type`, `--constraint/-C`, `--nodelist/-w`, `--exclude/-x`,
// `--cpus-per-gpu`, `--mem-per-gpu`, `--exclusive` (and the job file's
// fields of the same names): which nodes may run a job and what it needs of
// each GPU's slice (core/node_filter.h), checked here so that a bad one is
// refused before anything is sent.
#ifndef TIRESIAS_CLI_NODE_FILTER_FLAGS_H_
#define TIRESIAS_CLI_NODE_FILTER_FLAGS_H_

#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "master/job_record.h"

namespace tiresias::cli {

struct NodeFilterFlags {
  std::string gpu_type;
  std::string constraint;
  std::string nodelist;  // Slurm hostlists, e.g. "gpu[01-04],login"
  std::string exclude;
  std::string cpus_per_gpu;  // a whole number; "": the node's default
  std::string mem_per_gpu;   // Slurm's size (core/memory_size.h)
  bool exclusive = false;    // --exclusive
  // Per-job forms: a CPU-only job's (--gpus 0) CPUs and memory; for a job
  // with GPUs, spread over them (rounded up) as cpus_per_gpu, mem_per_gpu.
  std::string cpus;
  std::string mem;

  bool empty() const {
    return gpu_type.empty() && constraint.empty() && nodelist.empty() &&
           exclude.empty() && cpus_per_gpu.empty() && mem_per_gpu.empty() &&
           !exclusive && cpus.empty() && mem.empty();
  }
};

void AddNodeFilterFlags(CLI::App* cmd, NodeFilterFlags* flags);

// Node names of a Slurm hostlist: comma-separated items, each a name or a
// prefix with one bracketed list of numbers and ranges and a suffix
// ("gpu[1-3,7]" = gpu1 gpu2 gpu3 gpu7; "n[08-10]" keeps the width: n08
// n09 n10). Each name once, in order. InvalidArgument naming `field` for
// an empty item, an unclosed bracket, a bad range, or more than
// kMaxFilterNodes names.
absl::StatusOr<std::vector<std::string>> ExpandHostlist(std::string_view field,
                                                        std::string_view text);

// Sets spec's node filter from `flags` (`names` are the flags' names:
// "--gpu-type", ... or the job file's "gpu_type", ...), and the CPUs and
// memory it needs; call it once spec->num_gpus is set. `cpus` and `mem`
// are a CPU-only job's own (`cpus` required with num_gpus 0), else spread
// over the GPUs, rounded up, as cpus_per_gpu and mem_per_gpu (refused
// beside them). InvalidArgument "FLAG: what was expected" for a value,
// constraint or host list it cannot read.
absl::Status ApplyNodeFilter(const NodeFilterFlags& flags,
                             const NodeFilterFlags& names, JobRequest* spec);

// The flag names, and the job file's field names.
inline const NodeFilterFlags kNodeFilterFlagNames = {
    "--gpu-type", "--constraint",   "--nodelist",
    "--exclude",  "--cpus-per-gpu", "--mem-per-gpu",
    false,        "--cpus",         "--mem"};
inline const NodeFilterFlags kNodeFilterFieldNames = {
    "gpu_type",    "constraint", "nodelist", "exclude", "cpus_per_gpu",
    "mem_per_gpu", false,        "cpus",     "mem"};

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_NODE_FILTER_FLAGS_H_

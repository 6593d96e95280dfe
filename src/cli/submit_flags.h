// The options `tiresias submit` and `tiresias run` share: one job's spec
// from the command line (SubmitFlags, AddJobFlags, SpecFromFlags), and
// submitting it with a request id, retried while the master is unreachable
// (SubmitWithRetry). submit_command.cc.
#ifndef TIRESIAS_CLI_SUBMIT_FLAGS_H_
#define TIRESIAS_CLI_SUBMIT_FLAGS_H_

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/cluster_client.h"
#include "cli/node_filter_flags.h"
#include "master/job_record.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias::cli {

struct SubmitFlags {
  std::string master;
  std::string file;  // --file: the jobs come from there instead
  bool json = false;
  std::optional<int> gpus;
  std::optional<int> nodes;          // --nodes
  std::optional<int> gpus_per_node;  // --gpus-per-node
  int tasks_per_node = 0;            // --tasks-per-node; 0: one per GPU
  std::string name;
  std::string checkpoint_dir;
  std::vector<std::string> env;
  std::string chdir;       // --chdir; empty: the current directory
  std::string output;      // --output pattern; empty: none
  std::string error;       // --error pattern; empty: with stdout
  std::string export_env;  // --export; empty: ALL (with --file: NONE)
  std::vector<std::string> command;
  double retry_for_seconds = 30;
  bool wait = false;   // --wait: until the job ends, exit with its code
  std::string time;    // --time: Slurm's forms (time_limit.h); empty: none
  std::string begin;   // --begin: ParseBeginTime's forms; empty: none
  std::string signal;  // --signal SIG[@SECONDS] (core/warn_signal.h)
  bool no_preempt = false;
  bool hold = false;
  std::string dependency;  // --dependency: Slurm's form (core/dependency.h)
  std::string array;       // --array: Slurm's form (core/job_array.h)
  std::string vc;          // --vc, --account: its virtual cluster
  std::string qos;         // --qos: its priority level
  std::string image;       // --image: an OCI image; empty: none
  std::string notify;      // --notify URL|mailto:ADDRESS; empty: none
  std::vector<std::string> notify_on;  // --notify-on begin,end,...
  cli::NodeFilterFlags filter;  // --gpu-type, --constraint, ...
};

// Adds the options that describe one job (all but submit's --file, --json,
// --wait and --array) to `cmd`, into `f`.
void AddJobFlags(CLI::App* cmd, SubmitFlags* f);

// The spec the flags describe, or a one-line error about a flag.
absl::StatusOr<JobRequest> SpecFromFlags(const SubmitFlags& f,
                                         const ClientCredentials& creds);

// Submits `spec` with a new request id, retrying it while the master is
// unreachable or slow for up to f.retry_for_seconds. The id; else the
// status, with *line saying why for the user.
grpc::Status SubmitWithRetry(MasterClient& client, const SubmitFlags& f,
                             const JobRequest& spec,
                             v1::SubmitJobResponse* resp, std::string* line);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_SUBMIT_FLAGS_H_

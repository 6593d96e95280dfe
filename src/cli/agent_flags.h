// `tiresias agent`'s flags, shared by the command and `tiresias config
// check`.
#ifndef TIRESIAS_CLI_AGENT_FLAGS_H_
#define TIRESIAS_CLI_AGENT_FLAGS_H_

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/agent_daemon.h"

namespace tiresias {

struct AgentFlags {
  std::string master;
  std::optional<int> gpus;
  std::string name;
  std::string address = "127.0.0.1";
  std::string state_dir;
  std::string log_listen;
  double grace_seconds = 30;
  bool keep_tasks = false;
  std::string tls_dir;
  bool insecure = false;
  std::string user_map;
  bool allow_root_tasks = false;
  std::string cgroups = "auto";
  std::string mem_per_gpu;  // Slurm's SIZE: a number of MiB, or K/M/G/T
  std::string memory;       // --memory, the same form
  int cpus_per_gpu = 0;     // 0: an even share; -1: no binding
  int spare_cpus = 0;       // for CPU-only jobs
  std::string spare_mem;    // with them; "": their share
  std::string podman = "podman";
  std::string container_runtime = "crun";
  std::string gpu_device_dir = "/dev";
  std::vector<std::string> image_folders;
  std::vector<std::string> image_allow;
  std::string gpu_model;
  std::vector<std::string> features;
};

// The defaults that come from the environment: --master from
// $TIRESIAS_MASTER, --state-dir under $HOME.
AgentFlags DefaultAgentFlags();

// Registers every flag of `tiresias agent` on `cmd`, writing into *flags.
void AddAgentFlags(CLI::App* cmd, AgentFlags* flags);

// The agent's options, every value checked: InvalidArgument whose message
// starts with the flag (--memory: ...). The TLS files are not read here
// (options.tls stays unset): the command loads --tls-dir.
absl::StatusOr<AgentOptions> ToAgentOptions(const AgentFlags& f);

}  // namespace tiresias

#endif  // TIRESIAS_CLI_AGENT_FLAGS_H_

#include "cli/agent_flags.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "core/memory_size.h"
#include "core/node_filter.h"

namespace tiresias {
namespace {

// --feature's labels, each once, in the order given; InvalidArgument for
// one a job's --constraint could not name.
absl::StatusOr<std::vector<std::string>> CheckFeatures(
    const std::vector<std::string>& given) {
  std::vector<std::string> out;
  for (const std::string& f : given) {
    if (!ValidFeature(f)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--feature \"", f, "\": expected 1 to ", kMaxFeatureBytes,
          " bytes of letters, digits and _.:+-"));
    }
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  if (out.size() > kMaxFeatures) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--feature: at most ", kMaxFeatures, " features, got ", out.size()));
  }
  return out;
}

std::string DefaultMaster() {
  const char* env = std::getenv("TIRESIAS_MASTER");
  return env != nullptr && *env != '\0' ? env : "127.0.0.1:50051";
}

std::string DefaultStateDir() {
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr && *home != '\0' ? home : "/tmp") +
         "/.tiresias/agent";
}

}  // namespace

AgentFlags DefaultAgentFlags() {
  AgentFlags f;
  f.master = DefaultMaster();
  f.state_dir = DefaultStateDir();
  return f;
}

void AddAgentFlags(CLI::App* cmd, AgentFlags* flags) {
  AgentFlags& f = *flags;
  cmd->add_option("--master", f.master,
                  "Master host:port, or every master of one state dir "
                  "comma-separated (the agent follows the one leading; "
                  "default $TIRESIAS_MASTER, else 127.0.0.1:50051)")
      ->capture_default_str();
  cmd->add_option("--gpus", f.gpus,
                  "Emulate N GPUs instead of discovering them; 0 (with "
                  "--spare-cpus): a node for CPU-only jobs alone, as is one "
                  "where none is found and --spare-cpus is given")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--name", f.name, "Node name (default: hostname)");
  cmd->add_option("--address", f.address,
                  "Host other nodes' job processes reach this one at")
      ->capture_default_str();
  cmd->add_option("--state-dir", f.state_dir,
                  "Task record and job logs (logs/job-ID-attempt-A-rank-R.log)")
      ->capture_default_str();
  cmd->add_option("--log-listen", f.log_listen,
                  "host:port where the master reads task logs from this agent "
                  "(default: the --address host, a free port)");
  cmd->add_option("--grace", f.grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when stopping a task. "
                  "The agent's lease is the master's --node-timeout minus "
                  "this minus 1 s: if it cannot reach the master for that "
                  "long, its tasks are stopped before the master reruns "
                  "them elsewhere")
      ->capture_default_str();
  cmd->add_option("--tls-dir", f.tls_dir,
                  "TLS: a folder with ca.pem, agent.pem and agent-key.pem "
                  "(`tiresias admin agent-cert issue NODE`); the "
                  "certificate's node name must be --name");
  cmd->add_flag("--insecure", f.insecure,
                "No TLS: for a master started with --insecure");
  cmd->add_flag("--keep-tasks", f.keep_tasks,
                "On SIGINT/SIGTERM leave the tasks running for the next "
                "agent on this state dir (an upgrade), instead of handing "
                "the jobs back; they are stopped if no agent renews their "
                "lease in time");
  cmd->add_option("--user-map", f.user_map,
                  "File mapping job owners to Unix accounts, one 'OWNER "
                  "ACCOUNT' pair a line ('#' comments; OWNER '*' for every "
                  "owner not listed, e.g. '* nobody'). Without it, or for an "
                  "owner it does not list, a task runs as the account named "
                  "like its owner. Read at start; a malformed line stops the "
                  "agent. Used only when the agent runs as root");
  cmd->add_flag("--allow-root-tasks", f.allow_root_tasks,
                "Run tasks whose account is root (uid 0). Without it such a "
                "task fails to start (exit code 127, the reason in its log), "
                "as does one whose owner is empty or has no account");
  cmd->add_option("--cgroups", f.cgroups,
                  "Run each task in cgroups of its own, under tiresias/NODE "
                  "(v1: memory, cpuset, pids, devices, cpuacct; v2: one "
                  "group, GPU devices denied by an eBPF program): the "
                  "node's GPUs a task was not given are denied to it, a "
                  "kill at a memory limit is reported as out of memory, and "
                  "what a task leaves behind is killed. auto: when the agent "
                  "can (root, a hierarchy mounted; v2 where it is the only "
                  "one, else v1), else it says why and runs without; on: "
                  "the same, but refuse to start without; v1, v2: that "
                  "one; off: never")
      ->check(CLI::IsMember({"auto", "on", "off", "v1", "v2"}))
      ->default_val("auto");
  cmd->add_option("--mem-per-gpu", f.mem_per_gpu,
                  "With cgroups: each task's memory limit per GPU it was "
                  "given (one GPU's worth without), as Slurm's SIZE: 16G, "
                  "512M, or a number of MiB, for jobs that do not give their "
                  "own (submit --mem-per-gpu). A task past it is killed by "
                  "the kernel and its job's event says out of memory. "
                  "Default: an equal share per GPU of --memory (or of the "
                  "machine's), so that no job takes memory the master "
                  "promised another");
  cmd->add_option("--memory", f.memory,
                  "Memory this node's GPUs share out to jobs, told to the "
                  "master (Slurm's RealMemory; same form as --mem-per-gpu): "
                  "a job with submit --mem-per-gpu M goes only where this "
                  "over the GPUs is at least M. Default: the machine's");
  cmd->add_option("--cpus-per-gpu", f.cpus_per_gpu,
                  "With cgroups: bind each task to this many CPUs per GPU it "
                  "was given, a block of its own per GPU of the CPUs the "
                  "agent may use (GPU 0 the first block, ...), so jobs on "
                  "different GPUs never share a CPU. Default 0: an even "
                  "share (the agent's CPUs / its GPUs); -1: no binding. A job "
                  "with submit --cpus-per-gpu N gets the first N of each of "
                  "its GPUs' blocks, and goes only where a block holds N")
      ->check(CLI::Range(-1, 1024))
      ->default_val(0);
  cmd->add_option("--spare-cpus", f.spare_cpus,
                  "Keep this many of the agent's CPUs (its last ones) out "
                  "of the GPUs' blocks, for CPU-only jobs (submit --gpus 0 "
                  "--cpus N): told to the master as the node's spare CPUs; "
                  "with cgroups each such job is bound to as many of them "
                  "as it asked. Default 0: the node takes no CPU-only job. "
                  "Without GPUs (--gpus 0) it may be every CPU")
      ->check(CLI::Range(0, 65536))
      ->default_val(0);
  cmd->add_option("--spare-mem", f.spare_mem,
                  "Memory kept with --spare-cpus for CPU-only jobs, out of "
                  "what the GPUs share (same form as --mem-per-gpu). "
                  "Default: the spare CPUs' share of the memory by CPU count");
  cmd->add_option("--podman", f.podman,
                  "podman, whose store (as root) the images of container "
                  "jobs (submit --image) come from: a path, or a name in "
                  "PATH")
      ->default_val("podman");
  cmd->add_option("--container-runtime", f.container_runtime,
                  "The OCI runtime that runs container jobs as their "
                  "owners (rootless, in a user namespace of their own ids): "
                  "crun, a path or a name in PATH")
      ->default_val("crun");
  cmd->add_option("--image-allow", f.image_allow,
                  "Jobs may name only images of podman's store whose name "
                  "starts with this (localhost/lab/); repeatable. Default: "
                  "any image in the store");
  cmd->add_option("--image-folder", f.image_folders,
                  "A folder below which jobs may name a root file system "
                  "folder as their image (submit --image /srv/images/torch); "
                  "repeatable. Default none: only images in podman's store. "
                  "The agent makes mount points in those file systems, as "
                  "root: give only folders of images")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--gpu-device-dir", f.gpu_device_dir,
                  "Where the GPUs' device nodes are (nvidia0, nvidiactl, "
                  "...): a container job sees its own GPUs' there")
      ->default_val("/dev");
  cmd->add_option("--gpu-model", f.gpu_model,
                  "The model of this node's GPUs as told to the master, "
                  "which jobs' --gpu-type is matched against (a word of it, "
                  "case ignored: 'a100' matches 'NVIDIA A100-SXM4-80GB'). "
                  "Default: the name NVML or nvidia-smi gives GPU 0 "
                  "('Emulated GPU' with --gpus N)");
  cmd->add_option("--feature", f.features,
                  "A label of this node for jobs' --constraint (e.g. ib, "
                  "nvme): repeat it or give a comma list; 1 to 64 bytes of "
                  "letters, digits and _.:+- each")
      ->delimiter(',');
}

absl::StatusOr<AgentOptions> ToAgentOptions(const AgentFlags& f) {
  AgentOptions options;
  if (f.grace_seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grace: expected >= 0 seconds, got ", f.grace_seconds));
  }
  if (f.tls_dir.empty() == !f.insecure) {
    return absl::InvalidArgumentError(
        f.insecure ? "--tls-dir and --insecure: give only one"
                   : "no TLS: give --tls-dir DIR (ca.pem, agent.pem, "
                     "agent-key.pem from `tiresias admin agent-cert issue "
                     "NODE`) or --insecure to talk to a master started with "
                     "--insecure");
  }
  options.master_address = f.master;
  options.node_name = f.name;
  options.advertised_address = f.address;
  options.emulate_gpus = f.gpus;
  options.state_dir = f.state_dir;
  options.log_listen = f.log_listen;
  options.grace =
      std::chrono::milliseconds(static_cast<int64_t>(f.grace_seconds * 1000));
  options.user_map_file = f.user_map;
  options.allow_root_tasks = f.allow_root_tasks;
  options.podman = f.podman;
  options.container_runtime = f.container_runtime;
  options.gpu_device_dir = f.gpu_device_dir;
  options.image_folders = f.image_folders;
  options.image_allow = f.image_allow;
  if (!f.mem_per_gpu.empty()) {
    absl::StatusOr<int64_t> bytes =
        ParseMemorySize("--mem-per-gpu", f.mem_per_gpu);
    if (!bytes.ok()) return bytes.status();
    options.memory_per_gpu_bytes = *bytes;
  }
  if (!f.memory.empty()) {
    absl::StatusOr<int64_t> bytes = ParseMemorySize("--memory", f.memory);
    if (!bytes.ok()) return bytes.status();
    // The master's bounds (agent_reports.h: 1 MiB to 2^40 MiB).
    if (*bytes < (int64_t{1} << 20) || (*bytes >> 20) > (int64_t{1} << 40)) {
      return absl::InvalidArgumentError("--memory: expected 1M to 1048576T");
    }
    options.memory_mib = *bytes >> 20;
  }
  options.cpus_per_gpu = f.cpus_per_gpu;
  options.spare_cpus = f.spare_cpus;
  if (!f.spare_mem.empty()) {
    absl::StatusOr<int64_t> bytes = ParseMemorySize("--spare-mem", f.spare_mem);
    if (!bytes.ok()) return bytes.status();
    options.spare_memory_bytes = *bytes;
  }
  if (f.gpu_model.size() > kMaxGpuModelBytes ||
      std::any_of(f.gpu_model.begin(), f.gpu_model.end(),
                  [](char c) { return c < 0x20 || c > 0x7e; })) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpu-model: expected at most ", kMaxGpuModelBytes,
                     " bytes of printable ASCII"));
  }
  options.gpu_model = f.gpu_model;
  absl::StatusOr<std::vector<std::string>> features = CheckFeatures(f.features);
  if (!features.ok()) return features.status();
  options.features = *std::move(features);
  options.cgroups = f.cgroups == "on"    ? AgentOptions::Cgroups::kOn
                    : f.cgroups == "off" ? AgentOptions::Cgroups::kOff
                    : f.cgroups == "v1"  ? AgentOptions::Cgroups::kV1
                    : f.cgroups == "v2"  ? AgentOptions::Cgroups::kV2
                                         : AgentOptions::Cgroups::kAuto;
  return options;
}

}  // namespace tiresias

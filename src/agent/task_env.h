// The environment and command of a task process, computed before fork so
// that the child only has to exec. Pure except ResolveCommand, which looks
// at the file system.
#ifndef TIRESIAS_AGENT_TASK_ENV_H_
#define TIRESIAS_AGENT_TASK_ENV_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/launcher.h"
#include "agent/run_as.h"

namespace tiresias {

// InvalidArgument naming the first bad field of `spec`.
absl::Status ValidateTaskSpec(const TaskSpec& spec);

// TF_CONFIG for the task's process `process`: {"cluster":{"worker":[...]},
// "task":{"type":"worker","index":RANK}}, the worker list being
// spec.worker_addrs, or, when that is empty, "master_addr:(master_port + 1
// + r)" for each rank r (one above MASTER_PORT, which PyTorch's rendezvous
// takes).
std::string TfConfigJson(const TaskSpec& spec, int process = 0);

// Host names as Slurm writes a node list (SLURM_JOB_NODELIST), sorted,
// each run of numbered names under one prefix as ranges:
// {"gpu2", "gpu1", "gpu3", "login"} is "gpu[1-3],login"; zero-padded
// numbers keep their width ("n[01-02]"). What Slurm's `scontrol show
// hostnames` expands back.
std::string SlurmHostlist(std::vector<std::string> names);

// PATH of a task unless the submitter exports one.
inline constexpr std::string_view kDefaultTaskPath =
    "/usr/local/bin:/usr/bin:/bin";

// The whole environment of a task ("K=V" entries), made for `account`, the
// account it runs as (its owner's, or the agent's own for an agent that
// does not run as root). Never anything of the agent's own environment:
// a root agent started from an admin's shell once handed that shell's
// TIRESIAS_TOKEN (the admin's token), cloud keys, PWD and the like to every
// user's job (issue 21). Later layers override earlier ones:
//   1. what a login gives: PATH=kDefaultTaskPath, TMPDIR=/tmp, and from
//      the account's passwd entry HOME, USER, LOGNAME (its name) and SHELL
//      (each left out when empty: an agent's uid without an entry); and
//      CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers GPUs as NVML does;
//   2. spec.env: what the submitter exported (`submit --export`) and set
//      (--env), which may replace any of the above;
//   3. what the agent owns, which spec.env cannot override:
//      CUDA_VISIBLE_DEVICES (spec.gpus joined by ','; empty hides all GPUs;
//      the same for every process of the task), MASTER_ADDR, MASTER_PORT;
//      torchrun's RANK (first_process + process), LOCAL_RANK (local_rank +
//      process), WORLD_SIZE (total_processes), LOCAL_WORLD_SIZE
//      (processes), GROUP_RANK (rank: the node's), GROUP_WORLD_SIZE
//      (world_size), ROLE_RANK, ROLE_WORLD_SIZE; TF_CONFIG; Slurm's
//      SLURM_JOB_ID (and SLURM_JOBID), SLURM_PROCID (RANK), SLURM_LOCALID
//      (LOCAL_RANK), SLURM_NTASKS (and SLURM_NPROCS), SLURM_NTASKS_PER_NODE,
//      SLURM_NODEID (GROUP_RANK), SLURM_NNODES (and SLURM_JOB_NUM_NODES),
//      SLURM_JOB_NODELIST (and SLURM_NODELIST; if spec.node_names),
//      SLURMD_NODENAME (if spec.node_name), SLURM_GPUS_ON_NODE,
//      SLURM_JOB_GPUS and SLURM_STEP_GPUS (spec.gpus), SLURM_RESTART_COUNT,
//      SLURM_SUBMIT_DIR (if spec.working_dir), SLURM_JOB_USER (the
//      account's name); TIRESIAS_JOB_ID, TIRESIAS_ATTEMPT,
//      TIRESIAS_CHECKPOINT_DIR, TIRESIAS_RESTART_COUNT, TIRESIAS_NODE_NAME
//      (if spec.node_name), and for a job of an array (array_job_id > 0)
//      TIRESIAS_ARRAY_JOB_ID, _TASK_ID, _TASK_COUNT, _TASK_MIN and
//      _TASK_MAX, with their SLURM_ARRAY_* twins.
// For the task's process `process` (0 .. spec.processes - 1). Sorted by
// name. `spec` must be valid.
std::vector<std::string> BuildTaskEnvironment(const TaskSpec& spec,
                                              const TaskAccount& account,
                                              int process = 0);

// The value of `name` in "K=V" entries; empty if absent.
std::string_view FindEnv(const std::vector<std::string>& env,
                         std::string_view name);

// The file execve should run for `command`, as execvp would find it: a
// command holding '/' is returned as is (exec, after the chdir, resolves a
// relative one against `working_dir`); a bare name is searched in `path_var`
// (':'-separated; empty: kDefaultTaskPath). NotFound
// naming the command and the PATH searched when no executable file matches;
// relative PATH entries are taken relative to `working_dir` (if set).
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           std::string_view path_var,
                                           const std::string& working_dir);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_TASK_ENV_H_

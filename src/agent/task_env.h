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

// TF_CONFIG for `spec`: {"cluster":{"worker":[...]},"task":{"type":"worker",
// "index":RANK}}, the worker list being spec.worker_addrs, or, when that is
// empty, "master_addr:(master_port + 1 + r)" for each rank r (one above
// MASTER_PORT, which PyTorch's rendezvous takes).
std::string TfConfigJson(const TaskSpec& spec);

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
//      CUDA_VISIBLE_DEVICES (spec.gpus joined by ','; empty hides all GPUs),
//      MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, TF_CONFIG,
//      TIRESIAS_JOB_ID, TIRESIAS_ATTEMPT, TIRESIAS_CHECKPOINT_DIR,
//      TIRESIAS_RESTART_COUNT, TIRESIAS_NODE_NAME (if spec.node_name), and
//      for a job of an array (array_job_id > 0) TIRESIAS_ARRAY_JOB_ID,
//      _TASK_ID, _TASK_COUNT, _TASK_MIN and _TASK_MAX.
// Sorted by name. `spec` must be valid.
std::vector<std::string> BuildTaskEnvironment(const TaskSpec& spec,
                                              const TaskAccount& account);

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

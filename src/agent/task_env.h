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

namespace tiresias {

// InvalidArgument naming the first bad field of `spec`.
absl::Status ValidateTaskSpec(const TaskSpec& spec);

// TF_CONFIG for `spec`: {"cluster":{"worker":[...]},"task":{"type":"worker",
// "index":RANK}}, the worker list being spec.worker_addrs, or, when that is
// empty, "master_addr:(master_port + 1 + r)" for each rank r (one above
// MASTER_PORT, which PyTorch's rendezvous takes).
std::string TfConfigJson(const TaskSpec& spec);

// "K=V" entries, later layers overriding earlier ones:
//   1. `base_env` (the agent's environment);
//   2. CUDA_DEVICE_ORDER=PCI_BUS_ID, so CUDA numbers GPUs as NVML does, and,
//      when the task runs as `account` (not null), USER and LOGNAME (its
//      name) and HOME (its home), in place of the agent's;
//   3. spec.env;
//   4. what the agent owns, which spec.env cannot override:
//      CUDA_VISIBLE_DEVICES (spec.gpus joined by ','; empty hides all GPUs),
//      MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK, TF_CONFIG,
//      TIRESIAS_JOB_ID, TIRESIAS_ATTEMPT, TIRESIAS_CHECKPOINT_DIR,
//      TIRESIAS_RESTART_COUNT, and for a job of an array (array_job_id >
//      0) TIRESIAS_ARRAY_JOB_ID, _TASK_ID, _TASK_COUNT, _TASK_MIN and
//      _TASK_MAX.
// Sorted by name. `spec` must be valid.
std::vector<std::string> BuildTaskEnvironment(
    const std::vector<std::string>& base_env, const TaskSpec& spec,
    const TaskAccount* account = nullptr);

// The value of `name` in "K=V" entries; empty if absent.
std::string_view FindEnv(const std::vector<std::string>& env,
                         std::string_view name);

// The file execve should run for `command`, as execvp would find it: a
// command holding '/' is returned as is (exec, after the chdir, resolves a
// relative one against `working_dir`); a bare name is searched in `path_var`
// (':'-separated; empty: the default "/usr/local/bin:/usr/bin:/bin"). NotFound
// naming the command and the PATH searched when no executable file matches;
// relative PATH entries are taken relative to `working_dir` (if set).
absl::StatusOr<std::string> ResolveCommand(const std::string& command,
                                           std::string_view path_var,
                                           const std::string& working_dir);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_TASK_ENV_H_

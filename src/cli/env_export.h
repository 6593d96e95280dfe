// `tiresias submit --export`: which of the caller's environment variables
// a job takes along (JobSpec.env), with Slurm's sbatch spelling:
//
//   ALL             every variable (the default), less the deny-list below
//   NONE            none
//   A,B=v,...       only A (when set) and B=v; "ALL,B=v": everything and B=v
//
// The deny-list is what must come from the node, or would be wrong there,
// or must never leave the caller's machine:
//   - set by the agent for every task, which would win anyway (task_env.h):
//     CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, MASTER_ADDR, MASTER_PORT,
//     WORLD_SIZE, RANK, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK,
//     GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, TF_CONFIG, USER,
//     LOGNAME, HOME (the
//     task's account's), and every TIRESIAS_* variable (the agent's task
//     variables, and the client's own settings and credentials:
//     TIRESIAS_TOKEN, TIRESIAS_TOKEN_FILE, TIRESIAS_CA, TIRESIAS_MASTER);
//     refused even when named;
//   - about the caller's machine or session, left out of ALL but taken when
//     named: NVIDIA_VISIBLE_DEVICES, HOSTNAME, PWD, OLDPWD, SHLVL, _,
//     DISPLAY, XAUTHORITY, SSH_* (SSH_AUTH_SOCK, SSH_CONNECTION, ...),
//     XDG_RUNTIME_DIR, XDG_SESSION_*, DBUS_SESSION_BUS_ADDRESS, TMUX,
//     TMUX_PANE, TERMCAP, and SLURM_* and SLURMD_* (a Slurm allocation the
//     caller runs in; the agent sets the job's own).
// ALL also leaves out what the master would refuse rather than failing the
// submission over it: names that are not [A-Za-z_][A-Za-z0-9_]* (bash's
// exported functions, BASH_FUNC_f%%) and values that are not UTF-8.
//
// What is captured is stored with the job and shown to its owner and the
// admins (`tiresias job`): keep secrets out with NONE or a list of names.
// Pure: the environment comes in as an argument.
#ifndef TIRESIAS_CLI_ENV_EXPORT_H_
#define TIRESIAS_CLI_ENV_EXPORT_H_

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tiresias::cli {

// Most bytes of names and values --export may capture: half of what the
// master takes for a job's whole environment (job_limits::kMaxEnvBytes), so
// that --env has room.
inline constexpr size_t kMaxExportedEnvBytes = 64 * 1024;

// The variables `flag` (the --export value) takes from `environ` ("K=V"
// entries, as in `extern char** environ`; a later entry of a name wins).
// InvalidArgument naming --export and what was expected for a malformed
// flag, a named variable on the deny-list, a value over the master's limit
// for one variable, or more than kMaxExportedEnvBytes (or the master's
// variable count) in all; the last two say which variables are the
// largest.
absl::StatusOr<std::map<std::string, std::string>> CaptureEnvironment(
    std::string_view flag, const std::vector<std::string>& environ);

// Whether ALL leaves `name` out (either part of the deny-list).
bool LeftOutOfExport(std::string_view name);

}  // namespace tiresias::cli

#endif  // TIRESIAS_CLI_ENV_EXPORT_H_

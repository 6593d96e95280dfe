// How PosixLauncher runs a task in a container (container.h): the
// bundles it writes for a TaskSpec with image_rootfs, and where.
#ifndef TIRESIAS_AGENT_LAUNCHER_CONTAINER_H_
#define TIRESIAS_AGENT_LAUNCHER_CONTAINER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "agent/launcher.h"
#include "agent/run_as.h"
#include "agent/spawn.h"

namespace tiresias {

// The bundle folder of task (job_id, attempt, rank) under
// options.container_dir, named as its cgroups are (TaskCgroupName).
std::string ContainerBundleDir(const PosixLauncherOptions& options,
                               int64_t job_id, int attempt, int rank);

// Makes `request` (the task's, its envs and checkpoint_dir set) run each
// process of `spec` in a container of spec.image_rootfs: its bundles
// written (WriteContainerBundles), the runtime as the program, one argv
// per process, a bare environment for the runtime itself, the terminal
// left to the container. `as`: the account it runs as (null: the
// agent's). FailedPrecondition without options.container_dir, a runtime
// or the container init.
absl::Status UseContainer(const PosixLauncherOptions& options,
                          const TaskSpec& spec, const TaskAccount* as,
                          SpawnRequest& request);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_LAUNCHER_CONTAINER_H_

// The launcher's side of container tasks (launcher_container.h).
#include "agent/launcher_container.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/cgroups.h"
#include "agent/container.h"
#include "agent/task_env.h"
#include "core/installed_file.h"
#include "core/status_macros.h"

namespace tiresias {

std::string ContainerBundleDir(const PosixLauncherOptions& options,
                               int64_t job_id, int attempt, int rank) {
  return absl::StrCat(options.container_dir, "/",
                      TaskCgroupName(job_id, attempt, rank));
}

namespace {

// The device minors of GPUs `given` (indexes), `node_minors[i]` being
// node_gpus[i]'s (the index where it is short), as DeniedGpuMinors reads
// them.
std::vector<int> GivenGpuMinors(const std::vector<int>& node_gpus,
                                const std::vector<int>& node_minors,
                                const std::vector<int>& given) {
  std::vector<int> minors;
  for (int gpu : given) {
    int minor = gpu;
    for (size_t i = 0; i < node_gpus.size() && i < node_minors.size(); ++i) {
      if (node_gpus[i] == gpu) minor = node_minors[i];
    }
    minors.push_back(minor);
  }
  return minors;
}

}  // namespace

// Makes `request` run each process of `spec` in a container of
// spec.image_rootfs (container.h): its bundles written, the runtime as the
// program, one argv per process.
absl::Status UseContainer(const PosixLauncherOptions& options,
                          const TaskSpec& spec, const TaskAccount* as,
                          SpawnRequest& request) {
  if (options.container_dir.empty()) {
    return absl::FailedPreconditionError(
        "this agent runs no container (no folder for their bundles)");
  }
  ContainerTask task;
  if (options.container_init.empty()) {
    ASSIGN_OR_RETURN(task.init,
                     FindInstalledFile("tiresias-container-init", "agent",
                                       "TIRESIAS_CONTAINER_INIT"));
  } else {
    task.init = options.container_init;
  }
  const char* agent_path = std::getenv("PATH");
  absl::StatusOr<std::string> runtime = ResolveCommand(
      options.container_runtime, agent_path != nullptr ? agent_path : "", "");
  if (!runtime.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("the container runtime: ", runtime.status().message(),
                     " (install crun on the node)"));
  }
  request.path = task.runtime = *runtime;
  task.rootfs = spec.image_rootfs;
  task.bundle_dir =
      ContainerBundleDir(options, spec.job_id, spec.attempt, spec.rank);
  task.id = absl::StrCat("tiresias-",
                         TaskCgroupName(spec.job_id, spec.attempt, spec.rank));
  task.uid = as != nullptr ? as->ids.uid : getuid();
  task.gid = as != nullptr ? as->ids.gid : getgid();
  task.working_dir = spec.working_dir;
  task.checkpoint_dir = request.checkpoint_dir;
  if (as != nullptr && std::filesystem::is_directory(as->home)) {
    task.home = as->home;
  }
  task.devices = ContainerDevices(
      options.gpu_device_dir,
      GivenGpuMinors(options.node_gpus, options.node_gpu_minors, spec.gpus));
  // The terminal is the container's: crun starts its process in a session
  // of its own, where the container init takes it (container.h).
  task.files = spec.container_files;
  task.tty = request.controlling_tty;
  request.controlling_tty = false;
  std::error_code ec;
  std::filesystem::create_directories(options.container_dir, ec);
  ::chmod(options.container_dir.c_str(), 0711);
  ASSIGN_OR_RETURN(request.argvs,
                   WriteContainerBundles(task, spec.argv, request.envs));
  request.argv = request.argvs.front();
  // The job's environment is in the bundles, for the container; crun
  // itself gets none of it (an LD_PRELOAD meant for the image, the
  // profiler's, would load into crun on the host).
  for (std::vector<std::string>& env : request.envs) {
    env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"};
  }
  return absl::OkStatus();
}

}  // namespace tiresias

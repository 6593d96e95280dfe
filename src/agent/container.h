// A task in an OCI container (JobSpec.image, `submit --image`).
//
// The agent runs each process of such a task through crun (an OCI
// runtime, Debian's package) as the task's own account, never as root:
// the shim's child becomes the account as for any task (spawn.h) and
// execs `crun run` on a bundle the agent wrote for it. crun makes a user
// namespace that maps the account's uid and gid to themselves (nothing
// else: no subordinate ids, no root inside) and a mount namespace in
// which the image's root file system (image_store.h) is the root, read
// only, with
//   /proc, /sys (read only), /dev/pts and /dev/shm  the host's, bound;
//   /dev, /tmp                                      small private tmpfs;
//   /etc/hosts, /etc/resolv.conf                     the host's, read only;
//   the working dir, checkpoint dir and home         bound at their own
//                                                    paths, read-write;
//   the task's GPUs' device nodes (and nvidiactl,    bound at /dev/<name>;
//   nvidia-uvm, ... where the node has them)         no other GPU's node.
// Processes, network, IPC and host name are the host's, as for a task
// without an image: NCCL, MASTER_ADDR and port-forward work unchanged.
// The container process stays in the task's cgroups (crun runs with
// --cgroup-manager=disabled), so its limits and device filter hold, and
// it has no capability and no_new_privs (setuid files in the image give
// nothing).
//
// crun starts the container's process in a session of its own, outside
// the shim's process group. So its first program is
// tiresias-container-init (container_init.cc; static, bound at
// /dev/tiresias-init): it dies with crun (parent-death signal), takes
// the task's terminal as its controlling terminal (`run --pty`: the shim
// leaves it free), then execs the user's command, looked up in the
// image's PATH. SIGTERM to the task's group reaches crun, which forwards
// it; SIGKILL kills crun and so the container's process; the task's
// cgroup takes what that process left.
#ifndef TIRESIAS_AGENT_CONTAINER_H_
#define TIRESIAS_AGENT_CONTAINER_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tiresias {

// Where the container's first program is bound, inside the container.
inline constexpr char kContainerInitPath[] = "/dev/tiresias-init";
// Where the traffic profiler's library and record are bound (in the
// container's private /dev: nothing is made in the image's files).
inline constexpr char kContainerProfilerLibrary[] = "/dev/tiresias-profiler.so";
inline constexpr char kContainerProfileRecord[] = "/dev/tiresias-profile";

// A host file bound into a container.
struct BoundFile {
  std::string source;       // on the host
  std::string destination;  // in the container, below /dev
  bool read_only = true;
};

struct ContainerTask {
  std::string runtime = "crun";  // the OCI runtime's path (or PATH name)
  std::string init;              // tiresias-container-init on the host
  std::string rootfs;            // the image's root file system, prepared
  // The task's bundle folder (made by WriteContainerBundles, removed by
  // RemoveContainerBundles once the task ended).
  std::string bundle_dir;
  std::string id;  // unique on the node: "tiresias-job-7-attempt-0-rank-1"
  uid_t uid = 0;   // the account the task runs as
  gid_t gid = 0;
  // Bound at their own paths, read-write; empty ones are left out.
  std::string working_dir;  // also the process's cwd ("/" when empty)
  std::string checkpoint_dir;
  std::string home;
  // Host paths of the device nodes the task may see, each bound at
  // /dev/<its name> (the task's GPUs, nvidiactl, ...).
  std::vector<std::string> devices;
  // Host files bound in /dev (BoundFile).
  std::vector<BoundFile> files;
  bool tty = false;  // stdin is the task's terminal (run --pty)
};

// The OCI runtime configuration (config.json) of one process of `task`:
// `argv` run through the container init, with environment `env` ("K=V").
nlohmann::json OciConfig(const ContainerTask& task,
                         const std::vector<std::string>& argv,
                         const std::vector<std::string>& env);

// Makes `path` (absolute) exist inside the root file system `rootfs` as a
// folder (or an empty file, when !directory), with its missing parents
// (0755, the caller's), each step resolved inside rootfs (openat2's
// RESOLVE_IN_ROOT): an image's symlinks never lead out of it. What exists
// already is left as it is. Errors name the path.
absl::Status MakeMountPoint(const std::string& rootfs, const std::string& path,
                            bool directory);

// Whether folder `path` may be bound into a container of account `uid`
// (and so made in a shared image's files as a mount point): it is a
// folder on the host, or its nearest existing folder on the host is the
// account's own (a checkpoint dir the task makes at its start). So a
// mount point can never be made where the host has none and the account
// could not make one: not /etc/ld.so.preload, which every container of
// the image would then see as a folder. FailedPrecondition otherwise.
absl::Status CheckHostFolder(const std::string& path, uid_t uid);

// Writes the task's bundle: <bundle_dir>/<p>/config.json for each process
// p (envs[p] its environment), readable by the task's account alone, and
// <bundle_dir>/state, crun's state folder, the account's. Makes the mount
// points the configs need in the root file system first (its bound
// folders only where CheckHostFolder allows them). Returns each
// process's argv: `crun --root <state> --cgroup-manager=disabled run
// --bundle <bundle_dir>/<p> <id>-<p>`.
absl::StatusOr<std::vector<std::vector<std::string>>> WriteContainerBundles(
    const ContainerTask& task, const std::vector<std::string>& argv,
    const std::vector<std::vector<std::string>>& envs);

// Removes a task's bundle folder, whatever crun left in its state folder
// (which its account could write) included: renamed aside at once, then
// RemoveTree(..., 16) on a detached thread.
void RemoveContainerBundles(const std::string& bundle_dir);

// Removes `path` and, if a folder, what is in it down to `max_depth`
// levels (what lies deeper stays, and so do the folders holding it),
// never following a link: safe on a tree another account can write.
// Best effort.
void RemoveTree(const std::string& path, int max_depth);

// The device nodes a task given GPU device minors `minors` may see, of
// those in `device_dir` ("/dev"): nvidia<minor> for each, then nvidiactl,
// nvidia-uvm, nvidia-uvm-tools and nvidia-modeset; only those that exist.
std::vector<std::string> ContainerDevices(const std::string& device_dir,
                                          const std::vector<int>& minors);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_CONTAINER_H_

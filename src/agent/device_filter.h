// GPU device isolation on cgroup v2: an eBPF program of type
// BPF_PROG_TYPE_CGROUP_DEVICE attached to a task's group, the v2
// equivalent of writing "c 195:N rwm" to v1's devices.deny (cgroups.h).
// The kernel runs it on every open or mknod of a device node by a process
// in the group; it refuses (EPERM) the character devices of major 195
// with a listed minor and allows everything else, so /dev/nvidiactl,
// /dev/nvidia-uvm and the job's own GPUs stay usable. The program is
// built here instruction by instruction (a dozen of them): no compiler,
// libbpf or BTF is needed on the node.
//
// Attached with BPF_F_ALLOW_MULTI, so it runs beside programs that
// systemd or a container runtime attached above; a device is usable only
// if every program allows it. It lives as long as the group: removing
// the folder detaches and frees it.
#ifndef TIRESIAS_AGENT_DEVICE_FILTER_H_
#define TIRESIAS_AGENT_DEVICE_FILTER_H_

#include <linux/bpf.h>

#include <vector>

#include "absl/status/status.h"

namespace tiresias {

// The program that refuses char devices `major`:m for each m in
// `denied_minors` and allows every other device. At most
// kMaxDeniedMinors minors.
std::vector<bpf_insn> DeviceFilterProgram(
    int major, const std::vector<int>& denied_minors);

inline constexpr int kMaxDeniedMinors = 4096;

// Loads DeviceFilterProgram(major, denied_minors) and attaches it to the
// cgroup v2 folder open as `cgroup_fd`. Errors name what the kernel
// refused (a missing bpf() permission, a verifier message).
absl::Status AttachDeviceFilter(int cgroup_fd, int major,
                                const std::vector<int>& denied_minors);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_DEVICE_FILTER_H_

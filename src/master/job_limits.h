// The limits a job spec must keep to be accepted (SubmitJob), in one place:
// the master enforces them (job_validation.h), the CLI checks them before
// sending, and proto/tiresias.proto and docs/ARCHITECTURE.md quote them.
//
// Why limits at all: a spec is stored, listed and sent to agents for the
// job's whole life, so one has to stay far below gRPC's 4 MiB message limit
// (a ListJobs page of them too), and a spec the agent would refuse (an
// environment variable name it cannot set) must be refused at submission,
// not after three failed starts.
#ifndef TIRESIAS_MASTER_JOB_LIMITS_H_
#define TIRESIAS_MASTER_JOB_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace tiresias::job_limits {

// JobSpec.name, .user, .model, .checkpoint_dir: at most this many bytes.
inline constexpr size_t kMaxNameBytes = 256;
inline constexpr size_t kMaxUserBytes = 64;
inline constexpr size_t kMaxModelBytes = 64;
// JobSpec.vc and .qos: a VC's or QOS's name (VirtualCluster.name, Qos.name).
inline constexpr size_t kMaxVcBytes = 64;
inline constexpr size_t kMaxCheckpointDirBytes = 4096;

// JobSpec.io_grace_seconds: its default (0 means it) and most.
inline constexpr double kDefaultIoGraceSeconds = 60;
inline constexpr double kMaxIoGraceSeconds = 86400;

// JobSpec.workdir (empty or an absolute path), .output and .error (empty or
// a path pattern, output_pattern.h): at most this many bytes each.
inline constexpr size_t kMaxWorkdirBytes = 4096;
inline constexpr size_t kMaxOutputPathBytes = 4096;

// JobSpec.command: 1 to kMaxCommandArgs arguments (argv[0] non-empty) of at
// most kMaxCommandBytes together.
inline constexpr size_t kMaxCommandArgs = 4096;
inline constexpr size_t kMaxCommandBytes = 128 * 1024;

// JobSpec.env: at most kMaxEnvEntries variables; each name matches
// [A-Za-z_][A-Za-z0-9_]* and has at most kMaxEnvKeyBytes, each value at most
// kMaxEnvValueBytes; names and values together at most kMaxEnvBytes.
inline constexpr size_t kMaxEnvEntries = 1024;
inline constexpr size_t kMaxEnvKeyBytes = 256;
inline constexpr size_t kMaxEnvValueBytes = 32 * 1024;
inline constexpr size_t kMaxEnvBytes = 128 * 1024;

// SubmitJobRequest.request_id: empty, or at most this many bytes of
// printable ASCII (0x20..0x7E).
inline constexpr size_t kMaxRequestIdBytes = 128;

// JobSpec.dependencies: at most this many.
inline constexpr size_t kMaxDependencies = 64;

// JobSpec.nodes, .gpus_per_node, .tasks_per_node: at most these.
inline constexpr int kMaxNodes = 1024;
inline constexpr int kMaxGpusPerNode = 64;
inline constexpr int kMaxTasksPerNode = 64;

// JobSpec.nodelist, .exclude: node names of 1 to this many bytes (as
// RegisterRequest.name); their count, gpu_type and constraint are limited
// in core/node_filter.h.
inline constexpr size_t kMaxNodeNameBytes = 253;

// JobSpec.cpus_per_gpu and mem_per_gpu_mib: 0 (the node's default) to these.
inline constexpr int kMaxCpusPerGpu = 1024;
inline constexpr int64_t kMaxMemPerGpuMib = int64_t{1} << 30;

// Every string of a spec: valid UTF-8 without NUL bytes.

// SubmitJobsRequest: 1 to kMaxJobsPerSubmission specs, and a request_id of
// at most kMaxBulkRequestIdBytes (job I is stored with "<request_id>#<I>",
// which stays within kMaxRequestIdBytes).
inline constexpr size_t kMaxJobsPerSubmission = 100000;
inline constexpr size_t kMaxBulkRequestIdBytes = 120;

// The largest request the master reads (gRPC's default is 4 MiB): room for
// kMaxJobsPerSubmission specs of a few hundred bytes each. A bigger
// request is refused by gRPC (RESOURCE_EXHAUSTED) before any of it is read
// into a message; the CLI checks first and names the file.
inline constexpr size_t kMaxRequestBytes = 64 << 20;
// A job array (JobSpec.array) stores its spec once per job: the spec's
// size times the number of indices must also stay within kMaxRequestBytes.

// JobSpec.notify: a webhook URL or mailto: address.
inline constexpr size_t kMaxNotifyBytes = 1024;

// JobSpec.begin_time: 2^33 Unix seconds (the year 2242).
inline constexpr double kMaxBeginTime = 8589934592.0;

}  // namespace tiresias::job_limits

#endif  // TIRESIAS_MASTER_JOB_LIMITS_H_

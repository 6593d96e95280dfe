// MasterState: what each node should run, derived from the launches every
// time it is asked for (never queued), so that a repeated, late or lost
// message costs nothing: the next answer says the same. The table
// (LaunchTable::DesiredStateOf) assembles it; the job side fills each
// task's StartTask from the job's record (FillStartTask).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "master/job_limits.h"
#include "master/master_state.h"
#include "master/output_pattern.h"

namespace tiresias {

int MasterState::ProcessesOn(const JobRecord& rec, const Part& part) {
  // tasks_per_node on each node, or one per GPU there.
  return rec.spec.tasks_per_node > 0
             ? rec.spec.tasks_per_node
             : std::max(1, static_cast<int>(part.local_gpus.size()));
}

int MasterState::DefaultPort(LaunchKey launch) const {
  return options_.base_port +
         static_cast<int>((16 * launch.first + launch.second) % kPortWindow);
}

void MasterState::FillStartTask(const Launch& launch, int rank,
                                v1::StartTask* start) const {
  const JobRecord& rec = records_.at(launch.job);
  const Part& part = launch.parts[rank];
  const int port =
      launch.first_port > 0 ? launch.first_port : DefaultPort(launch.key());
  auto host_of = [&](int64_t node_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const NodeInfo* node = table_.FindNode(node_id);
    const std::string address = node == nullptr ? "" : node->record.address;
    std::string host = address.substr(0, address.rfind(':'));
    return host.empty() ? std::string("127.0.0.1") : host;
  };
  start->mutable_task()->set_job_id(launch.job);
  start->mutable_task()->set_attempt(launch.attempt);
  start->mutable_task()->set_rank(rank);
  start->set_world_size(static_cast<int>(launch.parts.size()));
  start->set_local_rank(0);  // one task per node
  for (int gpu : part.local_gpus) start->add_gpu_indexes(gpu);
  for (const std::string& arg : rec.spec.command) start->add_command(arg);
  for (const auto& [k, v] : rec.spec.env) (*start->mutable_env())[k] = v;
  if (!rec.spec.checkpoint_dir.empty()) {
    start->set_checkpoint_dir(rec.spec.checkpoint_dir);
  } else if (options_.checkpoint_base.empty()) {
    // The agent knows the account's home; the master does not.
    start->set_checkpoint_dir(absl::StrCat("~/.tiresias/checkpoints/",
                                           cluster_id(), "/job-", rec.id));
  } else {
    start->set_checkpoint_dir(
        absl::StrCat(options_.checkpoint_base, "/",
                     rec.spec.user.empty() ? "-" : rec.spec.user, "/",
                     cluster_id(), "/job-", rec.id));
    start->set_checkpoint_base(options_.checkpoint_base);
  }
  start->set_restart_count(rec.restarts);
  start->set_owner(rec.spec.user);
  start->set_profile(launch.profile);
  start->set_workdir(rec.spec.workdir);
  const OutputPatternValues values{.job_id = launch.job,
                                   .attempt = launch.attempt,
                                   .rank = rank,
                                   .array_index = rec.array_index,
                                   .array_id = rec.array_id};
  if (rec.array_id > 0) {
    // O(items of the indices text), not O(jobs of the array).
    const ArraySummary summary = SummarizeArray(rec.spec.array.indices);
    v1::ArrayTask* array = start->mutable_array();
    array->set_array_job_id(rec.array_id);
    array->set_task_id(rec.array_index);
    array->set_task_count(summary.count);
    array->set_task_min(summary.min);
    array->set_task_max(summary.max);
  }
  start->set_output(ExpandOutputPattern(rec.spec.output, values));
  start->set_error(ExpandOutputPattern(rec.spec.error, values));
  start->set_master_addr(host_of(launch.parts[0].node_id));
  start->set_master_port(port);
  // Global ranks node by node in rank order.
  auto processes_on = [&](const Part& p) { return ProcessesOn(rec, p); };
  int total = 0;
  for (size_t r = 0; r < launch.parts.size(); ++r) {
    const Part& p = launch.parts[r];
    if (static_cast<int>(r) == rank) start->set_first_process(total);
    const std::string host = host_of(p.node_id);
    for (int i = processes_on(p); i > 0; --i) {
      start->add_worker_addresses(absl::StrCat(host, ":", port + total++));
    }
    start->add_node_names(table_.NodeName(p.node_id));
  }
  start->set_processes(processes_on(part));
  start->set_total_processes(total);
  start->set_io(static_cast<v1::IoMode>(rec.spec.io));
  if (rec.spec.io != kIoNone) {
    start->set_io_grace_seconds(rec.spec.io_grace_seconds > 0
                                    ? rec.spec.io_grace_seconds
                                    : job_limits::kDefaultIoGraceSeconds);
  }
  start->set_image(rec.spec.image);
  start->set_cpus_per_gpu(rec.spec.cpus_per_gpu);
  start->set_mem_per_gpu_mib(rec.spec.mem_per_gpu_mib);
  if (rec.spec.cpu_only()) {
    // What the scheduler counted (Cluster::SpareMemoryFor): its own, or a
    // per-CPU share of the node's spare memory.
    int64_t mem = rec.spec.mem_mib;
    const NodeInfo* node = table_.FindNode(part.node_id);
    if (mem == 0 && node != nullptr && node->spare_cpus > 0) {
      mem = node->spare_memory_mib * rec.spec.cpus / node->spare_cpus;
    }
    start->set_cpus(rec.spec.cpus);
    start->set_mem_mib(mem);
  }
  // The record holds the executed time before this run (SyncRecord), so
  // the answer is the same for the whole launch.
  if (rec.spec.warn.signal != 0 && rec.spec.time_limit > Seconds{0}) {
    start->set_warn_signal(rec.spec.warn.signal);
    start->set_warn_after_seconds(
        std::max(0.0, (rec.spec.time_limit - rec.total_executed).count() -
                          rec.spec.warn.seconds));
  }
}

bool MasterState::FillDesiredStart(const Launch& launch, int rank,
                                   v1::StartTask* start) const {
  if (!records_.contains(launch.job)) return false;
  if (start != nullptr) FillStartTask(launch, rank, start);
  return true;
}

v1::DesiredState MasterState::AnswerDesired(int64_t node_id, uint64_t held) {
  return table_.AnswerDesired(
      node_id, held,
      [&](const Launch& launch, int rank, v1::StartTask* start)
          ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return FillDesiredStart(launch, rank, start);
          });
}

absl::StatusOr<std::optional<v1::DesiredState>> MasterState::DesiredStateAfter(
    int64_t node_id, uint64_t session, uint64_t after_version) {
  MutexLock lock(&mu_);
  const NodeInfo* node = table_.FindNode(node_id);
  if (node == nullptr || !node->up() || node->session != session ||
      session == 0) {
    return absl::NotFoundError(
        absl::StrCat("node_id ", node_id, " session ", session,
                     ": not registered with this master; register again"));
  }
  if (node->version <= after_version) return std::nullopt;
  // A wake-up: the agent reports and acts on the answer (see the proto).
  v1::DesiredState wake;
  wake.set_session(node->session);
  wake.set_version(node->version);
  return wake;
}

}  // namespace tiresias

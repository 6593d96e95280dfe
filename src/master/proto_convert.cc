#include "master/proto_convert.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/status_macros.h"

namespace tiresias {

v1::JobState JobStateToProto(JobRecordState state) {
  switch (state) {
    case JobRecordState::kPending: return v1::JOB_STATE_PENDING;
    case JobRecordState::kRunning: return v1::JOB_STATE_RUNNING;
    case JobRecordState::kPreempted: return v1::JOB_STATE_PREEMPTED;
    case JobRecordState::kFinished: return v1::JOB_STATE_FINISHED;
    case JobRecordState::kFailed: return v1::JOB_STATE_FAILED;
    case JobRecordState::kCancelled: return v1::JOB_STATE_CANCELLED;
    case JobRecordState::kStarting: return v1::JOB_STATE_STARTING;
    case JobRecordState::kTimeout: return v1::JOB_STATE_TIMEOUT;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

absl::StatusOr<JobRecordState> JobStateFromProto(v1::JobState state) {
  switch (state) {
    case v1::JOB_STATE_PENDING: return JobRecordState::kPending;
    case v1::JOB_STATE_RUNNING: return JobRecordState::kRunning;
    case v1::JOB_STATE_PREEMPTED: return JobRecordState::kPreempted;
    case v1::JOB_STATE_FINISHED: return JobRecordState::kFinished;
    case v1::JOB_STATE_FAILED: return JobRecordState::kFailed;
    case v1::JOB_STATE_CANCELLED: return JobRecordState::kCancelled;
    case v1::JOB_STATE_STARTING: return JobRecordState::kStarting;
    case v1::JOB_STATE_TIMEOUT: return JobRecordState::kTimeout;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "state: expected a job state, got ", static_cast<int>(state),
      state == v1::JOB_STATE_UNSPECIFIED ? " (unspecified)" : ""));
}

v1::NodeState NodeStateToProto(NodeState state) {
  return state == NodeState::kUp ? v1::NODE_STATE_UP : v1::NODE_STATE_DOWN;
}

absl::StatusOr<NodeState> NodeStateFromProto(v1::NodeState state) {
  if (state == v1::NODE_STATE_UP) return NodeState::kUp;
  if (state == v1::NODE_STATE_DOWN) return NodeState::kDown;
  return absl::InvalidArgumentError(absl::StrCat(
      "state: expected a node state, got ", static_cast<int>(state)));
}

void JobEventToProto(const JobEvent& event, v1::JobEvent* out) {
  out->set_job_id(event.job_id);
  out->set_sequence(event.sequence);
  out->set_time(event.time.count());
  out->set_kind(event.kind);
  out->set_detail(event.detail);
}

JobEvent JobEventFromProto(const v1::JobEvent& event) {
  return JobEvent{event.job_id(), event.sequence(), Seconds{event.time()},
                  event.kind(), event.detail()};
}

void JobToProto(const JobRecord& job, v1::Job* out) {
  out->Clear();
  out->set_id(job.id);
  JobSpecToProto(job.spec, out->mutable_spec());
  out->set_state(JobStateToProto(job.state));
  out->set_queue(job.queue);
  out->set_attained_gpu_seconds(job.attained_gpu_seconds);
  out->set_executed_seconds(job.executed.count());
  out->set_total_executed_seconds(job.total_executed.count());
  out->set_submit_time(job.submit_time.count());
  if (job.first_start_time) {
    out->set_first_start_time(job.first_start_time->count());
  }
  if (job.end_time) out->set_end_time(job.end_time->count());
  out->set_last_stop_time(job.last_stop_time.count());
  out->set_preemptions(job.preemptions);
  out->set_promotions(job.promotions);
  out->set_restarts(job.restarts);
  out->set_attempt(job.attempt);
  out->mutable_nodes()->Assign(job.nodes.begin(), job.nodes.end());
  if (job.exit_code) out->set_exit_code(*job.exit_code);
  out->set_cpu_seconds(job.cpu_seconds);
  out->set_max_memory_bytes(job.max_memory_bytes);
  out->set_held(job.held);
  out->set_waiting_on_dependencies(job.waiting_on_dependencies);
  out->set_array_id(job.array_id);
  out->set_array_index(job.array_index);
  for (const JobEvent& event : job.events) {
    JobEventToProto(event, out->add_events());
  }
  out->set_pending_reason(job.pending_reason);
  out->set_borrowing(job.borrowing);
  if (v1::PendingReasonKind_IsValid(job.pending_reason_kind)) {
    out->set_pending_reason_kind(
        static_cast<v1::PendingReasonKind>(job.pending_reason_kind));
  }
  if (job.profile) {
    v1::TrafficProfile* p = out->mutable_profile();
    p->set_periodic(job.profile->periodic);
    if (job.profile->tensor_skew) p->set_tensor_skew(*job.profile->tensor_skew);
    if (job.profile->iteration_s) p->set_iteration_s(*job.profile->iteration_s);
    if (job.profile->bytes_per_iteration) {
      p->set_bytes_per_iteration(*job.profile->bytes_per_iteration);
    }
    if (job.profile->messages_per_iteration) {
      p->set_messages_per_iteration(*job.profile->messages_per_iteration);
    }
    p->set_measured_job_id(job.profile->measured_job_id);
  }
}

absl::StatusOr<JobRecord> JobFromProto(const v1::Job& job) {
  JobRecord out;
  out.id = job.id();
  out.spec = JobSpecFromProto(job.spec());
  auto state = JobStateFromProto(job.state());
  if (!state.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("job ", job.id(), ": ", state.status().message()));
  }
  out.state = *state;
  out.queue = job.queue();
  out.attained_gpu_seconds = job.attained_gpu_seconds();
  out.executed = Seconds{job.executed_seconds()};
  out.total_executed = Seconds{job.total_executed_seconds()};
  out.submit_time = Seconds{job.submit_time()};
  if (job.has_first_start_time()) {
    out.first_start_time = Seconds{job.first_start_time()};
  }
  if (job.has_end_time()) out.end_time = Seconds{job.end_time()};
  out.last_stop_time = Seconds{job.last_stop_time()};
  out.preemptions = job.preemptions();
  out.promotions = job.promotions();
  out.restarts = job.restarts();
  out.attempt = job.attempt();
  out.nodes.assign(job.nodes().begin(), job.nodes().end());
  if (job.has_exit_code()) out.exit_code = job.exit_code();
  out.cpu_seconds = job.cpu_seconds();
  out.max_memory_bytes = job.max_memory_bytes();
  out.held = job.held();
  out.waiting_on_dependencies = job.waiting_on_dependencies();
  out.array_id = job.array_id();
  out.array_index = job.array_index();
  for (const v1::JobEvent& event : job.events()) {
    out.events.push_back(JobEventFromProto(event));
  }
  out.pending_reason = job.pending_reason();
  out.pending_reason_kind = job.pending_reason_kind();
  out.borrowing = job.borrowing();
  if (job.has_profile()) {
    const v1::TrafficProfile& p = job.profile();
    JobProfile& profile = out.profile.emplace();
    profile.periodic = p.periodic();
    if (p.has_tensor_skew()) profile.tensor_skew = p.tensor_skew();
    if (p.has_iteration_s()) profile.iteration_s = p.iteration_s();
    if (p.has_bytes_per_iteration()) {
      profile.bytes_per_iteration = p.bytes_per_iteration();
    }
    if (p.has_messages_per_iteration()) {
      profile.messages_per_iteration = p.messages_per_iteration();
    }
    profile.measured_job_id = p.measured_job_id();
  }
  return out;
}

void NodeToProto(const NodeRecord& node, v1::Node* out) {
  out->set_id(node.id);
  out->set_name(node.name);
  out->set_address(node.address);
  out->set_gpus(node.gpus);
  out->set_state(NodeStateToProto(node.state));
  out->set_last_heartbeat_time(node.last_heartbeat.count());
  out->set_drained(node.drained);
  out->set_drain_reason(node.drain_reason);
}

absl::StatusOr<NodeRecord> NodeFromProto(const v1::Node& node) {
  NodeRecord out;
  out.id = node.id();
  out.name = node.name();
  out.address = node.address();
  out.gpus = node.gpus();
  ASSIGN_OR_RETURN(out.state, NodeStateFromProto(node.state()));
  out.last_heartbeat = Seconds{node.last_heartbeat_time()};
  out.drained = node.drained();
  out.drain_reason = node.drain_reason();
  return out;
}

void LeaderToProto(const LeaderRecord& leader,
                   const std::vector<std::string>& standbys,
                   const StoreHealth& store, v1::MasterLeader* out) {
  out->set_epoch(leader.epoch);
  out->set_since(leader.since);
  out->set_pid(leader.pid);
  out->set_host(leader.host);
  for (const std::string& s : standbys) out->add_standbys(s);
  v1::StoreHealth* health = out->mutable_store();
  health->set_kind(store.kind);
  health->set_where(store.where);
  health->set_log_index(store.log_index);
  health->set_checked(store.checked);
  for (const StoreMemberHealth& h : store.members) {
    v1::StoreMember* member = health->add_members();
    member->set_endpoint(h.endpoint);
    member->set_in_use(h.in_use);
    member->set_error(h.error);
    member->set_version(h.version);
    member->set_db_size(h.db_size);
    member->set_raft_leader(h.raft_leader);
    member->set_has_leader(h.has_leader);
    member->set_raft_index(h.raft_index);
    for (const std::string& a : h.alarms) member->add_alarms(a);
  }
}

}  // namespace tiresias

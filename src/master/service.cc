#include "master/service.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/status_macros.h"
#include "core/stream_keys.h"
#include "core/to_absl.h"
#include "master/job_limits.h"
#include "master/page_token.h"
#include "master/proto_convert.h"
#include "security/rpc_status.h"
#include "security/tls.h"

namespace tiresias {

grpc::Status TiresiasService::GetJob(grpc::ServerContext* ctx,
                                     const v1::GetJobRequest* req,
                                     v1::GetJobResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "GetJob");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<JobRecord> job = state_->GetJob(req->job_id());
  if (!job.ok()) return security::ToGrpc(job.status());
  JobToProto(*job, resp->mutable_job());
  RedactFor(*who, state_->options().hide_others_commands, resp->mutable_job());
  return grpc::Status::OK;
}

grpc::Status TiresiasService::WhoAmI(grpc::ServerContext* ctx,
                                     const v1::WhoAmIRequest*,
                                     v1::WhoAmIResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "WhoAmI");
  if (!who.ok()) return security::ToGrpc(who.status());
  resp->set_user(who->user);
  resp->set_admin(who->admin);
  resp->set_via(who->via);
  resp->set_insecure(!state_->options().require_auth);
  return grpc::Status::OK;
}

absl::StatusOr<Principal> TiresiasService::MayActOnJob(
    const grpc::ServerContext& ctx, JobId id, std::string_view action) {
  ASSIGN_OR_RETURN(Principal who, auth_.Client(ctx, action));
  ASSIGN_OR_RETURN(JobRecord job, state_->GetJob(id));
  if (!who.MayActOn(job.spec.user)) {
    return auth_.Deny(who, absl::StrCat(ToAbsl(action), " job ", id),
                      absl::StrCat("job ", id, " is ", job.spec.user,
                                   "'s; only its owner or an admin may"));
  }
  return who;
}

namespace {

// The request's paging and filters, checked: InvalidArgument naming the
// field.
absl::StatusOr<MasterState::JobListQuery> ListQueryFromProto(
    const v1::ListJobsRequest& req) {
  MasterState::JobListQuery query;
  if (req.page_size() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: expected 0 (the default, ",
                     TiresiasService::kDefaultPageSize, ") to ",
                     TiresiasService::kMaxPageSize, ", got ", req.page_size()));
  }
  query.limit = req.page_size() == 0
                    ? TiresiasService::kDefaultPageSize
                    : std::min(req.page_size(), TiresiasService::kMaxPageSize);
  query.max_bytes = TiresiasService::kPageBudgetBytes;
  ASSIGN_OR_RETURN(query.after_id, DecodePageToken(req.page_token()));
  if (req.has_state() && req.state() != v1::JOB_STATE_UNSPECIFIED) {
    ASSIGN_OR_RETURN(query.state, JobStateFromProto(req.state()));
  }
  if (req.states_size() > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "states: ", req.states_size(), " states; expected at most 16"));
  }
  for (int s : req.states()) {
    ASSIGN_OR_RETURN(JobRecordState state,
                     JobStateFromProto(static_cast<v1::JobState>(s)));
    query.any_of.push_back(state);
  }
  if (!req.user().empty()) query.user = req.user();
  if (!req.name().empty()) query.name = req.name();
  if (req.array_id() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "array_id: expected an array's id (> 0) or 0 (any job), got ",
        req.array_id()));
  }
  if (req.array_id() > 0) query.array_id = req.array_id();
  if (!req.vc().empty()) query.vc = req.vc();
  // Each instant, when given, must be a finite number of Unix seconds.
  const auto instant = [](absl::string_view field, bool has, double value,
                          std::optional<Seconds>* out) -> absl::Status {
    if (!has) return absl::OkStatus();
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": expected Unix seconds, got ", value));
    }
    *out = Seconds{value};
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(instant("submitted_since", req.has_submitted_since(),
                          req.submitted_since(), &query.submitted_since));
  RETURN_IF_ERROR(instant("ended_since", req.has_ended_since(),
                          req.ended_since(), &query.ended_since));
  RETURN_IF_ERROR(instant("ended_before", req.has_ended_before(),
                          req.ended_before(), &query.ended_before));
  return query;
}

}  // namespace

grpc::Status TiresiasService::ListJobs(grpc::ServerContext* ctx,
                                       const v1::ListJobsRequest* req,
                                       v1::ListJobsResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "ListJobs");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<MasterState::JobListQuery> query = ListQueryFromProto(*req);
  if (!query.ok()) return security::ToGrpc(query.status());
  absl::StatusOr<JobPage> page = state_->ListJobsPage(*query);
  if (!page.ok()) return security::ToGrpc(page.status());
  // The store cut the page at about kPageBudgetBytes; this bound on the
  // exact encoding keeps an answer clear of gRPC's 4 MiB limit even if that
  // estimate were off.
  size_t bytes = 0;
  bool cut = false;
  for (const JobRecord& job : page->jobs) {
    v1::Job out;
    JobToProto(job, &out);
    out.clear_events();
    // A listing never carries environments (secrets live there): GetJob
    // shows a job's to its owner.
    out.mutable_spec()->clear_env();
    out.mutable_spec()->clear_notify();
    RedactFor(*who, state_->options().hide_others_commands, &out);
    const size_t size = out.ByteSizeLong();
    if (resp->jobs_size() > 0 && bytes + size > kMaxPageBytes) {
      cut = true;
      break;
    }
    bytes += size;
    *resp->add_jobs() = std::move(out);
  }
  if ((page->more || cut) && resp->jobs_size() > 0) {
    resp->set_next_page_token(
        EncodePageToken(resp->jobs(resp->jobs_size() - 1).id()));
  }
  return grpc::Status::OK;
}

grpc::Status TiresiasService::CancelJob(grpc::ServerContext* ctx,
                                        const v1::CancelJobRequest* req,
                                        v1::CancelJobResponse* resp) {
  absl::StatusOr<Principal> who = MayActOnJob(*ctx, req->job_id(), "CancelJob");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<JobRecord> job = state_->CancelJob(req->job_id());
  if (!job.ok()) return security::ToGrpc(job.status());
  JobToProto(*job, resp->mutable_job());
  Changed();
  return grpc::Status::OK;
}

namespace {

absl::StatusOr<JobAction> JobActionFromProto(v1::JobAction action) {
  switch (action) {
    case v1::JOB_ACTION_CANCEL: return JobAction::kCancel;
    case v1::JOB_ACTION_HOLD: return JobAction::kHold;
    case v1::JOB_ACTION_RELEASE: return JobAction::kRelease;
    case v1::JOB_ACTION_REQUEUE: return JobAction::kRequeue;
    case v1::JOB_ACTION_REQUEUE_HOLD:
      return JobAction::kRequeueHold;
    default: break;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "action: expected cancel, hold, release, requeue or requeue-hold, got ",
      static_cast<int>(action)));
}

}  // namespace

grpc::Status TiresiasService::UpdateJobs(grpc::ServerContext* ctx,
                                         const v1::UpdateJobsRequest* req,
                                         v1::UpdateJobsResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "UpdateJobs");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<JobAction> action = JobActionFromProto(req->action());
  if (!action.ok()) return security::ToGrpc(action.status());
  const std::string what =
      absl::StrCat("UpdateJobs ", std::string(JobActionName(*action)));
  if (req->array_id() < 0) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("array_id: expected an array's id (> 0) or 0 (any), got ",
                     req->array_id()));
  }
  const bool by_filter =
      req->state() != v1::JOB_STATE_UNSPECIFIED || !req->user().empty() ||
      !req->name().empty() || req->array_id() > 0;
  if (by_filter == (req->job_ids_size() > 0)) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        by_filter ? "job_ids: give job ids or a filter (state, user, name, "
                    "array_id), not both"
                  : "job_ids: expected job ids or a filter (state, user, "
                    "name, array_id); got neither");
  }
  if (req->job_ids_size() > kMaxUpdateIds) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("job_ids: at most ", kMaxUpdateIds,
                                     " in one request, got ",
                                     req->job_ids_size()));
  }
  for (int64_t id : req->job_ids()) {
    if (id <= 0) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("job_ids: expected job ids >= 1, got ", id));
    }
  }
  // Called under the state's lock: it only records whom it refused; the
  // audit entry is written after.
  std::vector<JobId> denied;
  MasterState::MayAct may_act = [&](const JobRecord& job) {
    if (who->MayActOn(job.spec.user)) return true;
    denied.push_back(job.id);
    return false;
  };
  absl::StatusOr<std::vector<MasterState::JobActionResult>> results;
  if (by_filter) {
    MasterState::JobFilter filter;
    if (req->state() != v1::JOB_STATE_UNSPECIFIED) {
      absl::StatusOr<JobRecordState> state = JobStateFromProto(req->state());
      if (!state.ok()) return security::ToGrpc(state.status());
      filter.state = *state;
    }
    if (!req->user().empty()) filter.user = req->user();
    if (!req->name().empty()) filter.name = req->name();
    if (req->array_id() > 0) filter.array_id = req->array_id();
    if (!who->admin) {
      if (filter.user && *filter.user != who->user) {
        return security::ToGrpc(auth_.Deny(
            *who, what,
            absl::StrCat("user: you are ", who->user,
                         "; only an admin may act on another user's jobs (",
                         *filter.user, ")")));
      }
      filter.user = who->user;  // a non-admin's filter: their own jobs
    }
    results = state_->UpdateMatchingJobs(*action, filter, may_act);
  } else {
    results = state_->UpdateJobs(
        *action, std::vector<JobId>(req->job_ids().begin(),
                                    req->job_ids().end()),
        may_act);
  }
  if (!denied.empty()) {
    // The refusal is in each job's result; this only audits it.
    auth_.Deny(*who, what,
               absl::StrCat("not the owner of job(s) ",
                            absl::StrJoin(denied, ",")))
        .IgnoreError();
  }
  if (!results.ok()) return security::ToGrpc(results.status());
  bool any = false;
  for (const MasterState::JobActionResult& r : *results) {
    v1::JobActionResult* out = resp->add_results();
    out->set_job_id(r.id);
    out->set_code(static_cast<int>(r.status.code()));
    if (!r.status.ok()) {
      out->set_error(std::string(r.status.message()));
      continue;
    }
    out->set_state(JobStateToProto(r.job.state));
    out->set_held(r.job.held);
    out->set_unchanged(r.unchanged);
    any = any || !r.unchanged;
  }
  if (any) Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ListNodes(grpc::ServerContext* ctx,
                                        const v1::ListNodesRequest*,
                                        v1::ListNodesResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "ListNodes");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<std::vector<v1::Node>> nodes = state_->ListNodes();
  if (!nodes.ok()) return security::ToGrpc(nodes.status());
  for (v1::Node& node : *nodes) *resp->add_nodes() = std::move(node);
  return grpc::Status::OK;
}

namespace {

// The caller of a node operation, if an admin; else PermissionDenied
// (audited).
absl::StatusOr<Principal> NodeAdmin(CallAuth& auth,
                                    const grpc::ServerContext& ctx,
                                    std::string_view action,
                                    const std::string& node) {
  ASSIGN_OR_RETURN(Principal who, auth.Client(ctx, action));
  if (!who.admin) {
    return auth.Deny(who, absl::StrCat(ToAbsl(action), " ", node),
                     "only an admin may drain or resume nodes");
  }
  return who;
}

}  // namespace

grpc::Status TiresiasService::DrainNode(grpc::ServerContext* ctx,
                                        const v1::DrainNodeRequest* req,
                                        v1::DrainNodeResponse* resp) {
  absl::StatusOr<Principal> who =
      NodeAdmin(auth_, *ctx, "DrainNode", req->name());
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<MasterState::DrainResult> drained =
      state_->DrainNode(req->name(), req->reason(), req->preempt());
  if (!drained.ok()) return security::ToGrpc(drained.status());
  auth_.Done(*who, absl::StrCat("DrainNode ", req->name()),
             absl::StrCat(req->preempt() ? "with preemption: " : "",
                          req->reason()));
  *resp->mutable_node() = std::move(drained->node);
  for (JobId id : drained->preempted) resp->add_preempted_job_ids(id);
  Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ResumeNode(grpc::ServerContext* ctx,
                                         const v1::ResumeNodeRequest* req,
                                         v1::ResumeNodeResponse* resp) {
  absl::StatusOr<Principal> who =
      NodeAdmin(auth_, *ctx, "ResumeNode", req->name());
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<v1::Node> node = state_->ResumeNode(req->name());
  if (!node.ok()) return security::ToGrpc(node.status());
  auth_.Done(*who, absl::StrCat("ResumeNode ", req->name()), "");
  *resp->mutable_node() = std::move(*node);
  Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::GetClusterStatus(
    grpc::ServerContext* ctx, const v1::GetClusterStatusRequest*,
    v1::ClusterStatus* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "GetClusterStatus");
  if (!who.ok()) return security::ToGrpc(who.status());
  absl::StatusOr<MasterState::Metrics> m = state_->SnapshotMetrics();
  if (!m.ok()) return security::ToGrpc(m.status());
  resp->set_policy(state_->options().policy);
  resp->set_placement(m->placement);
  resp->set_nodes_up(m->nodes_up);
  resp->set_nodes_down(m->nodes_down);
  resp->set_gpus(m->gpus_up);
  resp->set_gpus_busy(m->gpus_busy);
  resp->set_nodes_drained(m->nodes_drained);
  resp->set_gpus_drained(m->gpus_drained);
  for (const auto& [state, count] : m->jobs_by_state) {
    (*resp->mutable_jobs())[std::string(JobRecordStateName(state))] = count;
  }
  v1::PackLimitStatus* pack = resp->mutable_pack_limit();
  pack->set_value(m->pack_limit);
  pack->set_learning(m->pack_limit_learning);
  pack->set_runs(m->pack_limit_runs);
  pack->set_samples(m->pack_limit_samples);
  pack->set_fit(m->pack_limit_fit);
  *resp->mutable_tuning() = m->tuning;
  if (m->leader) {
    LeaderToProto(*m->leader, m->standbys, m->store, resp->mutable_leader());
  }
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::JobEvent>* TiresiasService::WatchEvents(
    grpc::CallbackServerContext* ctx, const v1::WatchEventsRequest* req) {
  auto refuse = [](const absl::Status& status) {
    return EventWatches::Refuse(security::ToGrpc(status));
  };
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "WatchEvents");
  if (!who.ok()) return refuse(who.status());
  const JobId job = req->job_id();
  if (job < 0) {
    return refuse(absl::InvalidArgumentError(
        "job_id: must be a job id, or 0 for every job"));
  }
  if (req->has_after_sequence() && req->after_sequence() < 0) {
    return refuse(absl::InvalidArgumentError("after_sequence: must be >= 0"));
  }
  if (job != 0) {
    absl::StatusOr<JobRecord> rec = state_->GetJob(job);
    if (!rec.ok()) return refuse(rec.status());
  }
  int64_t cursor = 0;
  if (req->has_after_sequence()) {
    cursor = req->after_sequence();
  } else {
    absl::StatusOr<int64_t> last = state_->LastEventSequence();
    if (!last.ok()) return refuse(last.status());
    cursor = *last;
  }
  absl::StatusOr<UserStreams::Hold> hold = streams_.Acquire(who->user);
  if (!hold.ok()) return refuse(hold.status());
  // Says that the stream follows the log (a refusal has no such key).
  ctx->AddInitialMetadata(std::string(kWatchFollowing), "1");
  return watches_.Open(*std::move(hold), job, cursor);
}

std::shared_ptr<v1::AgentLogs::Stub> TiresiasService::AgentLogsStub(
    const std::string& node, const std::string& address) {
  MutexLock lock(&stubs_mu_);
  AgentChannel& channel = stubs_[node];
  // One channel per node, replaced when its agent moves (a restarted agent
  // serves on a new port).
  if (channel.stub == nullptr || channel.address != address) {
    channel.address = address;
    // As the master (its certificate): an agent serves logs to it alone.
    // The agent's certificate names its node, which is what is checked
    // (its address need not be in it).
    security::DialOptions dial;
    if (!agent_tls_.insecure) dial.target_name_override = node;
    dial.retry_services = {"tiresias.v1.AgentLogs"};  // reads
    channel.stub = std::shared_ptr<v1::AgentLogs::Stub>(
        v1::AgentLogs::NewStub(security::Dial(address, agent_tls_, dial)));
  }
  return channel.stub;
}

grpc::Status TiresiasService::ReadJobLog(grpc::ServerContext* server_ctx,
                                         const v1::ReadJobLogRequest* req,
                                         v1::ReadJobLogResponse* resp) {
  absl::StatusOr<Principal> who =
      MayActOnJob(*server_ctx, req->job_id(), "ReadJobLog");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (req->offset() < 0) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("offset: must be >= 0, got ", req->offset()));
  }
  if (req->max_bytes() < 0) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("max_bytes: must be >= 0, got ", req->max_bytes()));
  }
  absl::StatusOr<MasterState::TaskLogLocation> where =
      state_->LocateTaskLog(req->job_id(), req->attempt(), req->rank());
  if (!where.ok()) return security::ToGrpc(where.status());
  const std::string task = absl::StrCat("job ", req->job_id(), " attempt ",
                                        where->attempt, " rank ", req->rank());
  v1::ReadTaskLogRequest agent_req;
  agent_req.mutable_task()->set_job_id(req->job_id());
  agent_req.mutable_task()->set_attempt(where->attempt);
  agent_req.mutable_task()->set_rank(req->rank());
  agent_req.set_offset(req->offset());
  agent_req.set_max_bytes(req->max_bytes() == 0
                              ? kMaxLogBytes
                              : std::min(req->max_bytes(), kMaxLogBytes));
  std::vector<std::string> unreachable;
  for (const MasterState::LogNode& node : where->nodes) {
    if (!node.up || node.log_address.empty()) {
      unreachable.push_back(
          absl::StrCat(node.name, node.up ? " (serves no logs)" : " (down)"));
      continue;
    }
    if (server_ctx->IsCancelled()) return grpc::Status::CANCELLED;
    grpc::ClientContext ctx;
    // No longer than the client still waits.
    ctx.set_deadline(
        std::min(std::chrono::system_clock::now() + kAgentLogTimeout,
                 server_ctx->deadline()));
    v1::ReadTaskLogResponse agent_resp;
    grpc::Status s = AgentLogsStub(node.name, node.log_address)
                         ->ReadTaskLog(&ctx, agent_req, &agent_resp);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) continue;
    if (!s.ok()) {
      unreachable.push_back(
          absl::StrCat(node.name, " (", s.error_message(), ")"));
      continue;
    }
    resp->set_data(std::move(*agent_resp.mutable_data()));
    resp->set_next_offset(req->offset() +
                          static_cast<int64_t>(resp->data().size()));
    resp->set_attempt(where->attempt);
    resp->set_node(node.name);
    resp->set_complete(where->ended &&
                       resp->next_offset() >= agent_resp.size());
    resp->set_current_attempt(where->current_attempt);
    resp->set_job_state(JobStateToProto(where->state));
    return grpc::Status::OK;
  }
  if (!unreachable.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("the log of ", task,
                                     " is on a node that cannot be "
                                     "reached now: ",
                                     absl::StrJoin(unreachable, ", ")));
  }
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("no node has the log of ", task));
}

namespace {
grpc::Status NoLongerLeading() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "this master's lead may have lapsed: it commands "
                      "nothing more (ask the other masters)");
}
}  // namespace

grpc::Status AgentRegistryService::Register(grpc::ServerContext* ctx,
                                            const v1::RegisterRequest* req,
                                            v1::RegisterResponse* resp) {
  if (absl::Status s = auth_.Agent(*ctx, req->name(), "Register"); !s.ok()) {
    return security::ToGrpc(s);
  }
  if (!state_->LeadHolds()) return NoLongerLeading();
  absl::StatusOr<v1::RegisterResponse> out = state_->Register(*req);
  if (!out.ok()) return security::ToGrpc(out.status());
  if (!state_->LeadHolds()) return NoLongerLeading();  // lapsed meanwhile
  *resp = std::move(*out);
  if (on_change_) on_change_();
  return grpc::Status::OK;
}

grpc::Status AgentRegistryService::Heartbeat(grpc::ServerContext* ctx,
                                             const v1::HeartbeatRequest* req,
                                             v1::HeartbeatResponse* resp) {
  if (absl::Status s = auth_.Agent(*ctx, state_->NodeName(req->node_id()),
                                   "Heartbeat");
      !s.ok()) {
    return security::ToGrpc(s);
  }
  // A leader whose lease may have lapsed commands nothing: another may lead.
  if (!state_->LeadHolds()) return NoLongerLeading();
  absl::StatusOr<v1::HeartbeatResponse> out = state_->Heartbeat(*req);
  if (!out.ok()) return security::ToGrpc(out.status());
  if (!state_->LeadHolds()) return NoLongerLeading();  // lapsed meanwhile
  *resp = std::move(*out);
  // Cheap when nothing changed: the scheduling thread only runs a pass if
  // the report freed GPUs or changed a job.
  if (on_change_) on_change_();
  return grpc::Status::OK;
}

grpc::ServerWriteReactor<v1::DesiredState>*
AgentRegistryService::WatchDesiredState(
    grpc::CallbackServerContext* ctx, const v1::WatchDesiredStateRequest* req) {
  if (absl::Status s = auth_.Agent(*ctx, state_->NodeName(req->node_id()),
                                   "WatchDesiredState");
      !s.ok()) {
    return DesiredWatches::Refuse(security::ToGrpc(s));
  }
  return watches_.Open(req->node_id(), req->session(), req->after_version());
}

void AgentRegistryService::Stop() { watches_.Stop(); }

}  // namespace tiresias

#include "master/service.h"

#include <algorithm>
#include <vector>

#include "master/proto_convert.h"

namespace tiresias {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbering.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

grpc::Status TiresiasService::SubmitJob(grpc::ServerContext*,
                                        const v1::SubmitJobRequest* req,
                                        v1::SubmitJobResponse* resp) {
  if (!req->has_spec()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "spec: must be set");
  }
  absl::StatusOr<JobId> id = state_->SubmitJob(JobSpecFromProto(req->spec()));
  if (!id.ok()) return ToGrpcStatus(id.status());
  resp->set_job_id(*id);
  Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::GetJob(grpc::ServerContext*,
                                     const v1::GetJobRequest* req,
                                     v1::GetJobResponse* resp) {
  absl::StatusOr<JobRecord> job = state_->GetJob(req->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  JobToProto(*job, resp->mutable_job());
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ListJobs(grpc::ServerContext*,
                                       const v1::ListJobsRequest* req,
                                       v1::ListJobsResponse* resp) {
  std::optional<JobRecordState> filter;
  if (req->has_state() && req->state() != v1::JOB_STATE_UNSPECIFIED) {
    absl::StatusOr<JobRecordState> state = JobStateFromProto(req->state());
    if (!state.ok()) return ToGrpcStatus(state.status());
    filter = *state;
  }
  absl::StatusOr<std::vector<JobRecord>> jobs = state_->ListJobs(filter);
  if (!jobs.ok()) return ToGrpcStatus(jobs.status());
  for (const JobRecord& job : *jobs) {
    v1::Job* out = resp->add_jobs();
    JobToProto(job, out);
    out->clear_events();
  }
  return grpc::Status::OK;
}

grpc::Status TiresiasService::CancelJob(grpc::ServerContext*,
                                        const v1::CancelJobRequest* req,
                                        v1::CancelJobResponse* resp) {
  absl::StatusOr<JobRecord> job = state_->CancelJob(req->job_id());
  if (!job.ok()) return ToGrpcStatus(job.status());
  JobToProto(*job, resp->mutable_job());
  Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ListNodes(grpc::ServerContext*,
                                        const v1::ListNodesRequest*,
                                        v1::ListNodesResponse* resp) {
  absl::StatusOr<std::vector<v1::Node>> nodes = state_->ListNodes();
  if (!nodes.ok()) return ToGrpcStatus(nodes.status());
  for (v1::Node& node : *nodes) *resp->add_nodes() = std::move(node);
  return grpc::Status::OK;
}

grpc::Status TiresiasService::WatchEvents(
    grpc::ServerContext* ctx, const v1::WatchEventsRequest* req,
    grpc::ServerWriter<v1::JobEvent>* writer) {
  // Catching up reads the log in pages of this many events.
  constexpr int kPage = 512;
  const JobId job = req->job_id();
  if (job < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "job_id: must be a job id, or 0 for every job");
  }
  if (req->has_after_sequence() && req->after_sequence() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "after_sequence: must be >= 0");
  }
  if (job != 0) {
    absl::StatusOr<JobRecord> rec = state_->GetJob(job);
    if (!rec.ok()) return ToGrpcStatus(rec.status());
  }
  // Read before the cursor is fixed, so that an event written meanwhile
  // moves it and is not slept past.
  uint64_t generation = state_->EventGeneration();
  int64_t cursor = 0;
  if (req->has_after_sequence()) {
    cursor = req->after_sequence();
  } else {
    absl::StatusOr<int64_t> last = state_->LastEventSequence();
    if (!last.ok()) return ToGrpcStatus(last.status());
    cursor = *last;
  }
  v1::JobEvent out;
  while (true) {
    if (stopping_.load()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          "the master is shutting down");
    }
    if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
    absl::StatusOr<std::vector<JobEvent>> events =
        state_->EventsAfter(cursor, kPage);
    if (!events.ok()) return ToGrpcStatus(events.status());
    for (const JobEvent& event : *events) {
      cursor = std::max(cursor, event.sequence);
      if (job != 0 && event.job_id != job) continue;
      out.Clear();
      JobEventToProto(event, &out);
      if (!writer->Write(out)) return grpc::Status::CANCELLED;  // gone
    }
    if (static_cast<int>(events->size()) == kPage) continue;  // more stored
    generation = state_->WaitForEvents(generation, kWatchPoll);
  }
}

void TiresiasService::Stop() {
  stopping_.store(true);
  state_->WakeEventWatchers();
}

grpc::Status AgentRegistryService::Register(grpc::ServerContext*,
                                            const v1::RegisterRequest* req,
                                            v1::RegisterResponse* resp) {
  absl::StatusOr<v1::RegisterResponse> out = state_->Register(*req);
  if (!out.ok()) return ToGrpcStatus(out.status());
  *resp = std::move(*out);
  if (on_change_) on_change_();
  return grpc::Status::OK;
}

grpc::Status AgentRegistryService::Heartbeat(grpc::ServerContext*,
                                             const v1::HeartbeatRequest* req,
                                             v1::HeartbeatResponse* resp) {
  absl::StatusOr<v1::HeartbeatResponse> out = state_->Heartbeat(*req);
  if (!out.ok()) return ToGrpcStatus(out.status());
  *resp = std::move(*out);
  if (req->tasks_size() > 0 && on_change_) on_change_();
  return grpc::Status::OK;
}

}  // namespace tiresias

// TiresiasService: submissions (SubmitJob, SubmitJobs), changes to a
// waiting job's request (ModifyJob) and what is checked of each spec
// before the master takes it.
#include <grpcpp/grpcpp.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "core/to_absl.h"
#include "master/proto_convert.h"
#include "master/service.h"
#include "security/rpc_status.h"

namespace tiresias {

namespace {

// The spec's owner: whoever submits it, unless an admin names another.
// `field` names the spec's user field in a refusal.
absl::Status SetOwner(CallAuth& auth, const Principal& who,
                      std::string_view method, std::string_view field,
                      JobRequest& spec) {
  if (spec.user.empty()) {
    spec.user = who.user;
    return absl::OkStatus();
  }
  if (spec.user == who.user || who.admin) return absl::OkStatus();
  return auth.Deny(
      who, method,
      absl::StrCat(ToAbsl(field), ": you are ", who.user,
                   "; only an admin may submit a job for another user (",
                   spec.user, ")"));
}

// A non-admin's job may depend only on jobs of its own user (the jobs a
// user may act on); an admin's on any. PermissionDenied is audited.
absl::Status CheckDependencyOwners(MasterState& state, CallAuth& auth,
                                   const Principal& who,
                                   std::string_view method,
                                   std::string_view field,
                                   const JobRequest& spec) {
  if (spec.dependencies.empty()) return absl::OkStatus();
  absl::Status status = state.CheckDependencyTargets(
      spec,
      [&](const JobRecord& target) {
        return who.admin || target.spec.user == spec.user;
      },
      field);
  if (absl::IsPermissionDenied(status)) {
    return auth.Deny(who, method, std::string(status.message()));
  }
  return status;
}

// Every check of one submitted spec: its owner on a secure master, its
// virtual cluster (set here when it names none), its QOS and exemption
// from preemption (only admins, a QOS that allows it, or `master
// --no-preempt-for users`), and the jobs it depends on. `field` names the
// spec in a refusal ("spec", "jobs[3]"); a PermissionDenied is audited.
absl::Status CheckSubmission(MasterState& state, CallAuth& auth,
                             const Principal& who, std::string_view method,
                             std::string_view field, JobRequest& spec) {
  if (state.options().require_auth) {
    RETURN_IF_ERROR(SetOwner(auth, who, method,
                             absl::StrCat(ToAbsl(field), ".user"), spec));
  }
  auto audited = [&](absl::Status status) {
    return absl::IsPermissionDenied(status)
               ? auth.Deny(who, method, std::string(status.message()))
               : status;
  };
  RETURN_IF_ERROR(audited(state.ResolveVc(spec, who.admin, field)));
  RETURN_IF_ERROR(audited(state.ResolveQos(spec, who.admin, field)));
  return CheckDependencyOwners(state, auth, who, method, field, spec);
}

}  // namespace

grpc::Status TiresiasService::SubmitJob(grpc::ServerContext* ctx,
                                        const v1::SubmitJobRequest* req,
                                        v1::SubmitJobResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "SubmitJob");
  if (!who.ok()) return security::ToGrpc(who.status());
  if (!req->has_spec()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "spec: must be set");
  }
  JobRequest spec = JobSpecFromProto(req->spec());
  if (absl::Status checked =
          CheckSubmission(*state_, auth_, *who, "SubmitJob", "spec", spec);
      !checked.ok()) {
    return security::ToGrpc(checked);
  }
  absl::StatusOr<MasterState::SubmitResult> submitted =
      state_->SubmitJob(spec, req->request_id());
  if (!submitted.ok()) return security::ToGrpc(submitted.status());
  resp->set_job_id(submitted->id);
  resp->set_existing(submitted->existing);
  resp->mutable_array_job_ids()->Assign(submitted->array_job_ids.begin(),
                                        submitted->array_job_ids.end());
  if (!submitted->existing) Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::SubmitJobs(grpc::ServerContext* ctx,
                                         const v1::SubmitJobsRequest* req,
                                         v1::SubmitJobsResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "SubmitJobs");
  if (!who.ok()) return security::ToGrpc(who.status());
  std::vector<JobRequest> specs;
  specs.reserve(req->jobs_size());
  for (int i = 0; i < req->jobs_size(); ++i) {
    specs.push_back(JobSpecFromProto(req->jobs(i)));
    if (absl::Status checked =
            CheckSubmission(*state_, auth_, *who, "SubmitJobs",
                            absl::StrCat("jobs[", i, "]"), specs.back());
        !checked.ok()) {
      return security::ToGrpc(checked);
    }
  }
  absl::StatusOr<MasterState::BulkSubmitResult> submitted =
      state_->SubmitJobs(specs, req->request_id());
  if (!submitted.ok()) return security::ToGrpc(submitted.status());
  resp->mutable_job_ids()->Reserve(static_cast<int>(submitted->ids.size()));
  for (JobId id : submitted->ids) resp->add_job_ids(id);
  resp->set_existing(submitted->existing);
  if (!submitted->existing) Changed();
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ModifyJob(grpc::ServerContext* ctx,
                                        const v1::ModifyJobRequest* req,
                                        v1::ModifyJobResponse* resp) {
  absl::StatusOr<Principal> who = MayActOnJob(*ctx, req->job_id(), "ModifyJob");
  if (!who.ok()) return security::ToGrpc(who.status());
  MasterState::JobChanges changes;
  if (req->has_time_limit_seconds()) {
    changes.time_limit = Seconds{req->time_limit_seconds()};
  }
  if (req->has_gpus()) changes.gpus = req->gpus();
  if (req->has_qos()) changes.qos = req->qos();
  if (req->has_begin_time()) changes.begin = Seconds{req->begin_time()};
  // A new QOS must be one the job's owner may use (an admin: any), and
  // its per-user limit must hold the job's GPUs.
  MasterState::CheckRequest check = [&](const JobRequest& spec) {
    if (!changes.qos && !changes.gpus) return absl::OkStatus();
    absl::Status status = state_->ResolveQos(spec, who->admin, "spec");
    if (absl::IsPermissionDenied(status)) {
      return auth_.Deny(*who, "ModifyJob", std::string(status.message()));
    }
    return status;
  };
  absl::StatusOr<JobRecord> job =
      state_->ModifyJob(req->job_id(), changes, check);
  if (!job.ok()) return security::ToGrpc(job.status());
  JobToProto(*job, resp->mutable_job());
  Changed();
  return grpc::Status::OK;
}

}  // namespace tiresias

// TiresiasService::ListVcs and ListQos: the virtual clusters and priority
// levels with what each uses now (MasterState::ListVcs, ListQos), for
// anyone authenticated.
#include "master/service.h"
#include "security/rpc_status.h"

namespace tiresias {

grpc::Status TiresiasService::ListVcs(grpc::ServerContext* ctx,
                                      const v1::ListVcsRequest*,
                                      v1::ListVcsResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "ListVcs");
  if (!who.ok()) return security::ToGrpc(who.status());
  for (const MasterState::VcView& view : state_->ListVcs()) {
    v1::VcStatus* out = resp->add_vcs();
    VcToProto(view.vc, out->mutable_vc());
    out->set_quota_gpus(view.quota_gpus);
    out->set_guaranteed_gpus(view.guaranteed_gpus);
    out->set_borrowed_gpus(view.borrowed_gpus);
    out->set_running_jobs(view.running_jobs);
    out->set_waiting_jobs(view.waiting_jobs);
    out->mutable_bound_cells()->Assign(view.bound_cells.begin(),
                                       view.bound_cells.end());
  }
  return grpc::Status::OK;
}

grpc::Status TiresiasService::ListQos(grpc::ServerContext* ctx,
                                      const v1::ListQosRequest*,
                                      v1::ListQosResponse* resp) {
  absl::StatusOr<Principal> who = auth_.Client(*ctx, "ListQos");
  if (!who.ok()) return security::ToGrpc(who.status());
  for (const MasterState::QosView& view : state_->ListQos()) {
    v1::QosStatus* out = resp->add_qos();
    QosToProto(view.qos, out->mutable_qos());
    out->set_running_jobs(view.running_jobs);
    out->set_waiting_jobs(view.waiting_jobs);
    out->set_gpus(view.gpus);
  }
  return grpc::Status::OK;
}

}  // namespace tiresias

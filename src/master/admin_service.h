// The administration API (v1::Admin): bearer tokens, the audit log and
// virtual clusters, for admins only (on an --insecure master everyone is
// one). Thin translations onto MasterState; every token issued or revoked
// and every VC set or removed is in the audit log.
#ifndef TIRESIAS_MASTER_ADMIN_SERVICE_H_
#define TIRESIAS_MASTER_ADMIN_SERVICE_H_

#include "master/call_auth.h"
#include "master/master_state.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

class AdminService final : public v1::Admin::Service {
 public:
  explicit AdminService(MasterState* state) : state_(state), auth_(state) {}

  grpc::Status CreateToken(grpc::ServerContext*, const v1::CreateTokenRequest*,
                           v1::CreateTokenResponse*) override;
  grpc::Status ListTokens(grpc::ServerContext*, const v1::ListTokensRequest*,
                          v1::ListTokensResponse*) override;
  grpc::Status RevokeToken(grpc::ServerContext*, const v1::RevokeTokenRequest*,
                           v1::RevokeTokenResponse*) override;
  grpc::Status ListAudit(grpc::ServerContext*, const v1::ListAuditRequest*,
                         v1::ListAuditResponse*) override;
  grpc::Status SetVc(grpc::ServerContext*, const v1::SetVcRequest*,
                     v1::SetVcResponse*) override;
  grpc::Status RemoveVc(grpc::ServerContext*, const v1::RemoveVcRequest*,
                        v1::RemoveVcResponse*) override;
  grpc::Status SetQos(grpc::ServerContext*, const v1::SetQosRequest*,
                      v1::SetQosResponse*) override;
  grpc::Status RemoveQos(grpc::ServerContext*, const v1::RemoveQosRequest*,
                         v1::RemoveQosResponse*) override;
  grpc::Status SetTuning(grpc::ServerContext*, const v1::SetTuningRequest*,
                         v1::SetTuningResponse*) override;

  static constexpr int kMaxAuditEntries = 1000;

 private:
  // The caller if it is an admin; else Unauthenticated or PermissionDenied
  // (audited).
  absl::StatusOr<Principal> Admin(const grpc::ServerContext& ctx,
                                  std::string_view action);

  MasterState* state_;
  CallAuth auth_;
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_ADMIN_SERVICE_H_

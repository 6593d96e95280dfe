// Who a call to the master comes from, and refusing it: the rules of
// proto/tiresias.proto ("Authentication and authorization of the client
// API") in one place. Client calls carry a bearer token or a user
// certificate; agent calls carry their node's certificate. Every refusal is
// an entry in the audit log. On a master without require_auth (--insecure)
// nobody is checked: every caller is an anonymous admin.
#ifndef TIRESIAS_MASTER_CALL_AUTH_H_
#define TIRESIAS_MASTER_CALL_AUTH_H_

#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "master/master_state.h"
#include "master/principal.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

class CallAuth {
 public:
  explicit CallAuth(MasterState* state) : state_(state) {}

  // The caller of a client API call, or Unauthenticated saying what is
  // missing (audited with `action`).
  absl::StatusOr<Principal> Client(const grpc::ServerContextBase& ctx,
                                   std::string_view action);
  // PermissionDenied for `who` doing `action`, saying `why`; audited.
  absl::Status Deny(const Principal& who, std::string_view action,
                    std::string_view why);
  // An action that changes who may do what (a token issued or revoked):
  // audited as done.
  void Done(const Principal& who, std::string_view action,
            std::string_view detail);
  // OK if the call comes from the agent of node `node` (the name in its
  // certificate); else Unauthenticated or PermissionDenied, audited. OK
  // on an insecure master.
  absl::Status Agent(const grpc::ServerContextBase& ctx, std::string_view node,
                     std::string_view action);

 private:
  // Appends one record of this call to the audit log.
  void Record(std::string principal, std::string peer, std::string_view action,
              std::string outcome, std::string detail);

  MasterState* state_;
};

// `job` as `viewer` may see it: its environment only for its owner or an
// admin, its command hidden from others when `hide_commands`.
void RedactFor(const Principal& viewer, bool hide_commands, v1::Job* job);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_CALL_AUTH_H_

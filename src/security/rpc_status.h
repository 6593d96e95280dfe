// The two status conversions between gRPC and abseil, in one place (STYLE.md
// "One place builds RPC channels and credentials"): the master's services
// answer with ToGrpc, the agent reads its master's answers with ToAbsl; no
// other copy. Both keep the code and the message byte for byte: absl and
// gRPC share the canonical code numbering (rpc_status_test.cc checks every
// code by name). OK is OK either way, without a message.
#ifndef TIRESIAS_SECURITY_RPC_STATUS_H_
#define TIRESIAS_SECURITY_RPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tiresias::security {

absl::Status ToAbsl(const grpc::Status& status);
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_RPC_STATUS_H_

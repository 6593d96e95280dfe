// The two status conversions between gRPC and abseil, in one place (STYLE.md
// "One place builds RPC channels and credentials"). Both keep the code and
// the message: absl and gRPC share the canonical code numbering.
#ifndef TIRESIAS_SECURITY_RPC_STATUS_H_
#define TIRESIAS_SECURITY_RPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace tiresias::security {

absl::Status ToAbsl(const grpc::Status& status);
grpc::Status ToGrpc(const absl::Status& status);

}  // namespace tiresias::security

#endif  // TIRESIAS_SECURITY_RPC_STATUS_H_

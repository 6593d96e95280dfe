// The one conversion between absl::Status and grpc::Status (rpc_status.h):
// every canonical code maps to the same-named code the other way, and the
// message travels with it.
#include "security/rpc_status.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tiresias::security {
namespace {

struct CodePair {
  absl::StatusCode absl_code;
  grpc::StatusCode grpc_code;
  const char* name;
};

// Written out by name, not by number, so that a conversion that shifted or
// swapped codes fails here even if it round-trips.
const std::vector<CodePair>& EveryErrorCode() {
  static const std::vector<CodePair> pairs = {
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED, "CANCELLED"},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN, "UNKNOWN"},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT,
       "INVALID_ARGUMENT"},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED,
       "DEADLINE_EXCEEDED"},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND, "NOT_FOUND"},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS,
       "ALREADY_EXISTS"},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED,
       "PERMISSION_DENIED"},
      {absl::StatusCode::kResourceExhausted,
       grpc::StatusCode::RESOURCE_EXHAUSTED, "RESOURCE_EXHAUSTED"},
      {absl::StatusCode::kFailedPrecondition,
       grpc::StatusCode::FAILED_PRECONDITION, "FAILED_PRECONDITION"},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED, "ABORTED"},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE,
       "OUT_OF_RANGE"},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED,
       "UNIMPLEMENTED"},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL, "INTERNAL"},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE,
       "UNAVAILABLE"},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS, "DATA_LOSS"},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED,
       "UNAUTHENTICATED"},
  };
  return pairs;
}

TEST(RpcStatusTest, TheTableCoversEveryErrorCode) {
  // 16 canonical error codes besides OK, in both libraries.
  EXPECT_EQ(EveryErrorCode().size(), 16u);
}

TEST(RpcStatusTest, OkStaysOk) {
  EXPECT_TRUE(ToAbsl(grpc::Status::OK).ok());
  EXPECT_TRUE(ToGrpc(absl::OkStatus()).ok());
  EXPECT_EQ(ToGrpc(absl::OkStatus()).error_message(), "");
}

TEST(RpcStatusTest, EveryGrpcCodeBecomesTheSameAbslCodeWithItsMessage) {
  for (const CodePair& pair : EveryErrorCode()) {
    const std::string message = std::string("job 7: ") + pair.name;
    const absl::Status s = ToAbsl(grpc::Status(pair.grpc_code, message));
    EXPECT_EQ(s.code(), pair.absl_code) << pair.name;
    EXPECT_EQ(s.message(), message) << pair.name;
  }
}

TEST(RpcStatusTest, EveryAbslCodeBecomesTheSameGrpcCodeWithItsMessage) {
  for (const CodePair& pair : EveryErrorCode()) {
    const std::string message = std::string("node a: ") + pair.name;
    const grpc::Status g = ToGrpc(absl::Status(pair.absl_code, message));
    EXPECT_EQ(g.error_code(), pair.grpc_code) << pair.name;
    EXPECT_EQ(g.error_message(), message) << pair.name;
    EXPECT_EQ(g.error_details(), "") << pair.name;
  }
}

TEST(RpcStatusTest, MessagesTravelByteForByte) {
  // Newlines, quotes and bytes that are not UTF-8 are the callers' to show
  // (cli::Printable, security::RedactTokens): the conversion keeps them.
  const std::string odd = "line 1\nline \"2\"\t\xff\xfe end";
  EXPECT_EQ(ToAbsl(grpc::Status(grpc::StatusCode::INTERNAL, odd)).message(),
            odd);
  EXPECT_EQ(ToGrpc(absl::InternalError(odd)).error_message(), odd);
}

}  // namespace
}  // namespace tiresias::security

#include "cli/cluster_client.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace tiresias::cli {

std::string DefaultMasterAddress() {
  const char* env = std::getenv("TIRESIAS_MASTER");
  return env != nullptr && env[0] != '\0' ? std::string(env)
                                          : std::string("127.0.0.1:50051");
}

void AddMasterFlag(CLI::App* cmd, std::string* address) {
  *address = DefaultMasterAddress();
  cmd->add_option("--master", *address,
                  "host:port of the master (default: $TIRESIAS_MASTER, else "
                  "127.0.0.1:50051)");
}

MasterClient::MasterClient(std::string address)
    : address_(std::move(address)) {
  grpc::ChannelArguments args;
  // The master is on the cluster's network; an http_proxy meant for the
  // outside world must not capture it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  stub_ = v1::Tiresias::NewStub(grpc::CreateCustomChannel(
      address_, grpc::InsecureChannelCredentials(), args));
}

std::unique_ptr<grpc::ClientContext> MasterClient::Context() const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  return context;
}

std::string DescribeRpcError(const grpc::Status& status,
                             const std::string& address,
                             const std::string& what) {
  std::string message =
      absl::StrReplaceAll(status.error_message(), {{"\n", " "}});
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StrCat("cannot reach the master at ", address,
                          " (is `tiresias master` running there? --master or "
                          "$TIRESIAS_MASTER picks another): ", message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat("the master at ", address, " did not answer within ",
                          kRpcDeadline.count(), " s");
    case grpc::StatusCode::NOT_FOUND:
      return absl::StrCat(what, ": not found on the master at ", address);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::StrCat(what, ": rejected by the master: ", message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return absl::StrCat(what, ": ", message);
    default:
      return absl::StrCat(what, ": the master at ", address, " answered ",
                          static_cast<int>(status.error_code()), ": ",
                          message);
  }
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tiresias: %s\n", message.c_str());
  return 1;
}

std::string JobStateName(v1::JobState state) {
  std::string name = v1::JobState_Name(state);
  if (name.rfind("JOB_STATE_", 0) == 0) name = name.substr(10);
  return name.empty() ? absl::StrCat("state ", static_cast<int>(state))
                      : absl::AsciiStrToLower(name);
}

std::string NodeStateName(v1::NodeState state) {
  std::string name = v1::NodeState_Name(state);
  if (name.rfind("NODE_STATE_", 0) == 0) name = name.substr(11);
  return name.empty() ? absl::StrCat("state ", static_cast<int>(state))
                      : absl::AsciiStrToLower(name);
}

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_FINISHED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "-";
  const int64_t total = static_cast<int64_t>(seconds);
  const int64_t days = total / 86400;
  const int64_t h = total % 86400 / 3600, m = total % 3600 / 60,
                s = total % 60;
  if (days > 0) return absl::StrFormat("%d-%02d:%02d:%02d", days, h, m, s);
  return absl::StrFormat("%d:%02d:%02d", h, m, s);
}

std::string FormatTime(double unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

double NowUnixSeconds() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  // Cannot fail for a message we hold (no Any fields to resolve).
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

}  // namespace tiresias::cli

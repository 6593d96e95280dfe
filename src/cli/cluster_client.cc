#include "cli/cluster_client.h"

#include <grpc/grpc.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "api/api_json.h"
#include "cli/job_ref.h"
#include "cli/printable.h"
#include "core/status_macros.h"

namespace tiresias::cli {

std::string DefaultMasterAddress() {
  const char* env = std::getenv("TIRESIAS_MASTER");
  return env != nullptr && env[0] != '\0' ? std::string(env)
                                          : std::string("127.0.0.1:50051");
}

void AddMasterFlag(CLI::App* cmd, std::string* address) {
  *address = DefaultMasterAddress();
  cmd->add_option("--master", *address,
                  "host:port of the master, or of each master of one state "
                  "dir, comma-separated: the one leading answers (default: "
                  "$TIRESIAS_MASTER, else 127.0.0.1:50051)");
}

absl::Status LoadPendingTls(ClientCredentials* creds) {
  if (!creds->tls_pending) return absl::OkStatus();
  absl::StatusOr<security::TlsConfig> tls =
      security::LoadTlsConfig(creds->tls_files);
  if (!tls.ok()) {
    return absl::Status(tls.status().code(),
                        absl::StrCat("TIRESIAS_CA, TIRESIAS_CERT, "
                                     "TIRESIAS_KEY: ",
                                     tls.status().message()));
  }
  creds->tls = *std::move(tls);
  creds->tls_pending = false;
  return absl::OkStatus();
}

absl::StatusOr<ClientCredentials> LoadClientCredentials() {
  auto env = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value != nullptr ? std::string(value) : std::string();
  };
  ClientCredentials creds;
  const std::string ca = env("TIRESIAS_CA");
  if (ca.empty()) {
    creds.tls = security::InsecureTlsConfig();
  } else {
    creds.tls_files =
        security::TlsFiles{ca, env("TIRESIAS_CERT"), env("TIRESIAS_KEY")};
    creds.tls_pending = true;
    if (!control::Enabled()) RETURN_IF_ERROR(LoadPendingTls(&creds));
  }
  creds.token = env("TIRESIAS_TOKEN");
  const std::string token_file = env("TIRESIAS_TOKEN_FILE");
  if (creds.token.empty() && !token_file.empty()) {
    std::ifstream in(token_file);
    std::string line;
    if (!in || !std::getline(in, line)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "TIRESIAS_TOKEN_FILE ", token_file, ": cannot read a token from it"));
    }
    creds.token = std::string(absl::StripAsciiWhitespace(line));
  }
  creds.server_name = env("TIRESIAS_MASTER_NAME");
  return creds;
}

std::string DropClientCredentials(absl::string_view who) {
  std::vector<std::string> dropped;
  for (const char* name : kClientCredentialVariables) {
    if (std::getenv(name) == nullptr) continue;
    unsetenv(name);
    dropped.push_back(name);
  }
  if (dropped.empty()) return "";
  return absl::StrCat(
      who, ": dropped ", absl::StrJoin(dropped, ", "),
      " from its environment: client credentials, which the daemon does not "
      "use and its jobs must never inherit");
}

MasterClient::MasterClient(std::string address)
    : address_(std::move(address)) {
  absl::StatusOr<ClientCredentials> creds = LoadClientCredentials();
  if (!creds.ok()) {
    std::fprintf(stderr, "tiresias: %s\n",
                 std::string(creds.status().message()).c_str());
    std::exit(1);  // a command line tool: nothing to clean up
  }
  creds_ = *std::move(creds);
}

MasterClient::MasterClient(std::string address, ClientCredentials creds)
    : address_(std::move(address)), creds_(std::move(creds)) {}

namespace {
std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}
}  // namespace

const control::Endpoint* MasterClient::ControlEndpoint() {
  if (!endpoint_looked_up_) {
    endpoint_looked_up_ = true;
    if (control::Enabled()) {
      endpoint_ = control::EndpointFor(
          address_, Env("TIRESIAS_CA"), Env("TIRESIAS_CERT"),
          Env("TIRESIAS_KEY"), creds_.server_name);
    }
  }
  return endpoint_ ? &*endpoint_ : nullptr;
}

std::optional<grpc::Status> MasterStub::ViaControl(
    const char* method, const grpc::ClientContext& context,
    const google::protobuf::Message& request,
    google::protobuf::Message* response) {
  const control::Endpoint* endpoint = client_->ControlEndpoint();
  if (endpoint == nullptr) return std::nullopt;
  control::Request call;
  call.method = absl::StrCat("/tiresias.v1.Tiresias/", method);
  call.token = client_->creds_.token;
  const auto deadline = context.deadline();
  call.timeout_seconds =
      deadline == std::chrono::system_clock::time_point::max()
          ? std::chrono::duration<double>(kRpcDeadline).count()
          : std::max(0.001, std::chrono::duration<double>(
                                deadline - std::chrono::system_clock::now())
                                .count());
  if (!request.SerializeToString(&call.body)) return std::nullopt;
  absl::StatusOr<control::Response> answer = control::Call(*endpoint, call);
  if (!answer.ok() || control::CallDirectly(*answer)) {
    // No control process, nothing sent whole, or it asks for a direct call:
    // made directly, and a loop's next command may start one.
    control::NoteDirectCall(*endpoint, client_->address_);
    return std::nullopt;
  }
  // Its other answers stand: it tried the same address with the same
  // credentials.
  if (answer->code != 0) {
    return grpc::Status(static_cast<grpc::StatusCode>(answer->code),
                        answer->message);
  }
  if (!response->ParseFromString(answer->body)) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "the control process returned an unreadable answer");
  }
  return grpc::Status::OK;
}

v1::Tiresias::Stub& MasterStub::Direct() { return client_->grpc_stub(); }

std::unique_ptr<grpc::ClientReader<v1::JobEvent>> MasterStub::WatchEvents(
    grpc::ClientContext* context, const v1::WatchEventsRequest& request) {
  return Direct().WatchEvents(context, request);
}

v1::Tiresias::Stub& MasterClient::grpc_stub() {
  if (stub_ == nullptr) Connect(/*fresh=*/false);
  return *stub_;
}

std::shared_ptr<grpc::Channel> MasterClient::channel() {
  if (channel_ == nullptr) Connect(/*fresh=*/false);
  return channel_;
}

void MasterClient::Reconnect() { Connect(/*fresh=*/true); }

void MasterClient::Connect(bool fresh) {
  // gRPC starts once per process and is never shut down: its shutdown, when
  // the last channel goes, joins its threads, which cost every command
  // about a millisecond; the process's exit frees it all the same.
  static const bool kGrpcStarted = (grpc_init(), true);
  (void)kGrpcStarted;  // only its initialization matters
  if (absl::Status loaded = LoadPendingTls(&creds_); !loaded.ok()) {
    std::fprintf(stderr, "tiresias: %s\n",
                 std::string(loaded.message()).c_str());
    std::exit(1);  // as the constructor does with a bad credential
  }
  grpc::ChannelArguments args;
  // The master is on the cluster's network; an http_proxy meant for the
  // outside world must not capture it.
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  // A connection of its own, without the reconnect backoff (up to two
  // minutes) that the process-wide pool keeps for an address that failed.
  if (fresh) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  security::DialOptions dial;
  dial.args = args;
  dial.target_name_override = creds_.server_name;
  // Reads, CancelJob, ModifyJob (absolute values), SubmitJob and
  // SubmitJobs (with their request ids)
  // may run twice; the Admin service's CreateToken may not, so it is not
  // retried.
  dial.retry_services = {"tiresias.v1.Tiresias"};
  channel_ = security::Dial(address_, creds_.tls, dial);
  stub_ = v1::Tiresias::NewStub(channel_);
}

std::unique_ptr<grpc::ClientContext> MasterClient::Context() const {
  std::unique_ptr<grpc::ClientContext> context = StreamContext();
  context->set_deadline(std::chrono::system_clock::now() + kRpcDeadline);
  // Several masters (a leader and standbys): a call made while a standby
  // takes over waits for it (up to the deadline) instead of failing.
  if (security::SplitAddresses(address_).size() > 1) {
    context->set_wait_for_ready(true);
  }
  return context;
}

std::unique_ptr<grpc::ClientContext> MasterClient::StreamContext() const {
  auto context = std::make_unique<grpc::ClientContext>();
  if (!creds_.token.empty()) security::AttachToken(context.get(), creds_.token);
  return context;
}

std::string DescribeRpcError(const grpc::Status& status,
                             const std::string& address,
                             const std::string& what) {
  std::string message =
      absl::StrReplaceAll(status.error_message(), {{"\n", " "}});
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return absl::StrCat(
          "cannot reach the master at ", address,
          " (is `tiresias master` running there? --master or "
          "$TIRESIAS_MASTER picks another; a master with TLS needs "
          "TIRESIAS_CA, one started with --insecure needs it unset): ",
          message);
    case grpc::StatusCode::UNAUTHENTICATED:
      return absl::StrCat(what, ": the master does not know who you are: ",
                          message);
    case grpc::StatusCode::PERMISSION_DENIED:
      return absl::StrCat(what, ": not allowed: ", message);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::StrCat("the master at ", address, " did not answer within ",
                          kRpcDeadline.count(), " s");
    case grpc::StatusCode::NOT_FOUND:
      return absl::StrCat(what, ": not found on the master at ", address);
    case grpc::StatusCode::INVALID_ARGUMENT:
      return absl::StrCat(what, ": rejected by the master: ", message);
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return absl::StrCat(what, ": ", message);
    default:
      return absl::StrCat(what, ": the master at ", address, " answered ",
                          static_cast<int>(status.error_code()), ": ",
                          message);
  }
}

grpc::Status RetryWhileAborted(const std::function<grpc::Status()>& attempt) {
  constexpr int kAttempts = 5;
  grpc::Status s;
  for (int i = 0; i < kAttempts; ++i) {
    s = attempt();
    if (s.error_code() != grpc::StatusCode::ABORTED) break;
  }
  return s;
}

absl::Status ForEachListedJob(MasterClient& client, v1::ListJobsRequest req,
                              const std::string& what,
                              const std::function<void(v1::Job&)>& fn) {
  while (true) {
    v1::ListJobsResponse page;
    const grpc::Status status =
        client.stub().ListJobs(client.Context().get(), req, &page);
    if (!status.ok()) {
      return absl::UnavailableError(
          DescribeRpcError(status, client.address(), what));
    }
    for (v1::Job& job : *page.mutable_jobs()) fn(job);
    if (page.next_page_token().empty()) return absl::OkStatus();
    req.set_page_token(page.next_page_token());
  }
}

grpc::Status GetJob(MasterClient& client, int64_t id, v1::Job* job) {
  v1::GetJobRequest req;
  req.set_job_id(id);
  v1::GetJobResponse resp;
  grpc::Status status =
      client.stub().GetJob(client.Context().get(), req, &resp);
  if (status.ok()) *job = resp.job();
  return status;
}

absl::StatusOr<int64_t> ResolveJobRef(MasterClient& client,
                                      absl::string_view text) {
  absl::StatusOr<JobRef> ref = ParseJobRef(text);
  if (!ref.ok()) return ref.status();
  if (ref->array_id == 0) return ref->id;
  const std::string what = absl::StrCat("job ", text);
  v1::ListJobsRequest req;
  req.set_array_id(ref->array_id);
  req.set_page_size(5000);
  bool any = false;
  std::optional<int64_t> found;
  RETURN_IF_ERROR(ForEachListedJob(client, req, what, [&](v1::Job& job) {
    any = true;
    if (job.array_index() == ref->index) found = job.id();
  }));
  if (found) return *found;
  return absl::NotFoundError(
      any ? absl::StrCat(what, ": array ", ref->array_id, " has no index ",
                         ref->index)
          : absl::StrCat(what, ": no array ", ref->array_id,
                         " on the master at ", client.address()));
}

int Fail(const std::string& message) {
  std::fprintf(stderr, "tiresias: %s\n", message.c_str());
  return 1;
}

std::string JobStateName(v1::JobState state) {
  return api::JobStateWord(state);
}

bool ParseJobStateName(absl::string_view word, v1::JobState* state) {
  return api::ParseJobStateWord(absl::AsciiStrToLower(word), state);
}

std::string NodeStateName(v1::NodeState state) {
  return api::NodeStateWord(state);
}

std::string OwnerToSend(const ClientCredentials& creds) {
  if (!creds.tls.insecure) return "";
  if (const char* user = std::getenv("USER"); user && user[0]) return user;
  if (const passwd* pw = getpwuid(getuid()); pw && pw->pw_name) {
    return pw->pw_name;
  }
  return "";
}

bool IsFinal(v1::JobState state) {
  return state == v1::JOB_STATE_FINISHED || state == v1::JOB_STATE_FAILED ||
         state == v1::JOB_STATE_CANCELLED || state == v1::JOB_STATE_TIMEOUT;
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

std::string DescribeTuning(const v1::TuningStatus& s) {
  const v1::Tuning& t = s.tuning();
  std::string out = absl::StrCat(
      "queues ",
      t.thresholds().empty()
          ? std::string("1 (no bound)")
          : absl::StrCat(absl::StrJoin(t.thresholds(), ":",
                                       [](std::string* o, double v) {
                                         absl::StrAppend(
                                             o, absl::StrFormat("%g", v));
                                       }),
                         " GPU-s (K = ", t.thresholds_size() + 1, ")"),
      ", PROMOTEKNOB ",
      t.promote_knob() == 0 ? std::string("off")
                            : absl::StrFormat("%g", t.promote_knob()),
      ", order ", t.queue_order());
  if (s.source() != "applied") return absl::StrCat(out, "; from the flags");
  absl::StrAppend(&out, "; applied ", FormatTime(s.applied_at()), " by ",
                  Printable(s.applied_by()));
  if (!s.note().empty()) absl::StrAppend(&out, " (", Printable(s.note()), ")");
  if (s.drift_jobs_before() > 0) {
    absl::StrAppend(
        &out, s.drift() ? "; DRIFT: " : "; no drift: ",
        absl::StrFormat("KS D = %.3f, p = %.2g, %d jobs tuned on, %d since",
                        s.drift_statistic(), s.drift_p_value(),
                        s.drift_jobs_before(), s.drift_jobs_recent()));
  }
  return out;
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

}  // namespace tiresias::cli

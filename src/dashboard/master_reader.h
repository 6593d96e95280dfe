// What the dashboard reads from the master for one browser, as the JSON of
// its /api answers (dashboard_server.h). Every call carries the token of
// the browser's session (none for an --insecure master), so the master
// applies that user's own rights: others' jobs come without their
// environment, and without their command under --hide-commands. The reader
// holds no credential of its own. Thread-safe (gRPC stubs are).
#ifndef TIRESIAS_DASHBOARD_MASTER_READER_H_
#define TIRESIAS_DASHBOARD_MASTER_READER_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

// One /api answer: an HTTP status and its JSON body ({"error": "..."} when
// not 200).
struct ApiAnswer {
  int status = 200;
  nlohmann::json body;
  // The master refused the token (UNAUTHENTICATED: revoked, expired): the
  // session that holds it is over.
  bool unauthenticated = false;
};

class MasterReader {
 public:
  // `channel` to the master at `master_address` (named in errors).
  MasterReader(std::string master_address,
               std::shared_ptr<grpc::Channel> channel);

  // {"now", "master", "viewer": {"user", "admin", "insecure"}, "jobs": [...],
  // "nodes": [...]}: every job, read page by page, and every node, in the
  // JSON of `tiresias jobs --json` and `nodes --json` (cli/api_json.h,
  // docs/json.md); the viewer from WhoAmI.
  // `token` empty: the call carries none.
  ApiAnswer State(const std::string& token) const;
  // One job with its environment (as the master shows it to this user) and
  // events, as `tiresias job ID --json` prints it: 400 for a malformed id,
  // 404 for an unknown one.
  ApiAnswer Job(const std::string& token, const std::string& id_text) const;
  // The master's WhoAmI for `token`.
  grpc::Status WhoAmI(const std::string& token, v1::WhoAmIResponse* out) const;
  // One line saying why a call failed: the master's address, the code, its
  // message (tokens redacted), and a hint when it could not be reached.
  std::string Failure(const grpc::Status& status) const;

 private:
  std::unique_ptr<grpc::ClientContext> Context(const std::string& token) const;
  // Every job as listed (api::JobJson), its wait measured to `now`.
  grpc::Status AllJobs(const std::string& token, double now,
                       nlohmann::json* out) const;
  ApiAnswer Failed(const grpc::Status& status) const;

  std::string master_address_;
  std::unique_ptr<v1::Tiresias::Stub> stub_;
};

}  // namespace tiresias

#endif  // TIRESIAS_DASHBOARD_MASTER_READER_H_

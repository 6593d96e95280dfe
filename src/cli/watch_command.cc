// `tiresias watch [JOB]`: prints the master's job events as they happen
// (WatchEvents), one line each, TIME JOB KIND DETAIL, or one compact JSON
// object a line with --json. Without JOB: every job's events from now on,
// until Ctrl-C. With JOB: that job's history so far, then its new events,
// until it ends (finished, failed, cancelled). --after SEQ replays stored
// events with a greater sequence first.
#include <cstdio>
#include <memory>
#include <string>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"

namespace tiresias {
namespace {

struct WatchFlags {
  std::string master;
  int64_t job = 0;  // 0: every job
  int64_t after = -1;  // -1: not given
  bool json = false;
};

bool EndsJob(const std::string& kind) {
  return kind == "finished" || kind == "failed" || kind == "cancelled";
}

std::string OneLineJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = false;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

int Watch(const WatchFlags& f) {
  cli::MasterClient client(f.master);
  const std::string what =
      f.job != 0 ? absl::StrCat("watch job ", f.job) : "watch";
  v1::WatchEventsRequest req;
  req.set_job_id(f.job);
  if (f.after >= 0) {
    req.set_after_sequence(f.after);
  } else if (f.job != 0) {
    req.set_after_sequence(0);  // the job's history first
  }
  // No deadline: the stream lasts until the job ends or Ctrl-C. Fails fast
  // (UNAVAILABLE) when no master listens.
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader =
      client.stub().WatchEvents(&ctx, req);
  if (!f.json) {
    std::printf("%-19s  %6s  %-10s %s\n", "TIME", "JOB", "KIND", "DETAIL");
    std::fflush(stdout);
  }
  v1::JobEvent event;
  while (reader->Read(&event)) {
    if (f.json) {
      std::printf("%s\n", OneLineJson(event).c_str());
    } else {
      std::printf("%-19s  %6lld  %-10s %s\n",
                  cli::FormatTime(event.time()).c_str(),
                  static_cast<long long>(event.job_id()), event.kind().c_str(),
                  event.detail().c_str());
    }
    std::fflush(stdout);
    if (f.job != 0 && event.job_id() == f.job && EndsJob(event.kind())) {
      ctx.TryCancel();
      (void)reader->Finish();
      return 0;
    }
  }
  grpc::Status status = reader->Finish();
  if (status.ok()) return 0;
  return cli::Fail(cli::DescribeRpcError(status, f.master, what));
}

}  // namespace

void AddWatchCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<WatchFlags>();
  CLI::App* cmd = app.add_subcommand(
      "watch",
      "Print job events as they happen (TIME JOB KIND DETAIL). Without JOB: "
      "every job's, until Ctrl-C. With JOB: its history, then its new "
      "events until it ends.");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("job", f->job, "Job id (default: every job)");
  cmd->add_option("--after", f->after,
                  "First replay the stored events with a greater sequence");
  cmd->add_flag("--json", f->json, "One JSON object a line (proto fields)");
  cmd->callback([f, exit_code] { *exit_code = Watch(*f); });
}

}  // namespace tiresias

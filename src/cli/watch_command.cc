// `tiresias watch [JOB]`: prints the master's job events as they happen
// (WatchEvents), one line each, TIME JOB KIND DETAIL, or one compact JSON
// object a line with --json. Without JOB: every job's events from now on,
// until Ctrl-C. With JOB: that job's history so far, then its new events,
// until it ends (finished, failed, cancelled). --after SEQ replays stored
// events with a greater sequence first; with JOB, a job that ended at or
// before SEQ has nothing left to show, and the command returns at once.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/api_json.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/printable.h"
#include "cli/shell_help.h"
#include "core/stream_keys.h"

namespace tiresias {
namespace {

struct WatchFlags {
  std::string master;
  int64_t job = 0;  // 0: every job
  int64_t after = -1;  // -1: not given
  bool json = false;
};

bool EndsJob(const std::string& kind) {
  return kind == "finished" || kind == "failed" || kind == "cancelled" ||
         kind == "timeout";
}

void PrintHeader(bool json) {
  if (json) return;
  std::printf("%-19s  %6s  %-10s %s\n", "TIME", "JOB", "KIND", "DETAIL");
  std::fflush(stdout);
}

void PrintEvent(const v1::JobEvent& event, bool json) {
  if (json) {
    std::printf("%s\n",
                api::Dump(api::JobEventJson(event), /*one_line=*/true).c_str());
  } else {
    // Details quote user-controlled text (node names, reasons): one line
    // per event whatever they hold.
    std::printf("%-19s  %6lld  %-10s %s\n",
                cli::FormatTime(event.time()).c_str(),
                static_cast<long long>(event.job_id()),
                cli::Printable(event.kind()).c_str(),
                cli::Printable(event.detail()).c_str());
  }
  std::fflush(stdout);
}

// True if `job` has ended and the event that ended it has a sequence <=
// `after`: a stream from `after` would wait forever for its end.
bool EndedAtOrBefore(const v1::Job& job, int64_t after) {
  if (!cli::IsFinal(job.state())) return false;
  for (const v1::JobEvent& event : job.events()) {
    if (EndsJob(event.kind()) && event.sequence() > after) return false;
  }
  return true;
}

int Watch(const WatchFlags& f) {
  cli::MasterClient client(f.master);
  const std::string what =
      f.job != 0 ? absl::StrCat("watch job ", f.job) : "watch";
  if (f.job != 0 && f.after >= 0) {
    // Its stored events are all it will ever have once it has ended.
    v1::GetJobRequest get;
    get.set_job_id(f.job);
    v1::GetJobResponse got;
    grpc::Status status =
        client.stub().GetJob(client.Context().get(), get, &got);
    if (!status.ok()) {
      return cli::Fail(cli::DescribeRpcError(status, f.master, what));
    }
    if (EndedAtOrBefore(got.job(), f.after)) {
      PrintHeader(f.json);
      for (const v1::JobEvent& event : got.job().events()) {
        if (event.sequence() > f.after) PrintEvent(event, f.json);
      }
      return 0;
    }
  }
  v1::WatchEventsRequest req;
  req.set_job_id(f.job);
  if (f.after >= 0) {
    req.set_after_sequence(f.after);
  } else if (f.job != 0) {
    req.set_after_sequence(0);  // the job's history first
  }
  // No deadline: the stream lasts until the job ends or Ctrl-C. Fails fast
  // (UNAVAILABLE) when no master listens, and UNAUTHENTICATED without a
  // credential the master accepts: it carries the caller's, as every call.
  std::unique_ptr<grpc::ClientContext> ctx = client.StreamContext();
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader =
      client.stub().WatchEvents(ctx.get(), req);
  // The master sends its initial metadata once it follows the event log:
  // an event written after the header is printed is not missed. A refusal
  // (an unknown job, too many streams) comes without its key: no header.
  // (A master older than the key: the header comes before the first
  // event.)
  reader->WaitForInitialMetadata();
  bool header =
      ctx->GetServerInitialMetadata().count(std::string(kWatchFollowing)) > 0;
  if (header) PrintHeader(f.json);
  v1::JobEvent event;
  while (reader->Read(&event)) {
    if (!header) {
      PrintHeader(f.json);
      header = true;
    }
    PrintEvent(event, f.json);
    if (f.job != 0 && event.job_id() == f.job && EndsJob(event.kind())) {
      ctx->TryCancel();
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
  cmd->add_option("job", f->job, "Job id (default: every job)")
      ->type_name(cli::kJobType);
  cmd->add_option("--after", f->after,
                  "First replay the stored events with a greater sequence")
      ->check([](const std::string& value) -> std::string {
        // -1 is the internal "not given"; never let a user's -1 mean that.
        return !value.empty() && value[0] == '-'
                   ? "expected a sequence number >= 0, got " + value
                   : "";
      });
  cmd->add_flag("--json", f->json, "One JSON object a line (docs/json.md)");
  cmd->callback([f, exit_code] { *exit_code = Watch(*f); });
}

}  // namespace tiresias

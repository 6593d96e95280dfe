// `tiresias port-forward JOB [LOCAL:]REMOTE`: reaches a server a running
// job listens on (a notebook, TensorBoard) from this machine, as kubectl
// port-forward does: it listens on 127.0.0.1:LOCAL (0 or left out: REMOTE;
// with LOCAL 0 a free one, printed) and relays each connection through the
// master to the job's node, where the agent connects to REMOTE on its
// loopback, if one of the job's own processes listens there (the job's
// owner alone may).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/shell_help.h"
#include "core/write_all.h"

namespace tiresias {
namespace {

using cli::Fail;
using cli::MasterClient;

struct ForwardFlags {
  std::string master;
  std::string ref;
  std::string ports;  // [LOCAL:]REMOTE
  int rank = 0;
  bool once = false;  // one connection, then exit (scripts, tests)
};

// Relays one accepted connection `fd` to port `remote` of the job's task.
void Relay(MasterClient& client, int64_t id, int rank, int remote, int fd) {
  auto ctx = client.StreamContext();
  auto stream = client.grpc_stub().JobIo(ctx.get());
  v1::IoRequest first;
  first.mutable_open()->set_job_id(id);
  first.mutable_open()->set_rank(rank);
  first.mutable_open()->set_forward_port(remote);
  v1::IoResponse r;
  if (!stream->Write(first) || !stream->Read(&r)) {
    stream->WritesDone();
    grpc::Status s = stream->Finish();
    std::fprintf(stderr, "tiresias: %s\n",
                 cli::DescribeRpcError(s, client.address(),
                                       absl::StrCat("port-forward to job ", id))
                     .c_str());
    close(fd);
    return;
  }
  std::thread down([&] {
    v1::IoResponse in;
    while (stream->Read(&in)) {
      // SIGPIPE is ignored: a local client gone is a failed write.
      if (in.has_output()) WriteAll(fd, in.output());
      if (in.has_end()) break;
    }
    shutdown(fd, SHUT_RDWR);  // ends the read below
  });
  std::string buf(32 << 10, '\0');
  while (true) {
    const ssize_t n = read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    v1::IoRequest req;
    req.set_input(buf.substr(0, static_cast<size_t>(n)));
    if (!stream->Write(req)) break;
  }
  // Our side is done; the job's reply still comes (a half-close, as
  // HTTP/1.0 clients and `nc -N` make), until its side ends.
  v1::IoRequest half;
  half.set_close_input(true);
  stream->Write(half);
  down.join();
  stream->WritesDone();
  stream->Finish();
  close(fd);
}

int Forward(const ForwardFlags& f) {
  int local = 0, remote = 0;
  std::vector<std::string> parts = absl::StrSplit(f.ports, ':');
  bool ok = parts.size() == 1   ? absl::SimpleAtoi(parts[0], &remote)
            : parts.size() == 2 ? absl::SimpleAtoi(parts[0], &local) &&
                                      absl::SimpleAtoi(parts[1], &remote)
                                : false;
  if (!ok || remote < 1 || remote > 65535 || local < 0 || local > 65535) {
    return Fail(absl::StrCat("port-forward: ", f.ports,
                             ": expected [LOCAL:]REMOTE, ports 1 to 65535 "
                             "(LOCAL 0: any free one), e.g. 8888:8888"));
  }
  if (parts.size() == 1) local = remote;
  // Shared with the connections' threads, which may outlive this call.
  auto shared = std::make_shared<MasterClient>(f.master);
  MasterClient& client = *shared;
  absl::StatusOr<int64_t> id = cli::ResolveJobRef(client, f.ref);
  if (!id.ok()) return Fail(std::string(id.status().message()));
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address = {};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(local));
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof(address)) !=
          0 ||
      listen(listener, 64) != 0) {
    return Fail(absl::StrCat("port-forward: cannot listen on 127.0.0.1:", local,
                             ": ", std::strerror(errno),
                             " (choose another LOCAL port, or 0)"));
  }
  socklen_t length = sizeof(address);
  getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length);
  std::printf("Forwarding from 127.0.0.1:%d -> job %lld port %d\n",
              ntohs(address.sin_port), static_cast<long long>(*id), remote);
  std::fflush(stdout);
  signal(SIGPIPE, SIG_IGN);  // a closed connection is a failed write
  while (true) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      return Fail(absl::StrCat("port-forward: accept: ", std::strerror(errno)));
    }
    if (f.once) {
      Relay(client, *id, f.rank, remote, fd);
      return 0;
    }
    std::thread([shared, id = *id, rank = f.rank, remote, fd] {
      Relay(*shared, id, rank, remote, fd);
    }).detach();
  }
}

}  // namespace

void AddPortForwardCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<ForwardFlags>();
  CLI::App* cmd = app.add_subcommand(
      "port-forward",
      "Reach a server a running job listens on (a notebook, TensorBoard) "
      "at 127.0.0.1:LOCAL here, through the master, e.g. `tiresias "
      "port-forward 12 8888:8888`. Only the job's owner, and only ports one "
      "of the job's own processes listens on. Runs until Ctrl-C");
  cli::AddMasterFlag(cmd, &f->master);
  cmd->add_option("job", f->ref, "Job id, or ARRAYID_INDEX (e.g. 12_3)")
      ->type_name(cli::kJobType)
      ->required();
  cmd->add_option("ports", f->ports,
                  "[LOCAL:]REMOTE: listen on LOCAL here (0: any free one; "
                  "left out: REMOTE), reach REMOTE in the job")
      ->required();
  cmd->add_option("--rank", f->rank, "Which task (node) of the job (default 0)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--once", f->once, "Serve one connection, then exit");
  cmd->callback([f, exit_code] { *exit_code = Forward(*f); });
}

}  // namespace tiresias

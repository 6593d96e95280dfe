// AgentLogService::TaskIo (log_service.h): a task's I/O, its log as it
// grows, or a connection to a port it listens on, for the master to relay.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/log_service.h"
#include "agent/task_file.h"

namespace tiresias {
namespace {

using Stream = grpc::ServerReaderWriter<v1::IoResponse, v1::IoRequest>;

constexpr std::chrono::milliseconds kTailPoll{100};

// A listening TCP socket: its inode and where to connect to reach it.
struct Listener {
  uint64_t inode = 0;
  sockaddr_storage address = {};
  socklen_t length = 0;
};

// The listening sockets on `port` (/proc/net/tcp and tcp6: this agent's
// network namespace, which its tasks share).
std::vector<Listener> ListenersOn(int port) {
  std::vector<Listener> out;
  for (const bool v6 : {false, true}) {
    std::ifstream in(v6 ? "/proc/net/tcp6" : "/proc/net/tcp");
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid,
          timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >>
          retransmits >> uid >> timeout >> inode;
      if (state != "0A") continue;  // TCP_LISTEN
      const size_t colon = local.find(':');
      if (colon == std::string::npos) continue;
      unsigned long local_port =
          std::strtoul(local.c_str() + colon + 1, nullptr, 16);
      if (static_cast<int>(local_port) != port) continue;
      Listener l;
      if (!absl::SimpleAtoi(inode, &l.inode)) continue;
      const std::string hex = local.substr(0, colon);
      if (!v6 && hex.size() == 8) {
        sockaddr_in a = {};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        // The kernel prints the address as the host-order int of its
        // network-order bytes.
        a.sin_addr.s_addr =
            static_cast<uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
        if (a.sin_addr.s_addr == htonl(INADDR_ANY)) {
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        std::memcpy(&l.address, &a, sizeof(a));
        l.length = sizeof(a);
      } else if (v6 && hex.size() == 32) {
        sockaddr_in6 a = {};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(static_cast<uint16_t>(port));
        for (int word = 0; word < 4; ++word) {
          const uint32_t w = static_cast<uint32_t>(
              std::strtoul(hex.substr(word * 8, 8).c_str(), nullptr, 16));
          std::memcpy(&a.sin6_addr.s6_addr[word * 4], &w, 4);
        }
        if (IN6_IS_ADDR_UNSPECIFIED(&a.sin6_addr))
          a.sin6_addr = in6addr_loopback;
        std::memcpy(&l.address, &a, sizeof(a));
        l.length = sizeof(a);
      } else {
        continue;
      }
      out.push_back(l);
    }
  }
  return out;
}

// The processes of the task led by `pgid`: those in its process group or
// the session its shim leads (a shim with a terminal leads one with its
// group's id), and their descendants, which may have left both (crun puts
// a container's process in a session of its own: container.h).
std::vector<pid_t> TaskProcesses(pid_t pgid) {
  struct Proc {
    pid_t ppid = 0;
    bool in_task = false;
  };
  std::map<pid_t, Proc> procs;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return {};
  while (dirent* entry = readdir(proc)) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
    std::string stat((std::istreambuf_iterator<char>(stat_file)),
                     std::istreambuf_iterator<char>());
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(stat.substr(paren + 1));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    rest >> state >> ppid >> pgrp >> session;
    procs[pid] = {static_cast<pid_t>(ppid), pgrp == pgid || session == pgid};
  }
  closedir(proc);
  std::vector<pid_t> task;
  for (const auto& [pid, p] : procs) {
    // Up the parents (at most as many steps as there are processes).
    bool in_task = p.in_task;
    pid_t up = p.ppid;
    for (size_t steps = 0; !in_task && up > 1 && steps < procs.size();
         ++steps) {
      auto parent = procs.find(up);
      if (parent == procs.end()) break;
      in_task = parent->second.in_task;
      up = parent->second.ppid;
    }
    if (in_task) task.push_back(pid);
  }
  return task;
}

// Which of `inodes` a process of the task led by `pgid` (TaskProcesses)
// holds; nullopt: none.
std::optional<uint64_t> TaskSocket(pid_t pgid,
                                   const std::set<uint64_t>& inodes) {
  for (pid_t pid : TaskProcesses(pgid)) {
    const std::string fd_dir = absl::StrCat("/proc/", pid, "/fd");
    DIR* fds = opendir(fd_dir.c_str());
    if (fds == nullptr) continue;
    std::optional<uint64_t> found;
    while (dirent* fd = readdir(fds)) {
      char target[64];
      const ssize_t n =
          readlinkat(dirfd(fds), fd->d_name, target, sizeof(target) - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      uint64_t inode = 0;
      if (std::strncmp(target, "socket:[", 8) == 0 &&
          absl::SimpleAtoi(absl::string_view(target + 8, n - 9), &inode) &&
          inodes.contains(inode)) {
        found = inode;
        break;
      }
    }
    closedir(fds);
    if (found) return found;
  }
  return std::nullopt;
}

v1::IoResponse Opened(const v1::IoOpen& open, bool tty, bool interactive) {
  v1::IoResponse r;
  r.mutable_opened()->set_attempt(open.task().attempt());
  r.mutable_opened()->set_tty(tty);
  r.mutable_opened()->set_interactive(interactive);
  return r;
}

}  // namespace

grpc::Status AgentLogService::TaskIo(grpc::ServerContext* ctx, Stream* stream) {
  if (grpc::Status master = CheckMaster(ctx); !master.ok()) return master;
  v1::IoRequest first;
  if (!stream->Read(&first)) return grpc::Status::OK;  // gone
  if (!first.has_open()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "the first request must be `open`");
  }
  const v1::IoOpen& open = first.open();
  const TaskIoRegistry::Key key{open.task().job_id(), open.task().attempt(),
                                open.task().rank()};
  const std::string task =
      absl::StrCat("job ", open.task().job_id(), " attempt ",
                   open.task().attempt(), " rank ", open.task().rank());
  std::optional<pid_t> pgid =
      io_.running_pgid ? io_.running_pgid(key) : std::nullopt;
  if (open.forward_port() > 0) {
    if (!pgid) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          absl::StrCat(task, " is not running on this node"));
    }
    return Forward(ctx, open, *pgid, stream);
  }
  if (io_.sessions != nullptr) {
    if (std::shared_ptr<TaskIoSession> s = io_.sessions->Find(key)) {
      return SessionIo(ctx, open, std::move(s), stream);
    }
  }
  if (!pgid) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat(task,
                                     " is not running on this node "
                                     "(it has ended, or never started "
                                     "here): `tiresias logs` has its "
                                     "output"));
  }
  return TailLog(ctx, open, stream);
}

grpc::Status AgentLogService::SessionIo(grpc::ServerContext* ctx,
                                        const v1::IoOpen& open,
                                        std::shared_ptr<TaskIoSession> session,
                                        Stream* stream) {
  std::shared_ptr<TaskIoSession::Attachment> a = session->Attach(open.replay());
  const bool input = !open.read_only();
  if (!stream->Write(Opened(open, session->tty(), input))) {
    a->Detach();
    return grpc::Status::OK;
  }
  if (input && session->tty() && open.rows() > 0 && open.cols() > 0) {
    session->Resize(open.rows(), open.cols()).IgnoreError();
  }
  std::thread writer([&] {
    v1::IoResponse r;
    while (true) {
      const auto next = a->Pop(&r, std::chrono::milliseconds(200));
      if (next == TaskIoSession::Attachment::Next::kDone) break;
      if (next == TaskIoSession::Attachment::Next::kTimeout) {
        if (ctx->IsCancelled()) break;
        continue;
      }
      if (!stream->Write(r) || r.has_end()) break;
    }
  });
  v1::IoRequest req;
  while (stream->Read(&req)) {
    if (!input)
      continue;  // read-only: input is dropped (the master refuses it)
    switch (req.kind_case()) {
      case v1::IoRequest::kInput:
        // Ended: the end follows; not read for long: dropped, the caller
        // goes on (a task never holds a handler for ever).
        session->Input(req.input(), [ctx] { return ctx->IsCancelled(); })
            .IgnoreError();
        break;
      case v1::IoRequest::kCloseInput:
        session->CloseInput().IgnoreError();
        break;
      case v1::IoRequest::kResize:
        if (session->tty()) {
          session->Resize(req.resize().rows(), req.resize().cols())
              .IgnoreError();
        }
        break;
      case v1::IoRequest::kSignal:
        session->Signal(req.signal()).IgnoreError();
        break;
      default:
        break;
    }
  }
  a->Detach();
  writer.join();
  return grpc::Status::OK;
}

grpc::Status AgentLogService::TailLog(grpc::ServerContext* ctx,
                                      const v1::IoOpen& open, Stream* stream) {
  const TaskIoRegistry::Key key{open.task().job_id(), open.task().attempt(),
                                open.task().rank()};
  const std::string path =
      TaskLogPath(logs_dir_, open.task().job_id(), open.task().attempt(),
                  open.task().rank());
  if (!stream->Write(Opened(open, false, false))) return grpc::Status::OK;
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    int64_t offset = -1;
    while (!stop.load() && !ctx->IsCancelled()) {
      // Read before asking whether it still runs: what it wrote before it
      // ended is then always sent.
      const bool running = io_.running_pgid(key).has_value();
      absl::StatusOr<TaskFile> file = TaskFile::Open(path);
      if (file.ok()) {
        if (offset < 0) {
          offset = open.replay()
                       ? std::max<int64_t>(0, file->size() - kIoReplayBytes)
                       : file->size();
        }
        while (offset < file->size()) {
          absl::StatusOr<std::string> data =
              file->ReadAt(offset, kIoChunkBytes);
          if (!data.ok() || data->empty()) break;
          offset += static_cast<int64_t>(data->size());
          v1::IoResponse r;
          r.set_output(*std::move(data));
          if (!stream->Write(r)) return;
        }
      } else if (offset < 0) {
        offset = 0;  // no log yet: all of it, once there
      }
      if (!running) {
        // Its exit code is the master's to tell (the job's), not ours.
        v1::IoResponse r;
        r.mutable_end()->set_reason("the task has ended");
        stream->Write(r);
        return;
      }
      std::this_thread::sleep_for(kTailPoll);
    }
  });
  v1::IoRequest ignored;
  while (stream->Read(&ignored)) {
  }
  stop.store(true);
  writer.join();
  return grpc::Status::OK;
}

grpc::Status AgentLogService::Forward(grpc::ServerContext* ctx,
                                      const v1::IoOpen& open, pid_t pgid,
                                      Stream* stream) {
  const int port = open.forward_port();
  if (port > 65535) {
    return grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("forward_port: expected 1 to 65535, got ", port));
  }
  std::vector<Listener> listeners = ListenersOn(port);
  std::set<uint64_t> inodes;
  for (const Listener& l : listeners) inodes.insert(l.inode);
  const std::optional<uint64_t> owned =
      inodes.empty() ? std::nullopt : TaskSocket(pgid, inodes);
  if (!owned) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("no process of job ", open.task().job_id(),
                     " listens on port ", port,
                     " on its node (only a job's own servers can be reached)"));
  }
  // The task's own listener, at the address it is bound to: never another
  // on the same port (another user's on another address, a v6-only one).
  int fd = -1;
  for (const Listener& l : listeners) {
    if (l.inode != *owned) continue;
    fd = socket(l.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, reinterpret_cast<const sockaddr*>(&l.address),
                           l.length) != 0) {
      close(fd);
      fd = -1;
    }
    break;
  }
  if (fd < 0) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("cannot connect to port ", port, ": ",
                                     std::strerror(errno)));
  }
  if (!stream->Write(Opened(open, false, true))) {
    close(fd);
    return grpc::Status::OK;
  }
  std::thread writer([&] {
    std::string buf(kIoChunkBytes, '\0');
    while (true) {
      const ssize_t n = read(fd, buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      v1::IoResponse r;
      r.set_output(buf.substr(0, static_cast<size_t>(n)));
      if (!stream->Write(r)) return;
    }
    v1::IoResponse r;
    r.mutable_end()->set_reason(
        absl::StrCat("the job closed the connection to port ", port));
    stream->Write(r);
  });
  v1::IoRequest req;
  bool broken = false;
  while (!broken && stream->Read(&req)) {
    if (req.has_input()) {
      // Never SIGPIPE (the job's server closed), never blocked for good (it
      // stopped reading): waits are cut short by the call's end.
      std::string_view bytes = req.input();
      while (!bytes.empty() && !ctx->IsCancelled()) {
        const ssize_t n =
            send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
          bytes.remove_prefix(static_cast<size_t>(n));
        } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
          struct pollfd p = {fd, POLLOUT, 0};
          poll(&p, 1, 200);
        } else {
          broken = true;
          break;
        }
      }
    } else if (req.has_close_input()) {
      shutdown(fd, SHUT_WR);  // the reply still comes back
    }
  }
  if (broken) {
    // Drain the caller's side so that its half-close is seen.
    while (stream->Read(&req)) {
    }
  }
  shutdown(fd, SHUT_RDWR);  // ends the writer's read
  writer.join();
  close(fd);
  return grpc::Status::OK;
}

}  // namespace tiresias

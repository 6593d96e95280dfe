#include "cli/control_channel.h"

#include <fcntl.h>
#include <google/protobuf/descriptor.h>
#include <grpc/grpc.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/cluster_client.h"
#include "security/tls.h"

extern char** environ;

namespace tiresias::cli::control {
namespace {

// Writes all of `data`; false on any error (the peer went away).
bool WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = recv(fd, data, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// One frame's payload; nullopt at the end of the stream, on an error, or
// for a frame over kMaxFrame.
std::optional<std::string> ReadFrame(int fd) {
  unsigned char header[4];
  if (!ReadAll(fd, reinterpret_cast<char*>(header), sizeof header)) {
    return std::nullopt;
  }
  const uint32_t n = header[0] | header[1] << 8 | header[2] << 16 |
                     static_cast<uint32_t>(header[3]) << 24;
  if (n > kMaxFrame) return std::nullopt;
  std::string payload(n, '\0');
  if (!ReadAll(fd, payload.data(), n)) return std::nullopt;
  return payload;
}

uint64_t Fnv1a(absl::string_view text, uint64_t hash = 1469598103934665603u) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211u;
  }
  return hash;
}

// The folder for the sockets, made if missing; empty unless it is a
// directory (not a link) owned by us and closed to everyone else.
std::string SafeFolder() {
  std::string dir;
  if (const char* d = std::getenv("TIRESIAS_CONTROL_DIR"); d && d[0]) {
    dir = d;
  } else if (const char* run = std::getenv("XDG_RUNTIME_DIR"); run && run[0]) {
    dir = absl::StrCat(run, "/tiresias");
  } else {
    dir = absl::StrCat("/tmp/tiresias-", geteuid());
  }
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return "";
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
      st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    return "";
  }
  return dir;
}

double PersistSeconds() {
  const char* value = std::getenv("TIRESIAS_CONTROL_PERSIST");
  double seconds = 10;
  if (value != nullptr && value[0] != '\0' &&
      (!absl::SimpleAtod(value, &seconds) || !std::isfinite(seconds) ||
       seconds < 0)) {
    seconds = 0;  // unreadable: off, the safe reading
  }
  return seconds;
}

// The methods forwarded: the Tiresias service's unary ones, read from its
// descriptor, so a method added later is forwarded without a change here.
bool Forwarded(const std::string& method) {
  static const std::vector<std::string>* const kMethods = [] {
    auto* methods = new std::vector<std::string>;
    const google::protobuf::ServiceDescriptor* service =
        google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
            "tiresias.v1.Tiresias");
    for (int i = 0; service != nullptr && i < service->method_count(); ++i) {
      const google::protobuf::MethodDescriptor* m = service->method(i);
      if (m->client_streaming() || m->server_streaming()) continue;
      methods->push_back(absl::StrCat("/tiresias.v1.Tiresias/", m->name()));
    }
    return methods;
  }();
  for (const std::string& m : *kMethods) {
    if (m == method) return true;
  }
  return false;
}

constexpr char kNotForwarded[] = "the control channel does not forward ";
constexpr char kCannotReach[] = "the control process cannot reach the master";

Response Forward(grpc::Channel* channel, const Request& request) {
  if (!Forwarded(request.method)) {
    return {static_cast<int>(grpc::StatusCode::UNIMPLEMENTED),
            absl::StrCat(kNotForwarded, request.method), ""};
  }
  // A master the connection cannot reach: said at once, so that the
  // command has its time left to try directly (and to say so itself).
  if (channel->GetState(/*try_to_connect=*/true) ==
      GRPC_CHANNEL_TRANSIENT_FAILURE) {
    return {static_cast<int>(grpc::StatusCode::UNAVAILABLE), kCannotReach,
            ""};
  }
  grpc::ClientContext context;
  const double timeout =
      std::isfinite(request.timeout_seconds) && request.timeout_seconds > 0
          ? std::min(request.timeout_seconds, 3600.0)
          : 10.0;
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::microseconds(
                           static_cast<int64_t>(timeout * 1e6)));
  if (!request.token.empty()) security::AttachToken(&context, request.token);
  grpc::Slice slice(request.body);
  grpc::ByteBuffer in(&slice, 1);
  grpc::ByteBuffer out;
  const grpc::internal::RpcMethod method(
      request.method.c_str(), grpc::internal::RpcMethod::NORMAL_RPC);
  const grpc::Status status =
      grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
          channel, method, &context, in, &out);
  Response response{static_cast<int>(status.error_code()),
                    status.error_message(), ""};
  // Out of time without a connection is an absent master, not a slow one:
  // said as UNAVAILABLE ("cannot reach"), which `submit --wait` waits
  // through as it does for a master it cannot reach directly.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED &&
      channel->GetState(false) != GRPC_CHANNEL_READY) {
    response.code = static_cast<int>(grpc::StatusCode::UNAVAILABLE);
    response.message = absl::StrCat(
        "no connection to the master within the call's time: ",
        status.error_message());
  }
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    if (out.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        response.body.append(reinterpret_cast<const char*>(s.begin()),
                             s.size());
      }
    }
  }
  return response;
}

bool enabled = false;

// Whether the "K=V" entry `entry` sets the variable `name`.
bool Sets(const char* entry, absl::string_view name) {
  return absl::StartsWith(entry, name) && entry[name.size()] == '=';
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void Enable() { enabled = true; }

std::vector<char*> ControlProcessEnvironment(char** env) {
  // The control process lives longer than the command that starts it, and
  // the environment a process was started with stays readable in
  // /proc/PID/environ whatever it unsets later.
  std::vector<char*> envp;
  for (char** e = env; e != nullptr && *e != nullptr; ++e) {
    if (std::any_of(kClientTokenVariables.begin(), kClientTokenVariables.end(),
                    [&](const char* name) { return Sets(*e, name); })) {
      continue;
    }
    envp.push_back(*e);
  }
  envp.push_back(nullptr);
  return envp;
}

bool CallDirectly(const Response& response) {
  return (response.code ==
              static_cast<int>(grpc::StatusCode::UNIMPLEMENTED) &&
          absl::StartsWith(response.message, kNotForwarded)) ||
         (response.code == static_cast<int>(grpc::StatusCode::UNAVAILABLE) &&
          response.message == kCannotReach);
}
bool Enabled() { return enabled; }

std::optional<Endpoint> EndpointFor(const std::string& address,
                                    const std::string& ca,
                                    const std::string& cert,
                                    const std::string& key,
                                    const std::string& server_name) {
  const double persist = PersistSeconds();
  if (persist <= 0) return std::nullopt;
  const std::string dir = SafeFolder();
  if (dir.empty()) return std::nullopt;
  // The CA file's identity too: a replaced CA gets a new control process
  // (the old one's connection trusts the old CA).
  std::string ca_identity;
  struct stat st;
  if (!ca.empty() && stat(ca.c_str(), &st) == 0) {
    ca_identity = absl::StrCat(st.st_ino, ":", st.st_size, ":",
                               st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  }
  uint64_t hash = Fnv1a("");
  // Absolute: the control process resolves relative paths from the folder
  // of the command that started it, so another folder is another endpoint.
  auto absolute = [](const std::string& path) {
    std::error_code error;
    return path.empty() ? path
                        : std::filesystem::absolute(path, error).string();
  };
  const std::string ca_abs = absolute(ca), cert_abs = absolute(cert),
                    key_abs = absolute(key);
  for (absl::string_view part :
       {absl::string_view(TIRESIAS_VERSION), absl::string_view(address),
        absl::string_view(ca_abs), absl::string_view(ca_identity),
        absl::string_view(cert_abs), absl::string_view(key_abs),
        absl::string_view(server_name)}) {
    hash = Fnv1a(absl::StrCat(part.size(), ":", part), hash);
  }
  const std::string base = absl::StrCat(dir, "/ctl-", absl::Hex(hash,
                                                                absl::kZeroPad16));
  Endpoint endpoint{base + ".sock", base + ".lock", base + ".last", persist,
                    base + ".failed"};
  if (endpoint.socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return std::nullopt;  // too long a path for a Unix socket
  }
  return endpoint;
}

absl::StatusOr<Response> Call(const Endpoint& endpoint,
                              const Request& request) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::UnavailableError("socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, endpoint.socket.c_str(),
               sizeof addr.sun_path - 1);
  // A control process that stops reading or answering must not hang the
  // command: it gets the call's own time and a little more, both ways.
  const double wait = request.timeout_seconds + 2;
  timeval tv{static_cast<time_t>(wait),
             static_cast<suseconds_t>((wait - std::floor(wait)) * 1e6)};
  const bool timed =
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) == 0 &&
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv) == 0;
  // Only our own user's process hears our token: whatever the folder check
  // saw, the listener at the other end must run as us.
  ucred peer{};
  socklen_t len = sizeof peer;
  absl::StatusOr<Response> result =
      absl::UnavailableError("no control process");
  if (timed &&
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 &&
      peer.uid == geteuid()) {
    const std::string frame = EncodeRequest(request);
    if (!WriteAll(fd, frame)) {
      // Perhaps partly sent: the control process forwards only a whole
      // frame, so the master never saw it.
      result = absl::UnavailableError("the control process went away");
    } else if (std::optional<std::string> payload = ReadFrame(fd)) {
      result = DecodeResponse(*payload);
    } else {
      // Sent whole and unanswered: the master may have carried it out, so
      // it is not made again directly.
      result = Response{static_cast<int>(grpc::StatusCode::UNAVAILABLE),
                        "the control process went away during the call (the "
                        "master may have carried it out)",
                        ""};
    }
  }
  close(fd);
  return result;
}

// Whether the file at `path` exists and was modified less than `window` ago.
bool ModifiedWithin(const std::string& path, std::chrono::seconds window) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 &&
         std::chrono::system_clock::now() -
                 (std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec) +
                  std::chrono::duration_cast<
                      std::chrono::system_clock::duration>(
                      std::chrono::nanoseconds(st.st_mtim.tv_nsec))) <
             window;
}

// Creates the file at `path` (0600), or sets its modification time to now.
void Touch(const std::string& path) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  futimens(fd, nullptr);
  close(fd);
}

void NoteDirectCall(const Endpoint& endpoint, const std::string& address) {
  // Once per command: a command's own second call is no loop.
  static bool noted = false;
  if (noted) return;
  noted = true;
  const bool recent = ModifiedWithin(endpoint.last_use, kLoopWindow);
  Touch(endpoint.last_use);
  if (!recent) return;
  // A control process that could not start (credentials it cannot read, a
  // socket it cannot bind) left a mark: every command of the loop would
  // start it again only to fail, so none does for a while.
  if (ModifiedWithin(endpoint.failed, kStartFailureBackoff)) return;
  // Everything the child needs is made before fork: between fork and exec
  // it only makes system calls.
  const std::string socket_path = endpoint.socket;
  char* argv[] = {const_cast<char*>("tiresias"),
                  const_cast<char*>("__control"),
                  const_cast<char*>(socket_path.c_str()),
                  const_cast<char*>(address.c_str()), nullptr};
  std::vector<char*> envp = ControlProcessEnvironment(environ);
  const int max_fd =
      static_cast<int>(std::min<long>(sysconf(_SC_OPEN_MAX), 65536));
  const pid_t child = fork();
  if (child < 0) return;
  if (child > 0) {
    waitpid(child, nullptr, 0);
    return;
  }
  // The child: a new session, then a grandchild that cannot get a
  // terminal and that nobody waits for, with only /dev/null open.
  setsid();
  if (fork() != 0) _exit(0);
  const int null = open("/dev/null", O_RDWR);
  for (int i = 0; i < 3; ++i) dup2(null, i);
  for (int i = 3; i < max_fd; ++i) close(i);
  signal(SIGPIPE, SIG_IGN);
  execve("/proc/self/exe", argv, envp.data());
  _exit(127);
}

int Serve(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: tiresias __control SOCKET ADDRESS\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const std::string socket_path = argv[2];
  const std::string address = argv[3];
  const std::string base = socket_path.substr(0, socket_path.size() - 5);
  const double persist = PersistSeconds();
  if (persist <= 0) return 0;
  // One process per socket: the one holding the lock.
  const int lock = open((base + ".lock").c_str(),
                        O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock < 0 || flock(lock, LOCK_EX | LOCK_NB) != 0) return 0;

  // It keeps no token: each call brings its caller's. The command started
  // it without one (NoteDirectCall); this covers one started by hand.
  for (const char* name : kClientTokenVariables) unsetenv(name);
  const std::string failed = base + ".failed";
  absl::StatusOr<ClientCredentials> creds = LoadClientCredentials();
  if (!creds.ok()) {
    Touch(failed);
    return 1;
  }
  // Between calls nothing reads the connection, so a master that went away
  // would be noticed only by the next call, which then spends its time on
  // a dead connection; gRPC's backup poller, every 100 ms instead of 5 s,
  // notices it in between (a few microseconds of CPU each time).
  setenv("GRPC_CLIENT_CHANNEL_BACKUP_POLL_INTERVAL_MS", "100", 0);
  grpc_init();
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_ENABLE_HTTP_PROXY, 0);
  // A restarted master is found again within a second, not after gRPC's
  // backoff of up to two minutes.
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  security::DialOptions dial;
  dial.args = args;
  dial.target_name_override = creds->server_name;
  dial.retry_services = {"tiresias.v1.Tiresias"};
  std::shared_ptr<grpc::Channel> channel =
      security::Dial(address, creds->tls, dial);

  unlink(socket_path.c_str());
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
  const mode_t old_mask = umask(077);
  const bool bound =
      listener >= 0 &&
      bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      listen(listener, 128) == 0;
  umask(old_mask);
  if (!bound) {
    Touch(failed);
    return 1;
  }
  unlink(failed.c_str());

  // Shared with the connection threads, which are detached: they hold it
  // as long as they run.
  struct Activity {
    std::atomic<int> active{0};
    std::atomic<int64_t> last_call_ms{0};
  };
  auto activity = std::make_shared<Activity>();
  activity->last_call_ms = NowMs();
  const uid_t self = geteuid();
  // A client that connects and then says nothing (a command stopped with
  // Ctrl-Z) is dropped after this long, so it cannot keep us up for ever.
  const timeval idle_client{60, 0};
  // Serves one accepted connection on a thread of its own.
  auto serve = [&](int fd) {
    ucred peer{};
    socklen_t len = sizeof peer;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 ||
        peer.uid != self ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &idle_client,
                   sizeof idle_client) != 0) {
      close(fd);  // another user's process: no answer at all
      return;
    }
    ++activity->active;
    activity->last_call_ms = NowMs();
    try {
      std::thread([fd, activity, channel] {
        while (std::optional<std::string> payload = ReadFrame(fd)) {
          absl::StatusOr<Request> request = DecodeRequest(*payload);
          if (!request.ok()) break;
          const Response response = Forward(channel.get(), *request);
          activity->last_call_ms = NowMs();
          if (!WriteAll(fd, EncodeResponse(response))) break;
        }
        close(fd);
        activity->last_call_ms = NowMs();
        --activity->active;
      }).detach();
    } catch (const std::system_error&) {
      close(fd);  // no thread to serve it: the command calls directly
      --activity->active;
    }
  };
  while (true) {
    pollfd p{listener, POLLIN, 0};
    const int ready = poll(&p, 1, 250);
    if (ready > 0) {
      const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors or memory: wait rather than spin.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      serve(fd);
      continue;
    }
    if (activity->active == 0 &&
        NowMs() - activity->last_call_ms > static_cast<int64_t>(persist * 1000)) {
      break;
    }
  }
  // Idle: stop taking calls. Without its name and shut for reading, the
  // socket refuses every connect from now on, and a command refused calls
  // directly. But a command that connected just before has sent its call
  // whole, and closing the listener would drop it unread while the command
  // takes the lost connection for a call the master may have carried out:
  // those already queued are served before we go.
  unlink(socket_path.c_str());
  shutdown(listener, SHUT_RD);
  fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK);
  while (true) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) break;
    serve(fd);
  }
  while (activity->active > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  close(listener);
  return 0;
}

}  // namespace tiresias::cli::control

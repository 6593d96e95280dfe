// The per-process recorder of the preloaded traffic profiler; see
// preload_recorder.h for its cost and safety contract and record_format.h
// for what it writes.
#include "profiler/preload_recorder.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "profiler/record_format.h"

namespace tiresias::profiler::preload {

std::atomic<int> g_state{kOff};

namespace {

constexpr int kMaxFds = 65536;  // descriptors above are not recorded
constexpr size_t kBufferBytes = 64 << 10;
constexpr size_t kMaxLineBytes = kMaxRecordLineBytes;  // record_format.h
constexpr uint64_t kFlushEveryNs = 100'000'000;
constexpr int kMaxQps = 1024;

enum FdKind : uint32_t { kUnknown = 0, kIgnored = 1, kSocket = 2 };

// A descriptor's tag is generation << 2 | FdKind; an entry of another
// generation (before a fork) is unknown. The rest is guarded by g_mu.
struct FdEntry {
  std::atomic<uint32_t> tag;
  uint32_t conn;
  uint64_t pending_bytes;  // a message still being sent in pieces
  uint64_t pending_t_ns;   // when its first piece went
};

struct QpEntry {  // guarded by g_mu; conn 0: free slot
  uint32_t qp_num;
  uint32_t conn;
};

// Constant after Init (and after a fork, in the child).
char g_path[4096];
uint64_t g_max_messages = kDefaultMaxMessages;
uint64_t g_window_ns = 0;
pid_t g_pid = 0;

std::atomic<uint32_t> g_generation{1};
FdEntry g_fds[kMaxFds];

pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
// Guarded by g_mu.
char g_buf[kBufferBytes];
size_t g_len = 0;
uint64_t g_last_flush_ns = 0;
uint64_t g_deadline_ns = 0;
uint64_t g_messages = 0;
uint32_t g_next_conn = 0;
bool g_announced = false;  // this process's P line is written
bool g_failed = false;     // the file could not be written: never again
QpEntry g_qps[kMaxQps];
bool g_fork_locked = false;

__thread int t_busy __attribute__((tls_model("initial-exec"))) = 0;

uint64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull +
         static_cast<uint64_t>(ts.tv_nsec);
}

class SavedErrno {
 public:
  SavedErrno() : saved_(errno) {}
  ~SavedErrno() { errno = saved_; }

 private:
  int saved_;
};

// Holds g_mu and marks the thread as inside the recorder.
class Locked {
 public:
  Locked() {
    t_busy = 1;
    pthread_mutex_lock(&g_mu);
  }
  ~Locked() {
    pthread_mutex_unlock(&g_mu);
    t_busy = 0;
  }
};

// --- formatting into g_buf (caller holds g_mu and made room) ----------------

void Put(char c) { g_buf[g_len++] = c; }

void PutText(const char* s) {
  while (*s != '\0') Put(*s++);
}

void PutU64(uint64_t v) {
  char digits[20];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (n > 0) Put(digits[--n]);
}

// Escapes `size` bytes of `s` (record_format.h), at most `limit` output
// bytes; an empty field is written as "-".
void PutEscaped(const char* s, size_t size, size_t limit) {
  static const char kHex[] = "0123456789ABCDEF";
  if (size == 0) {  // "-" is an empty field, so a field "-" is escaped
    Put('-');
    return;
  }
  if (size == 1 && s[0] == '-') {
    PutText("%2D");
    return;
  }
  for (size_t i = 0; i < size && limit >= 3; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c > ' ' && c < 0x7f && c != '%') {
      Put(static_cast<char>(c));
      --limit;
    } else {
      Put('%');
      Put(kHex[c >> 4]);
      Put(kHex[c & 15]);
      limit -= 3;
    }
  }
}

// --- the file
// -----------------------------------------------------------------

void StopLocked(const char* why, uint64_t now);

// Appends the buffer to the file: open, write, close, so that no
// descriptor of ours lives between calls (a job that closes or dup2()s
// over every descriptor cannot hit it). Raw system calls: this library's
// own close() and write() are interposed.
void FlushLocked(uint64_t now) {
  g_last_flush_ns = now;
  if (g_len == 0) return;
  const size_t len = g_len;
  g_len = 0;
  if (g_failed) return;
  const long fd = syscall(SYS_openat, AT_FDCWD, g_path,
                          O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    g_failed = true;
    g_state.store(kStopped, std::memory_order_relaxed);
    return;
  }
  size_t done = 0;
  while (done < len) {
    const long n = syscall(SYS_write, fd, g_buf + done, len - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      g_failed = true;
      g_state.store(kStopped, std::memory_order_relaxed);
      break;
    }
  }
  syscall(SYS_close, fd);
}

void MakeRoom(uint64_t now) {
  if (g_len + kMaxLineBytes > kBufferBytes) FlushLocked(now);
}

// The P line, once per process, before its first other line.
void AnnounceLocked(uint64_t now) {
  if (g_announced) return;
  g_announced = true;
  MakeRoom(now);
  PutText("P ");
  PutU64(static_cast<uint64_t>(g_pid));
  Put(' ');
  PutU64(static_cast<uint64_t>(getppid()));
  Put(' ');
  PutU64(now);
  char cmdline[512];
  long n = -1;
  const long fd =
      syscall(SYS_openat, AT_FDCWD, "/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    n = syscall(SYS_read, fd, cmdline, sizeof cmdline);
    syscall(SYS_close, fd);
  }
  size_t budget = 900;
  for (long start = 0; n > 0 && start < n && budget > 3;) {
    long end = start;
    while (end < n && cmdline[end] != '\0') ++end;
    Put(' ');
    const size_t before = g_len;
    PutEscaped(cmdline + start, static_cast<size_t>(end - start), budget);
    budget -= g_len - before;
    start = end + 1;
  }
  Put('\n');
}

void EmitConnLocked(uint32_t conn, const char* kind, const char* local,
                    const char* peer, uint64_t now) {
  AnnounceLocked(now);
  MakeRoom(now);
  PutText("C ");
  PutU64(static_cast<uint64_t>(g_pid));
  Put(' ');
  PutU64(conn);
  Put(' ');
  PutText(kind);
  Put(' ');
  PutEscaped(local, strlen(local), 300);
  Put(' ');
  PutEscaped(peer, strlen(peer), 300);
  Put('\n');
}

// One message; counts it against the limits.
void EmitMessageLocked(uint32_t conn, uint64_t t_ns, uint64_t bytes,
                       uint64_t now) {
  MakeRoom(now);
  PutText("M ");
  PutU64(static_cast<uint64_t>(g_pid));
  Put(' ');
  PutU64(conn);
  Put(' ');
  PutU64(t_ns);
  Put(' ');
  PutU64(bytes);
  Put('\n');
  ++g_messages;
  if (g_messages >= g_max_messages) {
    StopLocked("messages", now);
  } else if (now >= g_deadline_ns) {
    StopLocked("seconds", now);
  } else if (now - g_last_flush_ns >= kFlushEveryNs) {
    FlushLocked(now);
  }
}

void StopLocked(const char* why, uint64_t now) {
  if (g_state.load(std::memory_order_relaxed) != kRecording) return;
  g_state.store(kStopped, std::memory_order_relaxed);
  if (g_announced) {
    MakeRoom(now);
    PutText("E ");
    PutU64(static_cast<uint64_t>(g_pid));
    Put(' ');
    PutU64(now);
    Put(' ');
    PutText(why);
    Put('\n');
  }
  FlushLocked(now);
}

// --- describing a socket
// --------------------------------------------------------

void FormatAddress(const sockaddr_storage& addr, socklen_t len, char* out,
                   size_t size) {
  out[0] = '\0';
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    char host[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &in->sin_addr, host, sizeof host) == nullptr) return;
    snprintf(out, size, "%s:%u", host, ntohs(in->sin_port));
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    char host[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof host) == nullptr) {
      return;
    }
    snprintf(out, size, "[%s]:%u", host, ntohs(in6->sin6_port));
  } else if (addr.ss_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&addr);
    const size_t offset = offsetof(sockaddr_un, sun_path);
    if (len <= offset) return;      // unnamed
    const size_t n = len - offset;  // the path's bytes
    if (un->sun_path[0] == '\0') {  // abstract: "@name", may hold NULs
      size_t name = n - 1;
      if (name > size - 2) name = size - 2;
      out[0] = '@';
      memcpy(out + 1, un->sun_path + 1, name);
      out[name + 1] = '\0';
    } else {
      snprintf(out, size, "%.*s", static_cast<int>(strnlen(un->sun_path, n)),
               un->sun_path);
    }
  }
}

// Whether `fd` is a TCP or Unix socket; if so its kind and addresses.
bool Classify(int fd, const char** kind, char* local, char* peer, size_t size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  int domain = 0;
  int type = 0;
  socklen_t len = sizeof domain;
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  len = sizeof type;
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return false;
  if (domain == AF_UNIX) {
    *kind = "unix";
  } else if ((domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM) {
    *kind = "tcp";
  } else {
    return false;  // UDP, netlink, packet sockets
  }
  sockaddr_storage addr;
  socklen_t addr_len = sizeof addr;
  memset(&addr, 0, sizeof addr);
  local[0] = peer[0] = '\0';
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0) {
    FormatAddress(addr, addr_len, local, size);
  }
  addr_len = sizeof addr;
  memset(&addr, 0, sizeof addr);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &addr_len) == 0) {
    FormatAddress(addr, addr_len, peer, size);
  }
  return true;
}

// --- process life
// ------------------------------------------------------------------

void ResetForThisProcess() {
  g_pid = getpid();
  const uint64_t now = NowNs();
  g_last_flush_ns = now;
  g_deadline_ns = now + g_window_ns;
  g_messages = 0;
  g_next_conn = 0;
  g_announced = false;
  g_len = 0;
  for (QpEntry& qp : g_qps) qp = QpEntry{0, 0};
}

void BeforeFork() {
  if (g_state.load(std::memory_order_relaxed) == kOff || t_busy) return;
  pthread_mutex_lock(&g_mu);
  g_fork_locked = true;
}

void AfterForkInParent() {
  if (!g_fork_locked) return;
  g_fork_locked = false;
  pthread_mutex_unlock(&g_mu);
}

// The child records on its own: its own pid, limits and connections (the
// descriptors it inherited are described again under its pid). What the
// parent had buffered is the parent's to write.
void AfterForkInChild() {
  if (g_state.load(std::memory_order_relaxed) == kOff) return;
  if (!g_fork_locked) {  // forked from inside the recorder: give up here
    g_state.store(kStopped, std::memory_order_relaxed);
    return;
  }
  g_fork_locked = false;
  pthread_mutex_init(&g_mu, nullptr);
  g_generation.fetch_add(1, std::memory_order_acq_rel);
  ResetForThisProcess();
  t_busy = 0;
  g_state.store(g_failed ? kStopped : kRecording, std::memory_order_relaxed);
}

__attribute__((constructor)) void Init() {
  SavedErrno keep;
  const char* out = getenv(kOutEnv);
  if (out == nullptr || out[0] == '\0') return;
  size_t used = 0;
  if (out[0] != '/') {  // the job may chdir: keep an absolute path
    if (getcwd(g_path, sizeof g_path) == nullptr) return;
    used = strlen(g_path);
    if (used + 1 >= sizeof g_path) return;
    g_path[used++] = '/';
  }
  if (used + strlen(out) + 1 > sizeof g_path) return;
  memcpy(g_path + used, out, strlen(out) + 1);
  if (const char* text = getenv(kMaxMessagesEnv); text != nullptr && *text) {
    char* end = nullptr;
    const unsigned long long v = strtoull(text, &end, 10);
    if (end != text && *end == '\0' && v > 0) g_max_messages = v;
  }
  double seconds = kDefaultSeconds;
  if (const char* text = getenv(kSecondsEnv); text != nullptr && *text) {
    char* end = nullptr;
    const double v = strtod(text, &end);
    if (end != text && *end == '\0' && v > 0 && v < 1e9) seconds = v;
  }
  g_window_ns = static_cast<uint64_t>(seconds * 1e9);
  ResetForThisProcess();
  if (pthread_atfork(BeforeFork, AfterForkInParent, AfterForkInChild) != 0) {
    return;
  }
  g_state.store(kRecording, std::memory_order_release);
}

__attribute__((destructor)) void Fini() { Flush(true); }

}  // namespace

void* NextSymbol(const char* name) {
  SavedErrno keep;
  return dlsym(RTLD_NEXT, name);
}

void OnSocketSend(int fd, size_t requested, size_t sent) {
  if (t_busy || fd < 0 || fd >= kMaxFds || sent == 0) return;
  SavedErrno keep;
  FdEntry& entry = g_fds[fd];
  const uint32_t generation = g_generation.load(std::memory_order_acquire);
  const uint32_t socket_tag = generation << 2 | kSocket;
  const uint32_t tag = entry.tag.load(std::memory_order_acquire);
  const char* kind = nullptr;
  char local[160];
  char peer[160];
  bool fresh = false;
  if ((tag >> 2) != (generation & 0x3fffffffu) || (tag & 3) == kUnknown) {
    if (!Classify(fd, &kind, local, peer, sizeof local)) {
      entry.tag.store(generation << 2 | kIgnored, std::memory_order_release);
      return;
    }
    fresh = true;
  } else if ((tag & 3) != kSocket) {
    return;
  }
  const uint64_t now = NowNs();
  Locked lock;
  if (!Recording()) return;
  if (fresh && entry.tag.load(std::memory_order_relaxed) != socket_tag) {
    entry.conn = ++g_next_conn;
    entry.pending_bytes = 0;
    EmitConnLocked(entry.conn, kind, local, peer, now);
    entry.tag.store(socket_tag, std::memory_order_release);
    if (!Recording()) return;
  }
  if (entry.pending_bytes == 0) entry.pending_t_ns = now;
  entry.pending_bytes += sent;
  if (sent >= requested) {
    const uint64_t bytes = entry.pending_bytes;
    entry.pending_bytes = 0;
    EmitMessageLocked(entry.conn, entry.pending_t_ns, bytes, now);
  }
}

void ForgetFd(int fd) {
  if (fd < 0 || fd >= kMaxFds) return;
  FdEntry& entry = g_fds[fd];
  const uint32_t tag = entry.tag.load(std::memory_order_acquire);
  if ((tag & 3) == kUnknown) return;
  const uint32_t generation = g_generation.load(std::memory_order_acquire);
  if (tag == (generation << 2 | kSocket) && !t_busy) {
    SavedErrno keep;
    const uint64_t now = NowNs();
    Locked lock;
    if (entry.pending_bytes > 0 && Recording()) {
      const uint64_t bytes = entry.pending_bytes;
      entry.pending_bytes = 0;
      EmitMessageLocked(entry.conn, entry.pending_t_ns, bytes, now);
    }
    entry.pending_bytes = 0;
    entry.tag.store(0, std::memory_order_release);
    return;
  }
  entry.tag.store(0, std::memory_order_release);
}

void ForgetFdRange(unsigned first, unsigned last) {
  if (first >= static_cast<unsigned>(kMaxFds)) return;
  // A vfork() child closing what it inherited (CPython's subprocess does,
  // with close_range) must not make its parent forget its sockets.
  if (getpid() != g_pid) return;
  if (last >= static_cast<unsigned>(kMaxFds)) last = kMaxFds - 1;
  for (unsigned fd = first; fd <= last; ++fd) ForgetFd(static_cast<int>(fd));
}

void OnVerbsSend(uint32_t qp_num, uint64_t bytes,
                 void (*peer)(void* arg, char* out, size_t size), void* arg) {
  if (t_busy) return;
  SavedErrno keep;
  const uint64_t now = NowNs();
  uint32_t conn = 0;
  size_t slot = qp_num % kMaxQps;
  {
    Locked lock;
    if (!Recording()) return;
    for (size_t probe = 0; probe < kMaxQps; ++probe) {
      const QpEntry& qp = g_qps[(slot + probe) % kMaxQps];
      if (qp.conn == 0) break;
      if (qp.qp_num == qp_num) {
        conn = qp.conn;
        break;
      }
    }
    if (conn != 0) {
      EmitMessageLocked(conn, now, bytes, now);
      return;
    }
  }
  // A new queue pair: ask for its remote end without holding the lock (it
  // calls into the verbs provider).
  char local[32];
  char remote[160];
  snprintf(local, sizeof local, "qp:%u", qp_num);
  remote[0] = '\0';
  if (peer != nullptr) peer(arg, remote, sizeof remote);
  Locked lock;
  if (!Recording()) return;
  for (size_t probe = 0; probe < kMaxQps; ++probe) {
    QpEntry& qp = g_qps[(slot + probe) % kMaxQps];
    if (qp.conn != 0 && qp.qp_num != qp_num) continue;
    if (qp.conn == 0) {  // still new (another thread may have added it)
      qp.qp_num = qp_num;
      qp.conn = ++g_next_conn;
      EmitConnLocked(qp.conn, "verbs", local, remote, now);
      if (!Recording()) return;
    }
    EmitMessageLocked(qp.conn, now, bytes, now);
    return;
  }
  // The table is full: this queue pair is not recorded.
}

void Flush(bool final) {
  if (g_state.load(std::memory_order_relaxed) != kRecording || t_busy) return;
  SavedErrno keep;
  if (getpid() != g_pid) return;  // a vfork() child
  const uint64_t now = NowNs();
  Locked lock;
  if (final) {
    StopLocked("exit", now);
  } else {
    FlushLocked(now);
  }
}

}  // namespace tiresias::profiler::preload

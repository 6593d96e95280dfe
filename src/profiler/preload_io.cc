// The interposed libc calls of the preloaded traffic profiler. Each calls
// the real function first and, only while recording, tells the recorder
// what went out (preload_recorder.h); errno is the real call's.
//
// Sends: send, sendto, sendmsg, sendmmsg, write, writev. Descriptor
// lifetimes, so that a number reused for another file is described again:
// close, close_range, dup, dup2, dup3, socket, socketpair, accept, accept4.
// Flushes: execve, execv, execvp, execvpe (before the image is replaced)
// and _exit, _Exit (which skip the library's destructor).
//
// Not seen: calls that bypass the dynamic symbol (raw syscall(), glibc's
// internal calls such as fclose's close or stdio on a socket), sendfile
// and splice, descriptors above 65535, statically linked programs, and a
// socket that arrives (SCM_RIGHTS) on a number whose earlier file was
// closed by such an unseen call (it stays "not a socket").
#include <errno.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

#include "profiler/preload_recorder.h"

namespace tiresias::profiler::preload {
namespace {

// The real `name`, looked up once. `slot` is a function-local static.
template <typename Fn>
Fn Next(std::atomic<void*>& slot, const char* name) {
  void* fn = slot.load(std::memory_order_relaxed);
  if (__builtin_expect(fn == nullptr, 0)) {
    fn = NextSymbol(name);
    slot.store(fn, std::memory_order_relaxed);
  }
  return reinterpret_cast<Fn>(fn);
}

#define TIRESIAS_NEXT(name)                                     \
  static std::atomic<void*> next_slot{nullptr};                 \
  auto* const next = Next<decltype(&::name)>(next_slot, #name); \
  if (__builtin_expect(next == nullptr, 0)) {                   \
    errno = ENOSYS;                                             \
    return -1;                                                  \
  }

size_t IovBytes(const iovec* iov, size_t count) {
  size_t total = 0;
  for (size_t i = 0; i < count; ++i) total += iov[i].iov_len;
  return total;
}

void Sent(int fd, size_t requested, ssize_t result) {
  if (result > 0) OnSocketSend(fd, requested, static_cast<size_t>(result));
}

}  // namespace
}  // namespace tiresias::profiler::preload

using namespace tiresias::profiler::preload;  // NOLINT: the wrappers below

extern "C" {

__attribute__((visibility("default"))) ssize_t send(int fd, const void* buf,
                                                    size_t n, int flags) {
  TIRESIAS_NEXT(send);
  const ssize_t result = next(fd, buf, n, flags);
  if (Recording()) Sent(fd, n, result);
  return result;
}

__attribute__((visibility("default"))) ssize_t sendto(int fd, const void* buf,
                                                      size_t n, int flags,
                                                      const sockaddr* addr,
                                                      socklen_t addr_len) {
  TIRESIAS_NEXT(sendto);
  const ssize_t result = next(fd, buf, n, flags, addr, addr_len);
  if (Recording()) Sent(fd, n, result);
  return result;
}

__attribute__((visibility("default"))) ssize_t sendmsg(int fd,
                                                       const msghdr* msg,
                                                       int flags) {
  TIRESIAS_NEXT(sendmsg);
  const ssize_t result = next(fd, msg, flags);
  if (Recording() && msg != nullptr) {
    Sent(fd, IovBytes(msg->msg_iov, msg->msg_iovlen), result);
  }
  return result;
}

__attribute__((visibility("default"))) int sendmmsg(int fd, mmsghdr* msgs,
                                                    unsigned int count,
                                                    int flags) {
  TIRESIAS_NEXT(sendmmsg);
  const int result = next(fd, msgs, count, flags);
  if (Recording() && result > 0) {
    for (int i = 0; i < result; ++i) {
      Sent(fd, msgs[i].msg_len, static_cast<ssize_t>(msgs[i].msg_len));
    }
  }
  return result;
}

__attribute__((visibility("default"))) ssize_t write(int fd, const void* buf,
                                                     size_t n) {
  TIRESIAS_NEXT(write);
  const ssize_t result = next(fd, buf, n);
  if (Recording()) Sent(fd, n, result);
  return result;
}

__attribute__((visibility("default"))) ssize_t writev(int fd, const iovec* iov,
                                                      int count) {
  TIRESIAS_NEXT(writev);
  const ssize_t result = next(fd, iov, count);
  if (Recording() && result > 0 && count > 0) {
    Sent(fd, IovBytes(iov, static_cast<size_t>(count)), result);
  }
  return result;
}

__attribute__((visibility("default"))) int close(int fd) {
  TIRESIAS_NEXT(close);
  if (Recording()) ForgetFd(fd);
  return next(fd);
}

__attribute__((visibility("default"))) int close_range(unsigned int first,
                                                       unsigned int last,
                                                       int flags) noexcept {
  TIRESIAS_NEXT(close_range);
  // CLOSE_RANGE_CLOEXEC only marks them: they stay what they are.
  if (Recording() && (flags & CLOSE_RANGE_CLOEXEC) == 0) {
    ForgetFdRange(first, last);
  }
  return next(first, last, flags);
}

__attribute__((visibility("default"))) int dup(int fd) noexcept {
  TIRESIAS_NEXT(dup);
  const int result = next(fd);
  if (Recording()) ForgetFd(result);
  return result;
}

__attribute__((visibility("default"))) int dup2(int fd, int target) noexcept {
  TIRESIAS_NEXT(dup2);
  if (Recording() && fd != target) ForgetFd(target);
  return next(fd, target);
}

__attribute__((visibility("default"))) int dup3(int fd, int target,
                                                int flags) noexcept {
  TIRESIAS_NEXT(dup3);
  if (Recording()) ForgetFd(target);
  return next(fd, target, flags);
}

__attribute__((visibility("default"))) int socket(int domain, int type,
                                                  int protocol) noexcept {
  TIRESIAS_NEXT(socket);
  const int result = next(domain, type, protocol);
  if (Recording()) ForgetFd(result);
  return result;
}

__attribute__((visibility("default"))) int socketpair(int domain, int type,
                                                      int protocol,
                                                      int fds[2]) noexcept {
  TIRESIAS_NEXT(socketpair);
  const int result = next(domain, type, protocol, fds);
  if (Recording() && result == 0) {
    ForgetFd(fds[0]);
    ForgetFd(fds[1]);
  }
  return result;
}

__attribute__((visibility("default"))) int accept(int fd, sockaddr* addr,
                                                  socklen_t* addr_len) {
  TIRESIAS_NEXT(accept);
  const int result = next(fd, addr, addr_len);
  if (Recording()) ForgetFd(result);
  return result;
}

__attribute__((visibility("default"))) int accept4(int fd, sockaddr* addr,
                                                   socklen_t* addr_len,
                                                   int flags) {
  TIRESIAS_NEXT(accept4);
  const int result = next(fd, addr, addr_len, flags);
  if (Recording()) ForgetFd(result);
  return result;
}

__attribute__((visibility("default"))) int execve(const char* path,
                                                  char* const argv[],
                                                  char* const envp[]) noexcept {
  TIRESIAS_NEXT(execve);
  Flush(false);
  return next(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char* path,
                                                 char* const argv[]) noexcept {
  TIRESIAS_NEXT(execv);
  Flush(false);
  return next(path, argv);
}

__attribute__((visibility("default"))) int execvp(const char* file,
                                                  char* const argv[]) noexcept {
  TIRESIAS_NEXT(execvp);
  Flush(false);
  return next(file, argv);
}

__attribute__((visibility("default"))) int execvpe(
    const char* file, char* const argv[], char* const envp[]) noexcept {
  TIRESIAS_NEXT(execvpe);
  Flush(false);
  return next(file, argv, envp);
}

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  static std::atomic<void*> next_slot{nullptr};
  Flush(true);
  auto* const next = Next<void (*)(int)>(next_slot, "_exit");
  if (next != nullptr) next(status);
  for (;;) syscall(SYS_exit_group, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(
    int status) noexcept {
  static std::atomic<void*> next_slot{nullptr};
  Flush(true);
  auto* const next = Next<void (*)(int)>(next_slot, "_Exit");
  if (next != nullptr) next(status);
  for (;;) syscall(SYS_exit_group, status);
}

}  // extern "C"

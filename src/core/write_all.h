// Writing a whole buffer to a file descriptor: short writes and EINTR
// retried. For the agent's files and pipes and the CLI's terminal; not for
// a forked child (spawn_child.cc keeps its async-signal-safe own) nor for
// sockets that must not raise SIGPIPE (send with MSG_NOSIGNAL).
#ifndef TIRESIAS_CORE_WRITE_ALL_H_
#define TIRESIAS_CORE_WRITE_ALL_H_

#include <unistd.h>

#include <cerrno>
#include <string_view>

namespace tiresias {

// Writes all of `data` to `fd`; false on the first error (errno says
// which), e.g. a full disk or a reader gone.
inline bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace tiresias

#endif  // TIRESIAS_CORE_WRITE_ALL_H_

#include "core/open_files.h"

#include <dirent.h>
#include <sys/resource.h>

#include <algorithm>

namespace tiresias {

namespace {

constexpr rlim_t kMostOpenFiles = 1 << 20;

}  // namespace

int64_t RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  const rlim_t want = std::min(limit.rlim_max, kMostOpenFiles);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    limit.rlim_cur = want;
    setrlimit(RLIMIT_NOFILE, &limit);  // on failure, the limit read below
  }
  return OpenFileSoftLimit();
}

int64_t OpenFileSoftLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return -1;
  return static_cast<int64_t>(limit.rlim_cur);
}

int64_t OpenFiles() {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int64_t n = 0;
  while (const dirent* entry = readdir(dir)) {
    if (entry->d_name[0] != '.') ++n;
  }
  closedir(dir);
  return n - 1;  // the directory's own descriptor
}

}  // namespace tiresias

// Reading a file that a task can write: its exit file, its log and its
// traffic profile (the last two belong to the task's account), or, for an
// agent that does not run as root, anything in the agent's state dir (its
// tasks run as the agent's own user). Such a file is the task's input to
// the agent, so the agent reads it as untrusted (issue 21):
//   - never through a symbolic link (O_NOFOLLOW on the last component; the
//     folders above are the agent's, not writable by another account);
//   - only a regular file: a FIFO or device put in its place is refused,
//     and opening one never blocks (O_NONBLOCK);
//   - never more than a cap the caller sets from what the file may
//     legitimately hold: a larger file is refused without reading it
//     (fstat), and one that grows past the cap while read is refused after
//     at most cap + 64 KiB were read. A 200 MB file written into a profile
//     once took a root agent from 24 to 424 MB.
#ifndef TIRESIAS_AGENT_TASK_FILE_H_
#define TIRESIAS_AGENT_TASK_FILE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tiresias {

// An open regular file, read-only. Move-only; closes on destruction.
class TaskFile {
 public:
  // Opens `path` by the rules above. NotFound when there is no file;
  // FailedPrecondition for a symbolic link or anything but a regular file;
  // Unavailable for other errors. Messages name the path.
  static absl::StatusOr<TaskFile> Open(const std::string& path);

  TaskFile(TaskFile&& other) noexcept;
  TaskFile& operator=(TaskFile&& other) noexcept;
  TaskFile(const TaskFile&) = delete;
  TaskFile& operator=(const TaskFile&) = delete;
  ~TaskFile();

  // Its size at Open (fstat): the task may change it since. 0 for a /proc
  // file, whose size is only known by reading it.
  int64_t size() const { return size_; }

  // Up to `max_bytes` from `offset` (pread); fewer at the end of the file.
  // Unavailable naming the path on a read error.
  absl::StatusOr<std::string> ReadAt(int64_t offset, size_t max_bytes) const;

 private:
  TaskFile(int fd, int64_t size, std::string path)
      : fd_(fd), size_(size), path_(std::move(path)) {}

  int fd_ = -1;
  int64_t size_ = 0;
  std::string path_;
};

// The whole of `path`, opened by TaskFile::Open; nullopt if there is no
// file. ResourceExhausted, saying the path, its size and `max_bytes`, for
// a file larger than `max_bytes` (refused unread when fstat says so); the
// other errors as TaskFile::Open's. Thread-safe.
absl::StatusOr<std::optional<std::string>> ReadTaskFile(const std::string& path,
                                                        size_t max_bytes);

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_TASK_FILE_H_

// Whole-file reads and crash-safe replacement of small files the agent owns
// (its task record), behind an interface so that tests can replace it
// (STYLE rule 4).
#ifndef TIRESIAS_AGENT_FILE_STORE_H_
#define TIRESIAS_AGENT_FILE_STORE_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tiresias {

class FileStore {
 public:
  virtual ~FileStore() = default;

  // The contents of `path`; nullopt if it does not exist.
  virtual absl::StatusOr<std::optional<std::string>> Read(
      const std::string& path) = 0;

  // Replaces `path` by `contents` so that, even across a crash or power
  // loss, a reader sees either the old file or the new one, never a mix:
  // a temporary file in the same folder, fsync, rename, fsync the folder.
  // Creates missing parent folders.
  virtual absl::Status WriteAtomically(const std::string& path,
                                       std::string_view contents) = 0;
};

// The real file system. Never null, never destroyed. Thread-safe; writers of
// the same path must serialize themselves (the last rename wins).
FileStore* RealFileStore();

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_FILE_STORE_H_

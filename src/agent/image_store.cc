#include "agent/image_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/container.h"
#include "agent/run_capture.h"
#include "core/image_ref.h"

namespace tiresias {
namespace {

namespace fs = std::filesystem;

// The last line of a helper's output, for an error message.
std::string LastLine(const std::string& output) {
  std::string text(absl::StripTrailingAsciiWhitespace(output));
  const size_t newline = text.rfind('\n');
  if (newline != std::string::npos) text = text.substr(newline + 1);
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

// Deeper than any image's tree: a failed unpacking is removed whole.
constexpr int kMaxImageDepth = 512;

// Every entry of a root file system below `root` made root's and harmless
// on the host, where any account can reach it (containers see it read
// only, as nobody's, and give nothing a set-id bit could): owner root,
// set-uid, set-gid and group and others' write cleared, device nodes and
// sockets removed. Links are changed, never followed.
absl::Status MakeHarmless(const std::string& root) {
  std::error_code ec;
  auto harmless = [](const fs::path& path) -> bool {
    struct stat st = {};
    if (lstat(path.c_str(), &st) != 0) return false;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode)) {
      return unlink(path.c_str()) == 0;
    }
    if (lchown(path.c_str(), 0, 0) != 0) return false;
    if (S_ISLNK(st.st_mode)) return true;
    return chmod(path.c_str(), st.st_mode & 07777 &
                                   ~(S_ISUID | S_ISGID | S_IWGRP | S_IWOTH)) ==
           0;
  };
  if (!harmless(root)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot make ", root, " root's: ", std::strerror(errno)));
  }
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::none, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (!harmless(it->path())) {
      return absl::FailedPreconditionError(
          absl::StrCat("cannot make ", it->path().string(),
                       " root's: ", std::strerror(errno)));
    }
  }
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot walk ", root, ": ", ec.message()));
  }
  return absl::OkStatus();
}

// That `image` (below folder `below`, which the operator gave) is a
// folder, and so is every step from `below` to it: real folders (no
// link), root's, not writable by group or others. So no account can swap
// a step for a link between this check and the mount points the agent
// makes in it.
absl::Status CheckOperatorFolders(const std::string& image,
                                  const std::string& below) {
  std::string path = below.substr(0, below.size() - 1);
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(image).substr(below.size()), '/')) {
    absl::StrAppend(&path, "/", part);
    struct stat st = {};
    if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", image, ": ", path, " is no folder on this node"));
    }
    if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return absl::PermissionDeniedError(absl::StrCat(
          "image ", image, ": ", path,
          " is not root's alone (an image folder must not be one an "
          "account could change)"));
    }
  }
  return absl::OkStatus();
}

bool IsImageId(const std::string& id) {
  if (id.size() != 64) return false;
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

ImageStore::ImageStore(ImageStoreOptions options,
                       std::function<void()> on_ready)
    : shared_(std::make_shared<Shared>()) {
  shared_->options = std::move(options);
  shared_->on_ready = std::move(on_ready);
  std::thread([shared = shared_] { Work(shared); }).detach();
}

ImageStore::~ImageStore() {
  MutexLock lock(&shared_->mu);
  shared_->stopping = true;
  shared_->cv.SignalAll();
  while (shared_->calling) shared_->cv.Wait(&shared_->mu);
}

void ImageStore::WaitIdle() {
  MutexLock lock(&shared_->mu);
  while (!shared_->queue.empty() || shared_->working || shared_->calling) {
    shared_->cv.Wait(&shared_->mu);
  }
}

absl::StatusOr<std::string> ImageStore::RootFs(const std::string& image) {
  if (std::string bad = ImageRefError(image); !bad.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("image: ", bad));
  }
  if (IsImagePath(image)) {
    // Never a folder the operator did not give for images: the agent, as
    // root, makes mount points in it.
    std::string allowed_below;
    for (const std::string& folder : shared_->options.folders) {
      const std::string prefix = folder.ends_with('/') ? folder : folder + "/";
      if (image.size() > prefix.size() && image.starts_with(prefix)) {
        allowed_below = prefix;
      }
    }
    if (allowed_below.empty()) {
      return absl::PermissionDeniedError(absl::StrCat(
          "image ", image,
          ": this node takes root file system folders as images only "
          "below its --image-folder",
          shared_->options.folders.empty()
              ? " (none given)"
              : absl::StrCat(
                    " (", absl::StrJoin(shared_->options.folders, ", "), ")")));
    }
    if (absl::Status owned = CheckOperatorFolders(image, allowed_below);
        !owned.ok()) {
      return owned;
    }
    return image;
  }
  if (const std::vector<std::string>& allow = shared_->options.allow;
      !allow.empty() &&
      std::none_of(allow.begin(), allow.end(), [&](const std::string& p) {
        return image.starts_with(p);
      })) {
    return absl::PermissionDeniedError(
        absl::StrCat("image ", image, ": this node runs only images named ",
                     absl::StrJoin(allow, ", "), "... (its --image-allow)"));
  }
  const auto now = std::chrono::steady_clock::now();
  Shared& s = *shared_;
  MutexLock lock(&s.mu);
  auto [it, added] = s.entries.try_emplace(image);
  Entry& entry = it->second;
  const bool fresh =
      now - entry.when <
      (entry.failed.ok()
           ? s.options.name_ttl
           : std::chrono::duration_cast<std::chrono::milliseconds>(
                 kRetryFailedAfter));
  if (!entry.pending && (added || !fresh)) {
    if (s.queue.size() >= kMaxQueuedImages) {
      // Many names at once (one user's thousand bogus images): this one
      // waits for a later call rather than growing the queue.
      if (added) s.entries.erase(it);
      return absl::UnavailableError(
          absl::StrCat("image ", image, ": ", kMaxQueuedImages,
                       " images are being prepared on this node; waiting"));
    }
    entry.pending = true;
    s.queue.push_back(image);
    s.cv.SignalAll();
  }
  // Ready: its files, also while the name is resolved again (a moved tag
  // gets the new image's on a later call).
  if (!entry.rootfs.empty()) return entry.rootfs;
  if (!entry.failed.ok() && !entry.pending) return entry.failed;
  return absl::UnavailableError(
      absl::StrCat("image ", image, ": being prepared on this node"));
}

void ImageStore::Work(std::shared_ptr<Shared> shared) {
  Shared& s = *shared;
  for (;;) {
    std::string image;
    {
      MutexLock lock(&s.mu);
      while (!s.stopping && s.queue.empty()) s.cv.Wait(&s.mu);
      if (s.stopping) return;
      image = std::move(s.queue.front());
      s.queue.pop_front();
      s.working = true;
    }
    absl::StatusOr<std::string> rootfs = Prepare(s.options, image);
    {
      MutexLock lock(&s.mu);
      s.working = false;
      if (s.stopping) {
        s.cv.SignalAll();
        return;
      }
      Entry& entry = s.entries[image];
      entry.when = std::chrono::steady_clock::now();
      entry.pending = false;
      if (rootfs.ok()) {
        entry.rootfs = *rootfs;
        entry.failed = absl::OkStatus();
      } else if (entry.rootfs.empty() || absl::IsNotFound(rootfs.status())) {
        // Gone from the store (or never prepared): its tasks fail. A
        // passing failure to ask podman keeps the files it had.
        entry.rootfs.clear();
        entry.failed = rootfs.status();
      }
      // Evict what failed long ago, so that the map stays small.
      if (s.entries.size() > kMaxKnownImages) {
        std::erase_if(s.entries, [&](const auto& e) {
          return !e.second.pending && !e.second.failed.ok() && e.first != image;
        });
      }
      s.calling = s.on_ready != nullptr;
    }
    // Called without the lock (it takes the agent's); the destructor
    // waits for it to return.
    if (s.on_ready) s.on_ready();
    MutexLock lock(&s.mu);
    s.calling = false;
    s.cv.SignalAll();
  }
}

absl::StatusOr<std::string> ImageStore::Prepare(
    const ImageStoreOptions& options, const std::string& image) {
  auto run = [&](std::vector<std::string> argv,
                 const char* doing) -> absl::StatusOr<std::string> {
    absl::StatusOr<CommandResult> result =
        RunCapture(argv, options.timeout, /*with_stderr=*/true);
    if (!result.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", image, ": ", doing, ": ", result.status().message()));
    }
    if (result->exit_code != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "image ", image, ": ", doing, ": ", argv[0], " ", argv[1], " exited ",
          result->exit_code, ": ", LastLine(result->output)));
    }
    return result->output;
  };
  absl::StatusOr<CommandResult> inspect = RunCapture(
      {options.podman, "image", "inspect", "--format", "{{.Id}}", image},
      options.timeout, /*with_stderr=*/true);
  if (!inspect.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "image ", image, ": cannot ask podman (", inspect.status().message(),
        "); install podman and crun on the node"));
  }
  const std::string id(absl::StripAsciiWhitespace(inspect->output));
  if (inspect->exit_code != 0 || !IsImageId(id)) {
    return absl::NotFoundError(absl::StrCat(
        "image ", image,
        " is not in this node's image store (`podman images` as root; "
        "`podman load` or `podman import` it there): ",
        LastLine(inspect->output)));
  }
  const std::string dir = absl::StrCat(options.dir, "/", id);
  const std::string rootfs = dir + "/rootfs";
  std::error_code ec;
  if (fs::is_directory(rootfs, ec)) return rootfs;
  // Made aside, then renamed into place: a crash leaves no half image.
  fs::create_directories(options.dir, ec);
  chmod(options.dir.c_str(), 0711);
  // Named for this process: a restarted agent never shares it with a
  // podman or tar its predecessor left running.
  const std::string work = absl::StrCat(dir, ".part-", getpid());
  RemoveTree(work, kMaxImageDepth);
  const std::string tar = work + "/image.tar";
  if (!fs::create_directories(work + "/rootfs", ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("image ", image, ": cannot create ", work, ": ",
                     ec ? ec.message() : "it exists"));
  }
  absl::StatusOr<std::string> created =
      run({options.podman, "create", "--pull=never", image, "/nonexistent"},
          "cannot create a container to export");
  absl::Status status = created.status();
  if (status.ok()) {
    const std::string container(absl::StripAsciiWhitespace(*created));
    status = run({options.podman, "export", "-o", tar, container},
                 "cannot export its files")
                 .status();
    run({options.podman, "rm", "--force", container}, "cannot remove")
        .IgnoreError();
  }
  if (status.ok()) {
    status = run({"tar", "--extract", "--numeric-owner", "--same-owner",
                  "--preserve-permissions", "--file", tar, "--directory",
                  work + "/rootfs"},
                 "cannot unpack its files")
                 .status();
  }
  fs::remove(tar, ec);
  if (status.ok()) status = MakeHarmless(work + "/rootfs");
  // Every account enters it (only now: a set-uid file of the image was
  // never reachable from the host).
  if (status.ok() && (chmod(work.c_str(), 0711) != 0 ||
                      chmod((work + "/rootfs").c_str(), 0755) != 0)) {
    status = absl::FailedPreconditionError(
        absl::StrCat("image ", image, ": cannot open up ", work));
  }
  if (status.ok()) {
    fs::rename(work, dir, ec);
    if (ec && !fs::is_directory(rootfs)) {
      status = absl::FailedPreconditionError(absl::StrCat(
          "image ", image, ": cannot move it to ", dir, ": ", ec.message()));
    }
  }
  if (!status.ok()) {
    RemoveTree(work, kMaxImageDepth);
    return status;
  }
  return rootfs;
}

}  // namespace tiresias

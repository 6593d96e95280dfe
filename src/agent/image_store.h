// The root file systems containers run from (container.h), prepared once
// per image on each node.
//
// An image named by a job (JobSpec.image) is either a name in the node's
// podman store (what `podman load` or `podman import` put there, as root)
// or an absolute path to a root file system folder on the node, used as
// it is. A named image is resolved to its id (`podman image inspect`), and
// its files exported once (`podman create` + `podman export`, unpacked
// with owners and modes kept) into <dir>/<id>/rootfs, readable by every
// account, never writable by one: containers mount it read only. Another
// tag of the same id shares it; a tag moved to a new image (a new `podman
// load`) gets the new id's files.
//
// The exported files are made harmless on the host, where any account can
// reach them: root's, no set-id bit, nothing group- or world-writable, no
// device node (MakeHarmless in image_store.cc).
//
// Preparing takes as long as the image is large, so it happens on a
// worker thread: RootFs answers Unavailable meanwhile (the agent starts
// the task on a later pass) and calls `on_ready` when done. The store's
// end does not wait for a podman call in progress: the thread finishes
// it alone and calls nobody. A failure
// (no such image, podman missing) is kept for kRetryFailedAfter, so a task
// fails at once with its reason rather than waiting, and an operator who
// fixed the store is heard soon.
#ifndef TIRESIAS_AGENT_IMAGE_STORE_H_
#define TIRESIAS_AGENT_IMAGE_STORE_H_

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"

namespace tiresias {

struct ImageStoreOptions {
  std::string podman = "podman";  // its path, or a name in PATH
  std::string dir;                // where prepared images go; made 0711
  // The folders below which a root file system folder may be named as an
  // image (JobSpec.image "/srv/images/torch"): the agent makes mount
  // points in it, as root. None: only named images.
  std::vector<std::string> folders;
  // A named image must start with one of these ("localhost/lab/"): the
  // operator's images, not a service's whose files hold its secrets. None:
  // any image of the store.
  std::vector<std::string> allow;
  // Each podman or tar call is killed after this.
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // How long a name's resolution to an id is trusted.
  std::chrono::milliseconds name_ttl{std::chrono::seconds(30)};
};

inline constexpr std::chrono::seconds kRetryFailedAfter{30};
// Names being prepared at once, at most; and names remembered (those that
// failed are forgotten first).
inline constexpr size_t kMaxQueuedImages = 64;
inline constexpr size_t kMaxKnownImages = 1024;

class ImageStore {
 public:
  // `on_ready` is called (on the worker thread, no lock held) each time an
  // image was prepared or failed to be, and never once the destructor has
  // returned (which waits for a call in progress, not for podman).
  ImageStore(ImageStoreOptions options, std::function<void()> on_ready);
  ~ImageStore();

  // Waits until nothing is queued or being prepared (tests).
  void WaitIdle();
  ImageStore(const ImageStore&) = delete;
  ImageStore& operator=(const ImageStore&) = delete;

  // The root file system of `image` (core/image_ref.h): a folder path's
  // own (PermissionDenied unless it is below one of options.folders and
  // every step below that is a real folder of root's alone,
  // FailedPrecondition if a step is no folder or a link), or a named
  // image's once prepared. Unavailable while it is being prepared (or
  // kMaxQueuedImages others are); NotFound naming the image and the node's
  // store when podman does not have it; PermissionDenied for a name that
  // options.allow does not allow; FailedPrecondition when podman or
  // tar failed (their message). Ready files stay served while the name is
  // resolved again and if that fails otherwise than NotFound.
  // Thread-safe.
  absl::StatusOr<std::string> RootFs(const std::string& image);

 private:
  struct Entry {
    bool pending = false;  // queued or being prepared
    std::string rootfs;    // its files once prepared; empty: none
    absl::Status failed;   // why it could not be, the last time
    std::chrono::steady_clock::time_point when;  // prepared or failed
  };
  // What the worker thread shares with the store, and keeps once the
  // store is gone.
  struct Shared {
    ImageStoreOptions options;
    std::function<void()> on_ready;
    Mutex mu;
    SteadyCondVar cv;
    std::map<std::string, Entry> entries ABSL_GUARDED_BY(mu);
    std::deque<std::string> queue ABSL_GUARDED_BY(mu);
    bool working ABSL_GUARDED_BY(mu) = false;  // preparing one
    bool calling ABSL_GUARDED_BY(mu) = false;  // in on_ready
    bool stopping ABSL_GUARDED_BY(mu) = false;
  };
  static void Work(std::shared_ptr<Shared> shared);
  // Resolves and, if needed, exports `image`: its rootfs.
  static absl::StatusOr<std::string> Prepare(const ImageStoreOptions& options,
                                             const std::string& image);

  const std::shared_ptr<Shared> shared_;
};

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_IMAGE_STORE_H_

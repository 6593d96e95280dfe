#include "agent/container.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/status_macros.h"

namespace tiresias {
namespace {

using Json = nlohmann::json;

// A descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

absl::Status Errno(const char* what, const std::string& path) {
  return absl::FailedPreconditionError(
      absl::StrCat(what, " ", path, ": ", std::strerror(errno)));
}

// `relative` (no leading '/'; "" or "." the root) opened O_PATH inside the
// root `root`, symlinks resolved as if root were "/".
int OpenInRoot(int root, const std::string& relative, bool directory) {
  open_how how = {};
  how.flags = O_PATH | O_CLOEXEC | (directory ? O_DIRECTORY : 0);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(syscall(SYS_openat2, root,
                                  relative.empty() ? "." : relative.c_str(),
                                  &how, sizeof(how)));
}

Json Mount(std::string_view destination, std::string_view type,
           std::string_view source, std::vector<std::string> options) {
  return Json{{"destination", destination},
              {"type", type},
              {"source", source},
              {"options", std::move(options)}};
}

Json Bind(const std::string& path, bool read_only) {
  return Mount(path, "bind", path,
               {"rbind", read_only ? "ro" : "rw", "nosuid", "nodev"});
}

// The folders bound at their own paths, parents before what is below
// them, each once.
std::vector<std::string> BoundFolders(const ContainerTask& task) {
  std::vector<std::string> folders;
  for (const std::string* dir :
       {&task.home, &task.working_dir, &task.checkpoint_dir}) {
    if (dir->empty() || (*dir)[0] != '/' || *dir == "/") continue;
    folders.push_back(*dir);
  }
  std::sort(folders.begin(), folders.end());
  folders.erase(std::unique(folders.begin(), folders.end()), folders.end());
  return folders;
}

// Host files bound read-only at their own paths, where the host has them.
constexpr const char* kHostFiles[] = {"/etc/hosts", "/etc/resolv.conf"};

bool Exists(const std::string& path) {
  struct stat st = {};
  return stat(path.c_str(), &st) == 0;
}

// Removes `name` in `dir_fd`: a folder with what is in it (down to
// `depth` more levels), never following a link. Best effort.
void RemoveTreeAt(int dir_fd, const char* name, int depth) {
  const int fd =
      openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    unlinkat(dir_fd, name, 0);  // a file or a link, or nothing
    return;
  }
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    close(fd);
    return;
  }
  if (depth > 0) {
    std::vector<std::string> names;
    while (const dirent* entry = readdir(dir)) {
      const std::string_view n = entry->d_name;
      if (n != "." && n != "..") names.emplace_back(n);
    }
    for (const std::string& n : names) RemoveTreeAt(fd, n.c_str(), depth - 1);
  }
  closedir(dir);
  unlinkat(dir_fd, name, AT_REMOVEDIR);
}

// Writes `text` to a new file `path` (mode 0600), given to uid:gid.
absl::Status WriteOwnedFile(const std::string& path, const std::string& text,
                            uid_t uid, gid_t gid) {
  Fd fd(open(path.c_str(),
             O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.get() < 0) return Errno("cannot create", path);
  if (fchown(fd.get(), uid, gid) != 0) return Errno("cannot chown", path);
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Errno("cannot write", path);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckHostFolder(const std::string& path, uid_t uid) {
  struct stat st = {};
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a folder on this node"));
  }
  std::string ancestor = path;
  while (ancestor.size() > 1) {
    ancestor = ancestor.substr(0, std::max<size_t>(1, ancestor.rfind('/')));
    if (lstat(ancestor.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode) && st.st_uid == uid) return absl::OkStatus();
    break;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      path,
      ": no such folder on this node, nor one of the account's own "
      "above it to make it in"));
}

Json OciConfig(const ContainerTask& task, const std::vector<std::string>& argv,
               const std::vector<std::string>& env) {
  std::vector<std::string> args = {kContainerInitPath};
  if (task.tty) args.push_back("--tty");
  args.push_back("--");
  args.insert(args.end(), argv.begin(), argv.end());
  const std::vector<std::string> no_capability;
  Json mounts = Json::array();
  mounts.push_back(
      Mount("/proc", "bind", "/proc", {"rbind", "nosuid", "nodev", "noexec"}));
  mounts.push_back(Mount("/dev", "tmpfs", "tmpfs",
                         {"nosuid", "strictatime", "mode=755", "size=65536k"}));
  mounts.push_back(
      Mount("/dev/pts", "bind", "/dev/pts", {"rbind", "nosuid", "noexec"}));
  mounts.push_back(
      Mount("/dev/shm", "bind", "/dev/shm", {"rbind", "nosuid", "nodev"}));
  mounts.push_back(Mount("/sys", "bind", "/sys",
                         {"rbind", "ro", "nosuid", "nodev", "noexec"}));
  mounts.push_back(
      Mount("/tmp", "tmpfs", "tmpfs", {"nosuid", "nodev", "mode=1777"}));
  for (const char* file : kHostFiles) {
    if (Exists(file)) mounts.push_back(Bind(file, /*read_only=*/true));
  }
  for (const std::string& dir : BoundFolders(task)) {
    mounts.push_back(Bind(dir, /*read_only=*/false));
  }
  for (const BoundFile& file : task.files) {
    mounts.push_back(
        Mount(file.destination, "bind", file.source,
              {"bind", file.read_only ? "ro" : "rw", "nosuid", "nodev"}));
  }
  for (const std::string& device : task.devices) {
    const std::string name = device.substr(device.rfind('/') + 1);
    mounts.push_back(Mount(absl::StrCat("/dev/", name), "bind", device,
                           {"bind", "rw", "nosuid", "noexec"}));
  }
  mounts.push_back(
      Mount(kContainerInitPath, "bind", task.init, {"bind", "ro", "nosuid"}));
  return Json{
      {"ociVersion", "1.0.2"},
      {"process",
       {{"terminal", false},
        {"user", {{"uid", task.uid}, {"gid", task.gid}}},
        {"args", args},
        {"env", env},
        {"cwd", task.working_dir.empty() ? "/" : task.working_dir},
        {"noNewPrivileges", true},
        {"capabilities",
         {{"bounding", no_capability},
          {"effective", no_capability},
          {"permitted", no_capability},
          {"inheritable", no_capability},
          {"ambient", no_capability}}}}},
      {"root", {{"path", task.rootfs}, {"readonly", true}}},
      {"mounts", mounts},
      {"linux",
       {{"namespaces", Json::array({{{"type", "user"}}, {{"type", "mount"}}})},
        {"uidMappings",
         Json::array(
             {{{"containerID", task.uid}, {"hostID", task.uid}, {"size", 1}}})},
        {"gidMappings", Json::array({{{"containerID", task.gid},
                                      {"hostID", task.gid},
                                      {"size", 1}}})}}}};
}

absl::Status MakeMountPoint(const std::string& rootfs, const std::string& path,
                            bool directory) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("mount point ", path, ": expected an absolute path"));
  }
  Fd root(open(rootfs.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return Errno("cannot open the image's root", rootfs);
  const std::vector<std::string> parts =
      absl::StrSplit(path.substr(1), '/', absl::SkipEmpty());
  std::string parent;  // relative to the root
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i] == "." || parts[i] == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat("mount point ", path, ": expected a normal path"));
    }
    const bool last = i + 1 == parts.size();
    const std::string here =
        parent.empty() ? parts[i] : absl::StrCat(parent, "/", parts[i]);
    const bool want_dir = !last || directory;
    Fd existing(OpenInRoot(root.get(), here, /*directory=*/false));
    if (existing.get() < 0) {
      if (errno != ENOENT) return Errno("cannot look up", rootfs + "/" + here);
      Fd dir(OpenInRoot(root.get(), parent, /*directory=*/true));
      if (dir.get() < 0) return Errno("cannot open", rootfs + "/" + parent);
      // O_PATH descriptors do not take mkdirat: a real one of the folder.
      Fd real(openat(dir.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (real.get() < 0) return Errno("cannot open", rootfs + "/" + parent);
      const char* name = parts[i].c_str();
      if (want_dir) {
        if (mkdirat(real.get(), name, 0755) != 0 && errno != EEXIST) {
          return Errno("cannot create", rootfs + "/" + here);
        }
        Fd made(openat(real.get(), name,
                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
        // The agent's umask (077) must not keep the task out of it.
        if (made.get() < 0 || fchmod(made.get(), 0755) != 0) {
          return Errno("cannot open", rootfs + "/" + here);
        }
      } else {
        Fd made(openat(real.get(), name,
                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                       0644));
        if ((made.get() < 0 && errno != EEXIST) ||
            (made.get() >= 0 && fchmod(made.get(), 0644) != 0)) {
          return Errno("cannot create", rootfs + "/" + here);
        }
      }
    }
    parent = here;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<std::string>>> WriteContainerBundles(
    const ContainerTask& task, const std::vector<std::string>& argv,
    const std::vector<std::vector<std::string>>& envs) {
  for (const std::string& dir : BoundFolders(task)) {
    RETURN_IF_ERROR(CheckHostFolder(dir, task.uid));
    RETURN_IF_ERROR(MakeMountPoint(task.rootfs, dir, /*directory=*/true));
  }
  for (const char* file : kHostFiles) {
    if (Exists(file)) {
      RETURN_IF_ERROR(MakeMountPoint(task.rootfs, file, /*directory=*/false));
    }
  }
  for (const char* dir : {"/proc", "/dev", "/sys", "/tmp"}) {
    RETURN_IF_ERROR(MakeMountPoint(task.rootfs, dir, /*directory=*/true));
  }
  RemoveContainerBundles(task.bundle_dir);  // a stale one: a retry
  if (mkdir(task.bundle_dir.c_str(), 0711) != 0 ||
      chmod(task.bundle_dir.c_str(), 0711) != 0) {
    return Errno("cannot create", task.bundle_dir);
  }
  const std::string state = task.bundle_dir + "/state";
  if (mkdir(state.c_str(), 0700) != 0 ||
      chown(state.c_str(), task.uid, task.gid) != 0) {
    return Errno("cannot create", state);
  }
  std::vector<std::vector<std::string>> argvs;
  for (size_t p = 0; p < envs.size(); ++p) {
    const std::string bundle = absl::StrCat(task.bundle_dir, "/", p);
    if (mkdir(bundle.c_str(), 0711) != 0 || chmod(bundle.c_str(), 0711) != 0) {
      return Errno("cannot create", bundle);
    }
    // One terminal, one controlling process: the first's.
    ContainerTask process = task;
    process.tty = task.tty && p == 0;
    RETURN_IF_ERROR(WriteOwnedFile(bundle + "/config.json",
                                   OciConfig(process, argv, envs[p]).dump(),
                                   task.uid, task.gid));
    argvs.push_back({task.runtime, "--root", state, "--cgroup-manager=disabled",
                     "run", "--bundle", bundle, absl::StrCat(task.id, "-", p)});
  }
  return argvs;
}

void RemoveTree(const std::string& path, int max_depth) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash + 1 == path.size()) return;
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  Fd dir(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return;
  RemoveTreeAt(dir.get(), path.c_str() + slash + 1, max_depth);
}

void RemoveContainerBundles(const std::string& bundle_dir) {
  // Out of the way at once (a new bundle of the name may follow), then
  // removed on a thread of its own: the account could write its state
  // folder, and a million files there must not hold the caller (the
  // launcher's lock). crun's state is a few levels deep; a deeper tree is
  // the account's doing and is left rather than recursed into without end.
  static std::atomic<uint64_t> removals{0};
  const std::string doomed =
      absl::StrCat(bundle_dir, ".removing-", getpid(), "-", ++removals);
  if (rename(bundle_dir.c_str(), doomed.c_str()) != 0) return;
  std::thread([doomed] { RemoveTree(doomed, 16); }).detach();
}

std::vector<std::string> ContainerDevices(const std::string& device_dir,
                                          const std::vector<int>& minors) {
  std::vector<std::string> devices;
  for (int minor : minors) {
    devices.push_back(absl::StrCat(device_dir, "/nvidia", minor));
  }
  for (const char* shared :
       {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"}) {
    devices.push_back(absl::StrCat(device_dir, "/", shared));
  }
  devices.erase(std::remove_if(devices.begin(), devices.end(),
                               [](const std::string& d) { return !Exists(d); }),
                devices.end());
  return devices;
}

}  // namespace tiresias

// The container bundle (container.h) and the image store (image_store.h):
// what a task's OCI config holds, that mount points never land outside an
// image however its links point, and that images come from a real podman
// store (skipped without podman or root).
#include "agent/container.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/image_store.h"
#include "agent/run_capture.h"
#include "core/mutex.h"
#include "core/steady_cond_var.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tiresias {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "container-XXXXXX");
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void Touch(const std::string& path) { std::ofstream(path) << "x"; }

const Json* FindMount(const Json& config, const std::string& destination) {
  for (const Json& mount : config["mounts"]) {
    if (mount["destination"] == destination) return &mount;
  }
  return nullptr;
}

TEST(OciConfigTest, TheTaskRunsAsItsOwnIdsWithNothingMoreThroughTheInit) {
  ContainerTask task;
  task.init = "/opt/tiresias/lib/tiresias-container-init";
  task.rootfs = "/var/lib/agent/images/abc/rootfs";
  task.uid = 1234;
  task.gid = 567;
  task.working_dir = "/home/alice/proj";
  task.checkpoint_dir = "/home/alice/proj/ckpt";
  task.home = "/home/alice";
  task.devices = {"/dev/nvidia2", "/dev/nvidiactl"};
  task.tty = true;
  const Json config = OciConfig(task, {"python3", "train.py"}, {"A=1"});
  const Json& process = config["process"];
  EXPECT_EQ(process["user"], Json({{"uid", 1234}, {"gid", 567}}));
  EXPECT_EQ(process["args"],
            Json({"/dev/tiresias-init", "--tty", "--", "python3", "train.py"}));
  EXPECT_EQ(process["env"], Json({"A=1"}));
  EXPECT_EQ(process["cwd"], "/home/alice/proj");
  EXPECT_EQ(process["noNewPrivileges"], true);
  for (const char* set :
       {"bounding", "effective", "permitted", "inheritable", "ambient"}) {
    EXPECT_EQ(process["capabilities"][set], Json::array()) << set;
  }
  EXPECT_EQ(config["root"], Json({{"path", task.rootfs}, {"readonly", true}}));
  // Only the owner's own ids, to themselves: no root inside, no other id.
  EXPECT_EQ(config["linux"]["uidMappings"],
            Json::parse(R"([{"containerID":1234,"hostID":1234,"size":1}])"));
  EXPECT_EQ(config["linux"]["gidMappings"],
            Json::parse(R"([{"containerID":567,"hostID":567,"size":1}])"));
  // Network, PIDs and IPC stay the host's (NCCL, MASTER_ADDR).
  EXPECT_EQ(config["linux"]["namespaces"],
            Json::parse(R"([{"type":"user"},{"type":"mount"}])"));
  EXPECT_FALSE(config["linux"].contains("devices"));
  // The folders at their own paths, read-write, parents first.
  std::vector<std::string> binds;
  for (const Json& mount : config["mounts"]) {
    if (mount["source"] == mount["destination"] &&
        mount["destination"].get<std::string>().starts_with("/home")) {
      binds.push_back(mount["destination"]);
      EXPECT_THAT(mount["options"].get<std::vector<std::string>>(),
                  ::testing::Contains("rw"));
    }
  }
  EXPECT_THAT(binds, ElementsAre("/home/alice", "/home/alice/proj",
                                 "/home/alice/proj/ckpt"));
  ASSERT_NE(FindMount(config, "/dev/nvidia2"), nullptr);
  EXPECT_EQ((*FindMount(config, "/dev/nvidia2"))["source"], "/dev/nvidia2");
  ASSERT_NE(FindMount(config, "/dev/nvidiactl"), nullptr);
  EXPECT_EQ(FindMount(config, "/dev/nvidia0"), nullptr);
  ASSERT_NE(FindMount(config, "/dev/tiresias-init"), nullptr);
  EXPECT_EQ((*FindMount(config, "/dev/tiresias-init"))["source"], task.init);
  EXPECT_EQ((*FindMount(config, "/sys"))["options"][1], "ro");
  EXPECT_EQ((*FindMount(config, "/dev"))["type"], "tmpfs");

  task.tty = false;
  task.working_dir.clear();
  const Json batch = OciConfig(task, {"true"}, {});
  EXPECT_EQ(batch["process"]["args"],
            Json({"/dev/tiresias-init", "--", "true"}));
  EXPECT_EQ(batch["process"]["cwd"], "/");
}

TEST(MakeMountPointTest, MakesWhatIsMissingInsideTheRootWhereverLinksPoint) {
  TempDir tmp;
  const std::string root = tmp.path() + "/rootfs";
  const std::string outside = tmp.path() + "/outside";
  fs::create_directories(root + "/usr");
  fs::create_directories(outside);
  // An image's links, as if "/" were its root: one absolute to a path that
  // exists on the host, one climbing out.
  fs::create_directory_symlink(outside, root + "/abs");
  fs::create_directory_symlink("../../../../../outside", root + "/up");
  fs::create_directory_symlink("/usr", root + "/home");

  ASSERT_TRUE(MakeMountPoint(root, "/data/a/b", /*directory=*/true).ok());
  EXPECT_TRUE(fs::is_directory(root + "/data/a/b"));
  EXPECT_EQ(fs::status(root + "/data/a").permissions(),
            fs::perms::owner_all | fs::perms::group_read |
                fs::perms::group_exec | fs::perms::others_read |
                fs::perms::others_exec);
  ASSERT_TRUE(MakeMountPoint(root, "/etc/hosts", /*directory=*/false).ok());
  EXPECT_TRUE(fs::is_regular_file(root + "/etc/hosts"));
  // Through the image's own link: inside the image.
  ASSERT_TRUE(MakeMountPoint(root, "/home/alice", /*directory=*/true).ok());
  EXPECT_TRUE(fs::is_directory(root + "/usr/alice"));
  // Links that lead out resolve inside: an error or a folder in the
  // image, never one on the host.
  MakeMountPoint(root, "/abs/x", /*directory=*/true).IgnoreError();
  MakeMountPoint(root, "/up/y", /*directory=*/true).IgnoreError();
  EXPECT_FALSE(fs::exists(outside + "/x"));
  EXPECT_FALSE(fs::exists(outside + "/y"));
  fs::create_directories(root + "/outside");
  ASSERT_TRUE(MakeMountPoint(root, "/up/y", /*directory=*/true).ok());
  EXPECT_TRUE(fs::is_directory(root + "/outside/y"));
  EXPECT_FALSE(fs::exists(outside + "/y"));
  // What exists stays as it is.
  Touch(root + "/usr/file");
  EXPECT_TRUE(MakeMountPoint(root, "/usr/file", /*directory=*/true).ok());
  EXPECT_TRUE(fs::is_regular_file(root + "/usr/file"));
  EXPECT_THAT(MakeMountPoint(root, "relative", true).message(),
              HasSubstr("expected an absolute path"));
  EXPECT_THAT(MakeMountPoint(root, "/a/../b", true).message(),
              HasSubstr("expected a normal path"));
}

TEST(CheckHostFolderTest, AFolderOnTheHostOrOneTheAccountCouldMake) {
  TempDir tmp;
  const uid_t me = getuid();
  const uid_t other = me + 4242;
  EXPECT_TRUE(CheckHostFolder(tmp.path(), other).ok());  // exists
  // Missing: allowed where its nearest folder is the account's own.
  EXPECT_TRUE(CheckHostFolder(tmp.path() + "/ckpt/job-1", me).ok());
  EXPECT_THAT(CheckHostFolder(tmp.path() + "/ckpt/job-1", other).message(),
              HasSubstr("nor one of the account's own above it"));
  EXPECT_FALSE(CheckHostFolder("/etc/ld.so.preload.d-test", other).ok());
  Touch(tmp.path() + "/file");
  EXPECT_THAT(CheckHostFolder(tmp.path() + "/file", me).message(),
              HasSubstr("not a folder on this node"));
}

TEST(RemoveTreeTest, RemovesWithoutFollowingLinksAndStopsAtItsDepth) {
  TempDir tmp;
  const std::string keep = tmp.path() + "/keep";
  fs::create_directories(keep);
  Touch(keep + "/precious");
  const std::string tree = tmp.path() + "/bundle";
  fs::create_directories(tree + "/state/a");
  Touch(tree + "/state/a/f");
  fs::create_directory_symlink(keep, tree + "/state/link");
  RemoveTree(tree, 16);
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(keep + "/precious"));

  fs::create_directories(tree + "/1/2/3");
  Touch(tree + "/1/2/3/deep");
  RemoveTree(tree, 2);  // 3/ is past it: kept, and so are its parents
  EXPECT_TRUE(fs::exists(tree + "/1/2/3/deep"));
  RemoveTree(tree, 16);
  EXPECT_FALSE(fs::exists(tree));
}

TEST(ContainerDevicesTest, ItsOwnGpusAndTheSharedNodesThatExist) {
  TempDir tmp;
  for (const char* name : {"nvidia0", "nvidia2", "nvidia3", "nvidiactl"}) {
    Touch(tmp.path() + "/" + name);
  }
  EXPECT_THAT(ContainerDevices(tmp.path(), {2}),
              ElementsAre(tmp.path() + "/nvidia2", tmp.path() + "/nvidiactl"));
  EXPECT_THAT(ContainerDevices(tmp.path(), {1}),
              ElementsAre(tmp.path() + "/nvidiactl"));
  EXPECT_THAT(ContainerDevices(tmp.path(), {}),
              ElementsAre(tmp.path() + "/nvidiactl"));
}

// A real podman store: images imported from tar files made here.
class ImageStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (podman's store)";
    absl::StatusOr<CommandResult> version =
        RunCapture({"podman", "--version"}, std::chrono::seconds(30));
    if (!version.ok() || version->exit_code != 0) {
      GTEST_SKIP() << "no podman (scripts/setup.sh installs it)";
    }
    tag_ = absl::StrCat("localhost/tiresias-unit-", getpid(), ":1");
  }
  void TearDown() override {
    for (const std::string& id : ids_) {
      RunCapture({"podman", "rmi", "--force", id}, std::chrono::seconds(60))
          .IgnoreError();
    }
  }
  // Imports a one-file image ("hello" holding `text`) as tag_.
  void Import(const std::string& text) {
    TempDir files;
    std::ofstream(files.path() + "/hello") << text;
    const std::string tar = files.path() + ".tar";
    ASSERT_EQ(
        std::system(("tar -C " + files.path() + " -cf " + tar + " .").c_str()),
        0);
    absl::StatusOr<CommandResult> imported = RunCapture(
        {"podman", "import", tar, tag_}, std::chrono::seconds(60), true);
    fs::remove(tar);
    ASSERT_TRUE(imported.ok() && imported->exit_code == 0)
        << (imported.ok() ? imported->output : imported.status().ToString());
    absl::StatusOr<CommandResult> id =
        RunCapture({"podman", "image", "inspect", "--format", "{{.Id}}", tag_},
                   std::chrono::seconds(60));
    if (id.ok()) ids_.push_back(id->output.substr(0, id->output.find('\n')));
  }
  // RootFs(image) once the store has prepared it (or failed to).
  absl::StatusOr<std::string> Ready(ImageStore& store,
                                    const std::string& image) {
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      int before;
      {
        MutexLock lock(&mu_);
        before = ready_calls_;
      }
      absl::StatusOr<std::string> rootfs = store.RootFs(image);
      if (!absl::IsUnavailable(rootfs.status())) return rootfs;
      MutexLock lock(&mu_);
      while (ready_calls_ == before) {
        if (cv_.WaitUntil(&mu_, deadline)) {
          return absl::DeadlineExceededError("not prepared within 60 s");
        }
      }
    }
  }
  std::function<void()> Notify() {
    return [this] {
      MutexLock lock(&mu_);
      ++ready_calls_;
      cv_.SignalAll();
    };
  }

  std::string tag_;
  std::vector<std::string> ids_;  // of the images imported, removed after
  Mutex mu_;
  SteadyCondVar cv_;
  int ready_calls_ = 0;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST_F(ImageStoreTest, PreparesANamedImageOnceAndFollowsAMovedTag) {
  TempDir dir;
  Import("first");
  ImageStore store(
      {.dir = dir.path() + "/images", .name_ttl = std::chrono::milliseconds(0)},
      Notify());
  // Not ready at once: prepared aside, then the callback.
  EXPECT_TRUE(absl::IsUnavailable(store.RootFs(tag_).status()));
  absl::StatusOr<std::string> first = Ready(store, tag_);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Slurp(*first + "/hello"), "first");
  EXPECT_EQ(fs::status(*first).permissions() & fs::perms::others_exec,
            fs::perms::others_exec);
  {
    MutexLock lock(&mu_);
    EXPECT_GE(ready_calls_, 1);
  }
  store.WaitIdle();
  // The tag moved to another image: the old files are served until the
  // name is resolved again (never Unavailable meanwhile), then the new.
  Import("second");
  absl::StatusOr<std::string> second;
  for (int i = 0; i < 600; ++i) {
    second = store.RootFs(tag_);
    ASSERT_TRUE(second.ok()) << second.status();
    if (*second != *first) break;
    usleep(100'000);
  }
  EXPECT_NE(*second, *first);
  EXPECT_EQ(Slurp(*second + "/hello"), "second");
  store.WaitIdle();
  // Nothing half made is left beside them.
  for (const fs::directory_entry& e :
       fs::directory_iterator(dir.path() + "/images")) {
    EXPECT_EQ(e.path().filename().string().find(".part"), std::string::npos)
        << e.path();
  }
}

TEST_F(ImageStoreTest, AnImagesFilesAreHarmlessOnTheHost) {
  TempDir files;
  const std::string root = files.path() + "/root";
  fs::create_directories(root + "/bin");
  fs::create_directories(root + "/drop");
  std::ofstream(root + "/bin/su") << "#!/bin/sh\n";
  ASSERT_EQ(chmod((root + "/bin/su").c_str(), 04755), 0);
  ASSERT_EQ(chmod((root + "/drop").c_str(), 01777), 0);
  std::ofstream(root + "/bin/theirs") << "x";
  ASSERT_EQ(chown((root + "/bin/theirs").c_str(), 4242, 4242), 0);
  ASSERT_EQ(mknod((root + "/disk").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  const std::string tar = files.path() + "/image.tar";
  ASSERT_EQ(std::system(("tar -C " + root + " -cf " + tar + " .").c_str()), 0);
  absl::StatusOr<CommandResult> imported = RunCapture(
      {"podman", "import", tar, tag_}, std::chrono::seconds(60), true);
  ASSERT_TRUE(imported.ok() && imported->exit_code == 0);
  ids_.push_back(tag_);
  TempDir dir;
  ImageStore store({.dir = dir.path() + "/images"}, Notify());
  absl::StatusOr<std::string> rootfs = Ready(store, tag_);
  ASSERT_TRUE(rootfs.ok()) << rootfs.status();
  struct stat st = {};
  ASSERT_EQ(lstat((*rootfs + "/bin/su").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755);  // no set-uid bit
  ASSERT_EQ(lstat((*rootfs + "/drop").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01755);  // nobody's drop box
  ASSERT_EQ(lstat((*rootfs + "/bin/theirs").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);  // not uid 4242's to change under others
  EXPECT_FALSE(fs::exists(*rootfs + "/disk"));  // no device node
  store.WaitIdle();
}

TEST_F(ImageStoreTest, AMissingImageOrAFolderNotGivenIsRefusedWithWhy) {
  TempDir dir;
  const std::string images = dir.path() + "/given";
  fs::create_directories(images + "/torch");
  fs::create_directories(images + "/theirs/inner");
  ASSERT_EQ(chown((images + "/theirs").c_str(), 4242, 4242), 0);
  fs::create_directory_symlink(images + "/torch", images + "/link");
  fs::create_directory_symlink("/etc", images + "/etc-link");
  ImageStore store({.dir = dir.path() + "/images", .folders = {images}},
                   Notify());
  absl::StatusOr<std::string> missing =
      Ready(store, "localhost/tiresias-no-such-image:1");
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_THAT(missing.status().message(),
              HasSubstr("is not in this node's image store"));
  // Kept a while: the next task fails at once.
  EXPECT_TRUE(absl::IsNotFound(
      store.RootFs("localhost/tiresias-no-such-image:1").status()));
  EXPECT_EQ(*store.RootFs(images + "/torch"), images + "/torch");
  EXPECT_TRUE(absl::IsPermissionDenied(store.RootFs("/etc").status()));
  EXPECT_THAT(store.RootFs(images).status().message(),
              HasSubstr("only below its --image-folder"));
  // A link, at the end or on the way, is no image folder; nor is one an
  // account could change (and so swap for a link).
  EXPECT_TRUE(
      absl::IsFailedPrecondition(store.RootFs(images + "/link").status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(
      store.RootFs(images + "/etc-link/ssl").status()));
  EXPECT_THAT(store.RootFs(images + "/theirs/inner").status().message(),
              HasSubstr("is not root's alone"));
  EXPECT_TRUE(absl::IsInvalidArgument(store.RootFs("--privileged").status()));
  store.WaitIdle();
}

TEST_F(ImageStoreTest, OnlyAllowedNamesWhenTheOperatorSaysWhich) {
  TempDir dir;
  Import("allowed");
  ImageStore store(
      {.dir = dir.path() + "/images", .allow = {"localhost/tiresias-unit-"}},
      Notify());
  absl::StatusOr<std::string> allowed = Ready(store, tag_);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(Slurp(*allowed + "/hello"), "allowed");
  absl::StatusOr<std::string> other = store.RootFs("docker.io/postgres:15");
  EXPECT_TRUE(absl::IsPermissionDenied(other.status()));
  EXPECT_THAT(other.status().message(),
              HasSubstr("runs only images named localhost/tiresias-unit-..."));
  store.WaitIdle();
}

}  // namespace
}  // namespace tiresias

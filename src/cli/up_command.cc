// `tiresias up`: a whole local cluster in one command, for trying the
// system on one machine: a master and A agents with G emulated GPUs each,
// all in this process. Ctrl-C (or SIGTERM) stops it cleanly: the agents
// hand their jobs back (SIGTERM, so jobs checkpoint; recorded as
// preemptions, never failures), then the master shuts down. The state
// survives in --state-dir, so `tiresias up` again resumes the jobs that had
// not finished. Its agents are like any agent: run as root, they run each
// task as its job owner's Unix account and refuse root tasks unless
// --allow-root-tasks (agent_daemon.h); otherwise tasks run as this user.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/agent_daemon.h"
#include "cli/cluster_client.h"
#include "cli/cluster_commands.h"
#include "cli/master_flags.h"
#include "core/status_macros.h"
#include "dashboard/dashboard_server.h"
#include "master/http_listener.h"
#include "security/cert_dirs.h"
#include "security/pem_files.h"
#include "security/private_files.h"
#include "security/tls.h"

namespace tiresias {
namespace {

// examples/train.py by its absolute path when this binary sits in a build
// of the repository (build/src/cli), so that the line `up` prints works
// from any folder; as is otherwise.
std::string ExampleJob() {
  std::error_code ec;
  std::filesystem::path dir =
      std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
  for (int up = 0; !ec && up < 5 && !dir.empty(); ++up) {
    const std::filesystem::path script = dir / "examples" / "train.py";
    if (std::filesystem::exists(script, ec)) return script.string();
    if (dir == dir.parent_path()) break;
    dir = dir.parent_path();
  }
  return "examples/train.py";
}

struct UpFlags {
  MasterFlags master;
  int agents = 2;
  int gpus = 2;
  double grace_seconds = 30;
  bool allow_root_tasks = false;
  // Where the dashboard serves (host:port; port 0 picks a free one).
  std::string dashboard_listen = "127.0.0.1:0";
};

// The TLS identity of `node`'s agent: <ca_dir>/<node>/agent.pem, issued
// by the CA in `ca_dir` on the first run.
absl::StatusOr<security::TlsConfig> AgentTls(const std::string& ca_dir,
                                             const std::string& node) {
  const std::string dir =
      (std::filesystem::path(ca_dir) / absl::StrCat("agent-", node)).string();
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(dir) / "agent.pem", ec)) {
    security::IssueFilesRequest request;
    request.identity = {security::IdentityKind::kAgent, node};
    request.ca_dir = ca_dir;
    request.out_dir = dir;
    RETURN_IF_ERROR(security::IssueCertFiles(request).status());
  }
  return security::LoadTlsDir(dir, "agent");
}

// <state_dir>/public, made 0755: what every user may read.
absl::StatusOr<std::string> PublicDir(const std::string& state_dir) {
  const std::string dir =
      (std::filesystem::path(state_dir) / "public").string();
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot create: ", std::strerror(errno)));
  }
  if (chmod(dir.c_str(), 0755) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot set mode 0755: ", std::strerror(errno)));
  }
  return dir;
}

// Writes <state_dir>/public/ca.pem (0644, its folder 0755): the CA
// certificate every user's client needs, out of the private state. Returns
// its path.
absl::StatusOr<std::string> WritePublicCa(const std::string& state_dir,
                                          const std::string& ca_pem) {
  ASSIGN_OR_RETURN(const std::string dir, PublicDir(state_dir));
  const std::string path = dir + "/ca.pem";
  RETURN_IF_ERROR(security::WriteFileAtomically(path, ca_pem, 0644));
  return path;
}

// Where `up` keeps the address its master listened on (kAddressFile, its
// own) and the lines a client sources (kEnvFile, under public/, which
// every user may read: no secret, the token stays in its own file).
constexpr char kAddressFile[] = "master-address";
// And the --job-port-base it chose (JobPortBase).
constexpr char kPortBaseFile[] = "job-port-base";

// The first of the ports its jobs' processes listen on (MASTER_PORT and
// the worker addresses, --job-port-base): the one a previous `up` on
// `state_dir` chose, or a new one from 20000-21984 in steps of 16. Two
// `up` clusters on one host (two users, two test runs) would otherwise
// give their job 1 the same MASTER_PORT, and one job's ranks could meet
// the other's rendezvous. The range keeps the ports (up to 10,000 above
// it) below the kernel's ephemeral ports (32768 and up), which any
// outgoing connection may hold.
int JobPortBase(const std::string& state_dir) {
  std::ifstream in(std::filesystem::path(state_dir) / kPortBaseFile);
  int kept = 0;
  if (in >> kept && kept >= 1024 && kept <= 55000) return kept;
  std::random_device random;
  return 20000 + 16 * static_cast<int>(random() % 125);
}
constexpr char kEnvFile[] = "public/env";

// The address a previous `up` on `state_dir` listened on, when `listen`
// asks for any free port (port 0) of the same host: reusing it keeps valid
// the TIRESIAS_MASTER its users exported. Empty otherwise.
std::string PreviousAddress(const std::string& state_dir,
                            const std::string& listen) {
  absl::StatusOr<HostPort> asked = ParseHostPort(listen);
  if (!asked.ok() || asked->port != 0) return "";
  std::ifstream in(std::filesystem::path(state_dir) / kAddressFile);
  std::string previous;
  if (!std::getline(in, previous)) return "";
  absl::StatusOr<HostPort> was = ParseHostPort(previous);
  if (!was.ok() || was->port == 0 || was->host != asked->host) return "";
  return previous;
}

// How a second user gets going (`up` started as root runs their jobs as
// their own accounts), and a warning if they cannot reach the CA copy.
// The token command is `tiresias admin token create` (admin_token_command).
std::string OtherUsersNote(const std::string& address,
                           const std::string& public_ca) {
  std::string note = absl::StrCat(
      "  other users: an admin issues each a token, `tiresias admin token "
      "create --user NAME` (printed once), and they\n"
      "    export TIRESIAS_MASTER=",
      address, " TIRESIAS_CA=", public_ca, " TIRESIAS_TOKEN=<their token>\n");
  if (const std::string closed = security::FirstClosedFolder(public_ca);
      !closed.empty()) {
    absl::StrAppend(&note, "    (they cannot reach it: ", closed,
                    " is closed to them; copy ", public_ca,
                    " where they can read it)\n");
  }
  return note;
}

int RunUp(const UpFlags& f) {
  // Its master, agents and dashboard use no client credential (the
  // dashboard's browsers log in with their own token), and the jobs its
  // agents run never see its environment (task_env.h): an admin's token in
  // the shell that started it is dropped, and said so.
  if (const std::string dropped = cli::DropClientCredentials("tiresias up");
      !dropped.empty()) {
    std::fprintf(stderr, "%s\n", dropped.c_str());
  }
  if (f.agents < 1 || f.gpus < 1) {
    return cli::Fail(absl::StrCat("--agents ", f.agents, " --gpus ", f.gpus,
                                  ": expected at least one of each"));
  }
  if (!(f.grace_seconds >= 0)) {
    return cli::Fail(absl::StrCat("--grace ", f.grace_seconds,
                                  ": expected a non-negative number"));
  }
  if (absl::Status listen = ParseHostPort(f.dashboard_listen).status();
      !listen.ok()) {
    return cli::Fail(
        absl::StrCat("--dashboard-listen ", f.dashboard_listen, ": ",
                     listen.message()));
  }
  BlockStopSignals();
  // What it keeps holds every job's environment, tokens and keys: its own
  // alone, but for the public CA copy (below).
  security::MakeFilesPrivateByDefault();
  master::RealClock clock;
  // Secure by default: a CA and every certificate under the state folder
  // (made on the first run, kept after), and the master's first admin
  // token beside them; --insecure for plain text.
  MasterFlags master_flags = f.master;
  // Absolute, as printed: jobs start in their submitter's folder.
  const std::string state_dir =
      std::filesystem::absolute(f.master.state_dir).lexically_normal().string();
  master_flags.state_dir = state_dir;
  // Its agents' state dirs lie in it, which tasks of other accounts
  // traverse (agent_daemon.h), and the public CA copy: 0711.
  master_flags.state_dir_mode = 0711;
  // A second `up` on a state dir in use says so rather than wait.
  master_flags.wait_as_standby = false;
  const std::string tls_dir =
      (std::filesystem::path(state_dir) / "tls").string();
  if (!master_flags.insecure && master_flags.tls_dir.empty()) {
    master_flags.init_ca = tls_dir;
  }
  if (master_flags.job_port_base == 0) {
    master_flags.job_port_base = JobPortBase(state_dir);
  }
  // Secure, /metrics wants a token like everything else (the default;
  // --metrics-open opts out).
  // On any free port, the previous run's first if it is free again.
  const std::string previous = PreviousAddress(state_dir, master_flags.listen);
  absl::StatusOr<RunningMaster> master = absl::UnavailableError("not started");
  std::string moved;
  if (!previous.empty()) {
    MasterFlags again = master_flags;
    again.listen = previous;
    master = StartMaster(again, &clock);
    // Another master leading the state dir, or a stop signal: no retry.
    if (!master.ok() && !absl::IsFailedPrecondition(master.status()) &&
        !absl::IsCancelled(master.status())) {
      moved = absl::StrCat(
          "  (its previous address, ", previous,
          ", is taken now: export TIRESIAS_MASTER again, or source ",
          (std::filesystem::path(state_dir) / kEnvFile).string(), ")\n");
    }
  }
  if (!master.ok() && (previous.empty() || !moved.empty())) {
    master = StartMaster(master_flags, &clock);
  }
  if (!master.ok()) return cli::Fail(std::string(master.status().message()));

  std::vector<std::unique_ptr<AgentDaemon>> agents;
  for (int i = 0; i < f.agents; ++i) {
    AgentOptions o;
    o.master_address = master->address;
    o.node_name = absl::StrCat("node-", i);
    o.emulate_gpus = f.gpus;
    o.state_dir = absl::StrCat(state_dir, "/agent-", i);
    // One folder for all its agents: a job resumes on any of them.
    o.checkpoint_fallback_dir = absl::StrCat(state_dir, "/checkpoints");
    o.grace = std::chrono::milliseconds(
        static_cast<int64_t>(f.grace_seconds * 1000));
    // Started by root, `up` runs root's own jobs as root (the admin token
    // it makes is root's; other users' jobs run as their accounts).
    o.allow_root_tasks = f.allow_root_tasks || geteuid() == 0;
    if (!master_flags.insecure) {
      absl::StatusOr<security::TlsConfig> tls = AgentTls(
          master_flags.tls_dir.empty() ? tls_dir : master_flags.tls_dir,
          o.node_name);
      if (!tls.ok()) {
        for (auto& a : agents) a->Stop();
        master->Shutdown();
        return cli::Fail(absl::StrCat("agent ", o.node_name, ": ",
                                      tls.status().message()));
      }
      o.tls = *std::move(tls);
    }
    auto agent = std::make_unique<AgentDaemon>(std::move(o));
    absl::Status started = agent->Start();
    if (!started.ok()) {
      for (auto& a : agents) a->Stop();
      master->Shutdown();
      return cli::Fail(absl::StrCat("agent node-", i, ": ",
                                    started.message()));
    }
    agents.push_back(std::move(agent));
  }
  // The dashboard, on a free port of this machine. With TLS it trusts the
  // cluster CA and nothing else; it has no identity of its own (each
  // browser logs in with a token).
  DashboardOptions dashboard_options;
  dashboard_options.master_address = master->address;
  dashboard_options.listen = f.dashboard_listen;
  if (!master_flags.insecure) {
    dashboard_options.tls = security::TlsConfig{.ca_pem = master->tls.ca_pem};
  }
  dashboard_options.log = [](const std::string& line) {
    std::fprintf(stderr, "%s\n", line.c_str());
  };
  absl::StatusOr<std::unique_ptr<DashboardServer>> dashboard =
      DashboardServer::Start(dashboard_options);
  // A port the operator chose that cannot be had is an error, not a cluster
  // without its dashboard where they expect it (port 0 never fails so).
  if (!dashboard.ok() && ParseHostPort(f.dashboard_listen)->port != 0) {
    for (auto& a : agents) a->Stop();
    master->Shutdown();
    std::string why(dashboard.status().message());
    const std::string prefix = absl::StrCat("--listen ", f.dashboard_listen,
                                            ": ");
    if (why.rfind(prefix, 0) == 0) why = why.substr(prefix.size());
    return cli::Fail(
        absl::StrCat("--dashboard-listen ", f.dashboard_listen, ": ", why));
  }
  const std::string dashboard_url =
      dashboard.ok()
          ? absl::StrCat("http://", BoundAddress(f.dashboard_listen,
                                                 (*dashboard)->port()),
                         "/")
          : absl::StrCat("(off: ", dashboard.status().message(), ")");
  // What a client needs, to paste: the CA to trust and the admin's token
  // (made on the first run; the file stays).
  std::string exports = absl::StrCat("  export TIRESIAS_MASTER=",
                                     master->address, "\n");
  const std::string env_path =
      (std::filesystem::path(state_dir) / kEnvFile).string();
  const std::string source_note =
      absl::StrCat("  (or: source ", env_path, ")\n");
  const std::string token_file =
      (std::filesystem::path(state_dir) / "admin-token").string();
  std::string metrics_note;
  std::string dashboard_note;
  if (MetricsTokenRequired(master_flags)) {
    metrics_note = " (send \"Authorization: Bearer <token>\")";
  }
  if (!master_flags.insecure) {
    dashboard_note = absl::StrCat(" (log in with a token, e.g. the admin's in ",
                                  token_file, ")");
    // The CA certificate (no secret) where every user can read it.
    absl::StatusOr<std::string> public_ca =
        WritePublicCa(state_dir, master->tls.ca_pem);
    if (!public_ca.ok()) {
      for (auto& a : agents) a->Stop();
      master->Shutdown();
      return cli::Fail(std::string(public_ca.status().message()));
    }
    absl::StrAppend(&exports, "  export TIRESIAS_CA=", *public_ca, "\n",
                    "  export TIRESIAS_TOKEN_FILE=", token_file, "\n");
    if (moved.empty()) absl::StrAppend(&exports, source_note);
    // Not root, every job runs as this user: no one else's to run.
    if (geteuid() == 0) {
      absl::StrAppend(&exports, OtherUsersNote(master->address, *public_ca));
    }
  } else {
    absl::StrAppend(&exports,
                    "  (--insecure: no TLS, no authentication)\n");
    if (moved.empty()) absl::StrAppend(&exports, source_note);
  }
  // The address for the next run, and the exports for a shell to source:
  // first unsetting what belongs to another cluster (a secure one's CA and
  // tokens, for an insecure master), then the lines printed.
  std::string env_lines =
      master_flags.insecure
          ? "unset TIRESIAS_CA TIRESIAS_TOKEN TIRESIAS_TOKEN_FILE\n"
          : "unset TIRESIAS_TOKEN\n";
  for (absl::string_view line : absl::StrSplit(exports, '\n')) {
    if (absl::StartsWith(line, "  export ")) {
      absl::StrAppend(&env_lines, line.substr(2), "\n");
    }
  }
  absl::Status kept = security::WriteFileAtomically(
      (std::filesystem::path(state_dir) / kAddressFile).string(),
      master->address + "\n", 0600);
  if (kept.ok() && f.master.job_port_base == 0) {
    kept = security::WriteFileAtomically(
        (std::filesystem::path(state_dir) / kPortBaseFile).string(),
        absl::StrCat(master_flags.job_port_base, "\n"), 0600);
  }
  if (kept.ok()) kept = PublicDir(state_dir).status();
  if (kept.ok()) {
    kept = security::WriteFileAtomically(env_path, env_lines, 0644);
  }
  if (!kept.ok()) {
    std::fprintf(stderr, "tiresias up: %s\n",
                 std::string(kept.message()).c_str());
  }
  std::printf(
      "tiresias up: master on %s, %d agent(s) x %d emulated GPUs, state in "
      "%s\n"
      "%s%s"
      "  tiresias submit --gpus 1 -- /usr/bin/python3 %s "
      "--steps 200 --step-time 0.1\n"
      "  tiresias jobs; tiresias nodes\n"
      "  tiresias logs -f JOB\n"
      "  metrics: http://%s/metrics%s\n"
      "  dashboard: %s%s\n"
      "Ctrl-C stops the cluster.\n",
      master->address.c_str(), f.agents, f.gpus, state_dir.c_str(),
      exports.c_str(), moved.c_str(), ExampleJob().c_str(),
      master->http ? master->http_address.c_str() : "(off)",
      metrics_note.c_str(), dashboard_url.c_str(),
      dashboard.ok() ? dashboard_note.c_str() : "");
  std::fflush(stdout);

  std::fprintf(stderr, "tiresias up: %s received, stopping\n",
               WaitForStopSignal());
  if (dashboard.ok()) (*dashboard)->Shutdown();
  // Every agent leaves at once (so that no job is moved from one leaving
  // node to another), stopping its tasks as preemptions: the jobs
  // checkpoint, the master records them preempted, and the next `tiresias
  // up` on this state dir resumes them.
  std::fprintf(stderr,
               "tiresias up: handing the jobs back (they checkpoint); again "
               "to stop at once\n");
  for (auto& a : agents) a->BeginDrain();
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(
                           f.grace_seconds * 1000)) +
                       std::chrono::seconds(10);
  auto all_drained = [&] {
    return std::all_of(agents.begin(), agents.end(),
                       [](const auto& a) { return a->drained(); });
  };
  while (!all_drained() && std::chrono::steady_clock::now() < give_up) {
    if (StopSignalWithin(std::chrono::milliseconds(100)) != nullptr) break;
  }
  int code = 0;
  for (auto& a : agents) {
    absl::Status drained = a->WaitDrained(std::chrono::milliseconds(0));
    if (!drained.ok()) {
      std::fprintf(stderr, "tiresias up: %s\n",
                   std::string(drained.message()).c_str());
      code = 1;
    }
  }
  master->Shutdown();
  return code;
}

}  // namespace

void AddUpCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<UpFlags>();
  CLI::App* cmd = app.add_subcommand(
      "up",
      "Run a local cluster in this process: a master and --agents agents "
      "with --gpus emulated GPUs each, until Ctrl-C. Started by a user "
      "other than root, every job runs as that user. Started as root, the "
      "agents run each job as its owner's Unix account (`tiresias submit` "
      "sends the login name, $USER), as any agent does: a job whose owner "
      "has no account here fails to start; root's own jobs run as root (a "
      "separate `tiresias agent` refuses them unless --allow-root-tasks). "
      "A job that names no --checkpoint-dir "
      "checkpoints under its owner's home, "
      "~/.tiresias/checkpoints/<cluster id>/job-<id> (or --checkpoint-base; "
      "an account without a home gets a private folder in "
      "--state-dir/checkpoints). Everything in --state-dir is closed to "
      "other users but public/ca.pem, the CA certificate their clients "
      "need.");
  flags->master.state_dir = "./tiresias-up";
  flags->master.http_listen = "127.0.0.1:0";
  flags->master.job_port_base = 0;  // JobPortBase's
  AddMasterFlags(cmd, &flags->master);
  cmd->get_option("--job-port-base")
      ->description(
          "A job's MASTER_PORT is this plus (16 x job id + attempt) mod "
          "10000, or the next free one on its nodes. By default `up` picks "
          "one from 20000-21984 on its first run and keeps it in "
          "--state-dir, so that two `up` clusters on one host seldom give "
          "their jobs one port")
      ->default_str("");
  cmd->add_option("--agents", flags->agents, "Number of agents (nodes)")
      ->capture_default_str();
  cmd->add_option("--gpus", flags->gpus, "Emulated GPUs per agent")
      ->capture_default_str();
  cmd->add_option("--grace", flags->grace_seconds,
                  "Seconds between SIGTERM and SIGKILL when a job is "
                  "preempted or stopped")
      ->capture_default_str();
  cmd->add_option("--dashboard-listen", flags->dashboard_listen,
                  "host:port the dashboard serves on (port 0 picks a free "
                  "one; it answers only to this host's own names, see "
                  "`tiresias dashboard --help`)")
      ->capture_default_str();
  cmd->add_flag("--allow-root-tasks", flags->allow_root_tasks,
                "Run jobs whose owner is root (uid 0): what `up` started as "
                "root always does (kept for scripts that give it)");
  cmd->callback([flags, exit_code] { *exit_code = RunUp(*flags); });
}

}  // namespace tiresias

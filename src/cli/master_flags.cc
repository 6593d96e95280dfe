#include "cli/master_flags.h"

#include <pwd.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/shell_help.h"
#include "cli/sweep.h"
#include "core/large_allocations.h"
#include "core/open_files.h"
#include "core/status_macros.h"
#include "master/job_validation.h"
#include "master/metrics.h"
#include "place/placement.h"
#include "sched/policy.h"
#include "security/cert_dirs.h"
#include "security/notify_key.h"
#include "security/pem_files.h"
#include "security/private_files.h"
#include "security/tokens.h"

namespace tiresias {

absl::StatusOr<MasterOptions> ToOptions(const MasterFlags& f) {
  MasterOptions o;
  o.state_dir = f.state_dir;
  o.policy = f.policy;
  if (absl::Status known = MakePolicy(f.policy, {}).status(); !known.ok()) {
    // Before the state is opened, so that the message is about the flag
    // (a simulator-only baseline such as gandiva is refused here).
    return absl::InvalidArgumentError(
        absl::StrCat("--policy ", f.policy, ": ", known.message()));
  }
  o.placement = f.placement;
  if (!(f.pack_limit >= 0 && f.pack_limit <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--pack-limit ", f.pack_limit, ": expected a skew between 0 and 1"));
  }
  o.placement_options.pack_limit = f.pack_limit;
  o.learn_pack_limit = !f.fixed_pack_limit;
  if (!(f.pack_limit_refresh_seconds > 0) ||
      !std::isfinite(f.pack_limit_refresh_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pack-limit-refresh ", f.pack_limit_refresh_seconds,
                     ": expected a positive number of seconds"));
  }
  o.pack_limit_refresh = Seconds{f.pack_limit_refresh_seconds};
  if (!(f.pack_limit_cost >= 0 && f.pack_limit_cost <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--pack-limit-cost ", f.pack_limit_cost,
                     ": expected a fraction between 0 and 1"));
  }
  o.pack_limit_learning.cost_threshold = f.pack_limit_cost;
  auto queues = QueueConfig::Parse(f.thresholds);
  if (!queues.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--thresholds ", f.thresholds, ": ",
                     queues.status().message()));
  }
  o.queues = *queues;
  ASSIGN_OR_RETURN(o.promote_knob, ParseKnob(f.promote_knob));
  ASSIGN_OR_RETURN(o.queue_order, ParseQueueOrderFlag(f.queue_order));
  if (!(f.node_timeout_seconds > 0) ||
      !std::isfinite(f.node_timeout_seconds)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--node-timeout ", f.node_timeout_seconds,
                     ": expected a positive number of seconds"));
  }
  o.node_timeout = Seconds{f.node_timeout_seconds};
  o.max_heartbeat_rate = f.max_heartbeat_rate;  // checked by CLI11
  // Shorter than 0.1 s would have the scheduling thread write the store
  // without pause; past a day the chart has nothing to show.
  if (f.history_interval_seconds != 0 &&
      !(f.history_interval_seconds >= 0.1 &&
        f.history_interval_seconds <= 86400)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--history-interval ", f.history_interval_seconds,
                     ": expected a number of seconds from 0.1 to 86400, or "
                     "0 (no history)"));
  }
  o.history_interval = Seconds{f.history_interval_seconds};
  if (f.max_gpus_per_node < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-gpus-per-node ", f.max_gpus_per_node,
                     ": expected a positive number"));
  }
  o.max_gpus_per_node = f.max_gpus_per_node;
  if (f.max_no_preempt_gpus < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-no-preempt-gpus ", f.max_no_preempt_gpus,
        ": expected -1 (any size), 0 (refuse such jobs) or a GPU count"));
  }
  o.max_no_preempt_gpus = f.max_no_preempt_gpus;
  if (f.no_preempt_for != "admins" && f.no_preempt_for != "users") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--no-preempt-for ", f.no_preempt_for, ": expected admins or users"));
  }
  o.no_preempt_users = f.no_preempt_for == "users";
  if (f.fair_share != "user" && f.fair_share != "job") {
    return absl::InvalidArgumentError(
        absl::StrCat("--fair-share ", f.fair_share, ": expected user or job"));
  }
  o.fair_per_user = f.fair_share == "user";
  if (!(f.fair_quantum > 0) || !std::isfinite(f.fair_quantum)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--fair-quantum ", f.fair_quantum,
                     ": expected a positive number of GPU-seconds"));
  }
  o.fair_quantum = f.fair_quantum;
  if (f.job_port_base < 1024 || f.job_port_base > 55000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--job-port-base ", f.job_port_base,
                     ": expected 1024 to 55000 (jobs use the 10,000 ports "
                     "above it)"));
  }
  o.base_port = f.job_port_base;
  if (f.max_nodes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--max-nodes ", f.max_nodes, ": expected a positive number"));
  }
  o.max_nodes = f.max_nodes;
  if (f.max_streams_per_user < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-streams-per-user ", f.max_streams_per_user,
                     ": expected 0 (no limit) or a positive number"));
  }
  o.max_streams_per_user = f.max_streams_per_user;
  if (f.metrics_token_required && f.insecure) {
    return absl::InvalidArgumentError(
        "--metrics-token-required: an --insecure master checks no tokens; "
        "give --tls-dir or --init-ca instead of --insecure");
  }
  if (f.metrics_token_required && f.metrics_open) {
    return absl::InvalidArgumentError(
        "--metrics-open, --metrics-token-required: give only one (a token is "
        "required by default; --metrics-open serves /metrics to anyone)");
  }
  o.require_auth = !f.insecure;
  o.hide_others_commands = f.hide_commands;
  o.notify_hosts = f.notify_hosts;
  for (const std::string& host : f.notify_hosts) {
    if (host.empty() || host.find_first_of("/ @") != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--notify-hosts \"", host,
          "\": expected host names or host:port, comma-separated, or *"));
    }
  }
  for (const std::string& url : f.notify_admin) {
    JobRequest probe;
    probe.notify = url;
    if (absl::Status bad = ValidateNotify(probe); !bad.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--notify-admin ", url, ": ", bad.message()));
    }
  }
  o.admin_notify = f.notify_admin;
  o.sendmail = f.sendmail;
  if (!f.checkpoint_base.empty()) {
    const std::filesystem::path base(f.checkpoint_base);
    bool dotdot = false;
    for (const auto& part : base) dotdot = dotdot || part == "..";
    if (!base.is_absolute() || dotdot) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--checkpoint-base ", f.checkpoint_base,
          ": expected an absolute path without '..' (the same folder on "
          "every node)"));
    }
    std::string normal = base.lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
    o.checkpoint_base = normal;
  }
  return o;
}

bool MetricsTokenRequired(const MasterFlags& f) {
  return !f.insecure && !f.metrics_open;
}

// The address to print: the host the user gave with the port bound (which
// differs from the one given when it was 0).
std::string BoundAddress(const std::string& listen, int port) {
  const size_t colon = listen.rfind(':');
  const std::string host =
      colon == std::string::npos ? listen : listen.substr(0, colon);
  return absl::StrCat(host, ":", port);
}

void AddMasterFlags(CLI::App* cmd, MasterFlags* flags) {
  MasterFlags& f = *flags;
  cmd->add_option("--listen", f.listen,
                  "host:port to serve on (port 0 picks a free one; the "
                  "address is printed)")->capture_default_str();
  cmd->add_option("--state-dir", f.state_dir,
                  "Folder for state.db (created if missing; only its owner "
                  "may read it)")
      ->capture_default_str();
  cmd->add_option("--checkpoint-base", f.checkpoint_base,
                  "Absolute folder, the same on every node, under which a job "
                  "that names no --checkpoint-dir checkpoints: "
                  "DIR/<owner>/<cluster id>/job-<id>, DIR/<owner> made 0700 "
                  "for the owner by the agent (default: the owner's home, "
                  "~/.tiresias/checkpoints/<cluster id>/job-<id>)");
  cmd->add_option("--policy", f.policy, "Scheduling policy")
      ->capture_default_str()
      ->check(cli::ChoicesHint(PolicyNames()));
  cmd->add_option("--thresholds", f.thresholds,
                  "Queue bounds in GPU-seconds: 3600 (K=2) or 3250:7200 (K=3)")
      ->capture_default_str();
  cmd->add_option("--promote-knob", f.promote_knob,
                  "PROMOTEKNOB: a number, or inf to turn promotion off")
      ->capture_default_str();
  cmd->add_option("--queue-order", f.queue_order, kQueueOrderHelp)
      ->capture_default_str();
  cmd->add_option("--placement", f.placement,
                  "Placement scheme (default: the policy's own)")
      ->check(cli::ChoicesHint(PlacerNames()));
  cmd->add_option("--pack-limit", f.pack_limit,
                  "PACKLIMIT: `profiled` placement consolidates a job whose "
                  "measured tensor skew is above it; its start value, then "
                  "learnt from measured runs (see --fixed-pack-limit)")
      ->capture_default_str();
  cmd->add_flag("--fixed-pack-limit", f.fixed_pack_limit,
                "Keep --pack-limit; do not learn it from the runs measured "
                "(they are recorded all the same)");
  cmd->add_option("--pack-limit-refresh", f.pack_limit_refresh_seconds,
                  "Seconds between refits of the PACKLIMIT classifier while "
                  "new runs are measured")
      ->capture_default_str();
  cmd->add_option("--pack-limit-cost", f.pack_limit_cost,
                  "Spreading a job is costly when its spread iteration time "
                  "exceeds its consolidated one by more than this fraction")
      ->capture_default_str();
  cmd->add_option("--history-interval", f.history_interval_seconds,
                  "Seconds between samples of busy GPUs and waiting jobs "
                  "kept for the dashboard's chart, 0.1 to 86400 (0: none)")
      ->capture_default_str();
  cmd->add_option("--node-timeout", f.node_timeout_seconds,
                  "Seconds of agent silence before its node is declared lost "
                  "and its jobs rerun elsewhere; must exceed an agent's "
                  "--grace by its lease (see `tiresias agent --help`)")
      ->capture_default_str();
  cmd->add_option("--max-heartbeat-rate", f.max_heartbeat_rate,
                  "Heartbeats per second all agents send at rest, at most: "
                  "a larger cluster's agents heartbeat every nodes / this "
                  "seconds, at most --node-timeout / 5 and a third of their "
                  "lease (0: every 2 s)")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--max-gpus-per-node", f.max_gpus_per_node,
                  "Refuse agents that report more GPUs than this")
      ->capture_default_str();
  cmd->add_option("--max-no-preempt-gpus", f.max_no_preempt_gpus,
                  "Largest job accepted with --no-preempt (it keeps its GPUs "
                  "until it ends): 0 refuses such jobs, -1 any size")
      ->capture_default_str();
  cmd->add_option("--no-preempt-for", f.no_preempt_for,
                  "Who may submit --no-preempt jobs on a secure master: "
                  "admins (the default) or users")
      ->capture_default_str()
      ->check(cli::ChoicesHint({"admins", "users"}));
  cmd->add_option("--fair-share", f.fair_share,
                  "user: order jobs first by their user's attained GPU "
                  "service, then by the policy (a user's share does not "
                  "grow with the jobs they submit); job: the policy alone")
      ->capture_default_str()
      ->check(cli::ChoicesHint({"user", "job"}));
  cmd->add_option("--fair-quantum", f.fair_quantum,
                  "With --fair-share user: users change places when one is "
                  "this many GPU-seconds ahead")
      ->capture_default_str();
  cmd->add_option("--job-port-base", f.job_port_base,
                  "A job's MASTER_PORT is this plus (16 x job id + attempt) "
                  "mod 10000 on its rank 0's node, or the next port free of "
                  "the cluster's other jobs on its nodes (its processes' "
                  "TF_CONFIG ports follow it): move it off ports other "
                  "services or another cluster on the same hosts use")
      ->capture_default_str();
  cmd->add_option("--max-nodes", f.max_nodes,
                  "Refuse a new node name beyond this many nodes")
      ->capture_default_str();
  cmd->add_option("--max-streams-per-user", f.max_streams_per_user,
                  "Streams one user may hold open at once: event watches "
                  "(tiresias watch), attached sessions (attach) and "
                  "port-forward's connections (each one); 0: no limit")
      ->capture_default_str();
  cmd->add_option("--store", f.store,
                  "Where the state lives: sqlite (default: <state-dir>/"
                  "state.db) or etcd://HOST:PORT[,HOST:PORT...][/PREFIX] "
                  "(replicated through etcd: every master keeps a copy in "
                  "its state dir, one leads by an etcd lease, the others "
                  "wait as standbys, on any machines)");
  cmd->add_option("--etcd-ca", f.etcd_ca,
                  "With --store etcd://: TLS to etcd, trusting this CA (PEM)");
  cmd->add_option("--etcd-cert", f.etcd_cert,
                  "With --etcd-ca: this master's client certificate (PEM)");
  cmd->add_option("--etcd-key", f.etcd_key, "With --etcd-cert: its key (PEM)");
  cmd->add_option("--lead-ttl", f.lead_ttl_seconds,
                  "With --store etcd://: seconds a leader's lease outlives "
                  "its last renewal (a dead leader's standbys wait this long; "
                  "a leader cut off from etcd steps down before it ends)")
      ->capture_default_str();
  cmd->add_option("--snapshot-every", f.snapshot_every,
                  "With --store etcd://: the leader writes a snapshot of the "
                  "state to etcd and drops the log before it every this many "
                  "log entries (0: never); a master whose copy is behind it "
                  "starts from the snapshot")
      ->capture_default_str();
  cmd->add_option("--tls-dir", f.tls_dir,
                  "TLS: a folder with ca.pem, master.pem and master-key.pem "
                  "(`tiresias admin ca init` and `admin master-cert issue`)");
  cmd->add_option("--init-ca", f.init_ca,
                  "TLS: like --tls-dir, and create a CA and the master's "
                  "certificate there first if missing (the CA's key stays "
                  "there: keep the folder safe)");
  cmd->add_option("--san", f.sans,
                  "With --init-ca: another host name or IP address clients "
                  "and agents reach the master at; repeatable");
  cmd->add_flag("--insecure", f.insecure,
                "No TLS and no authentication: anyone who reaches the "
                "master may do anything (a trusted laptop, tests)");
  cmd->add_option("--notify-hosts", f.notify_hosts,
                  "Hosts (host or host:port, comma-separated; * for any) "
                  "that jobs' webhooks (`submit --notify URL`) may go to; "
                  "none by default, so that no user can have the master "
                  "send requests inside its network")
      ->delimiter(',');
  cmd->add_option("--notify-admin", f.notify_admin,
                  "A webhook URL (or mailto:) told when a node is lost or "
                  "drained; repeatable")
      ->delimiter(',');
  cmd->add_option("--notify-key-file", f.notify_key_file,
                  "The key webhooks are signed with (HMAC-SHA256), made "
                  "if missing; give it to the receivers (default "
                  "<state-dir>/notify-key)");
  cmd->add_option("--sendmail", f.sendmail,
                  "The program mailto: notifications are sent with (-t "
                  "-oi, the message on its stdin)")
      ->capture_default_str();
  cmd->add_flag("--hide-commands", f.hide_commands,
                "Listings show other users' jobs without their commands");
  cmd->add_option("--http-listen", f.http_listen,
                  "host:port to serve /metrics (Prometheus) and /healthz on, "
                  "over plain HTTP (port 0 picks a free one; default: not "
                  "served). /healthz is open to probes and says whether the "
                  "master runs --insecure");
  cmd->add_flag("--metrics-token-required", f.metrics_token_required,
                "The default on a secure master, kept for scripts: /metrics "
                "answers only \"Authorization: Bearer <token>\" with a token "
                "the master accepts (any user's), 401 otherwise; the token "
                "crosses plain HTTP, so scrape over loopback or a trusted "
                "network. Not with --insecure or --metrics-open");
  cmd->add_flag("--metrics-open", f.metrics_open,
                "Serve /metrics without a token on a secure master. Risk: "
                "anyone who reaches --http-listen reads the cluster's job, "
                "node and GPU counts and the refusal counts by user; only "
                "for a port no untrusted host can reach");
}

void RunningMaster::Shutdown() {
  if (http) http->Shutdown();
  if (server) server->Shutdown();
}

absl::Status CheckTlsChoice(const MasterFlags& f) {
  const int given = !f.tls_dir.empty() + !f.init_ca.empty() + f.insecure;
  if (given == 0) {
    return absl::FailedPreconditionError(
        "no TLS: give --tls-dir DIR (ca.pem, master.pem, master-key.pem from "
        "`tiresias admin ca init DIR` and `tiresias admin master-cert "
        "issue`), --init-ca DIR to create them there, or --insecure for "
        "plain text with no authentication");
  }
  if (given > 1) {
    return absl::InvalidArgumentError(
        "--tls-dir, --init-ca and --insecure: give only one");
  }
  return absl::OkStatus();
}

absl::StatusOr<security::TlsConfig> MasterTls(const MasterFlags& f) {
  RETURN_IF_ERROR(CheckTlsChoice(f));
  if (f.insecure) return security::InsecureTlsConfig();
  const std::string dir = f.tls_dir.empty() ? f.init_ca : f.tls_dir;
  if (!f.init_ca.empty()) {
    std::error_code ec;
    if (!std::filesystem::exists(std::filesystem::path(dir) / "ca.pem", ec)) {
      RETURN_IF_ERROR(security::InitCaDir(dir, "tiresias cluster CA"));
    }
    if (!std::filesystem::exists(std::filesystem::path(dir) / "master.pem",
                                 ec)) {
      security::IssueFilesRequest request;
      request.identity = {security::IdentityKind::kMaster, ""};
      request.ca_dir = dir;
      request.out_dir = dir;
      request.sans = f.sans;
      RETURN_IF_ERROR(security::IssueCertFiles(request).status());
    }
  }
  absl::StatusOr<security::TlsConfig> tls = security::LoadTlsDir(dir, "master");
  if (!tls.ok()) {
    return absl::Status(tls.status().code(),
                        absl::StrCat(f.tls_dir.empty() ? "--init-ca "
                                                       : "--tls-dir ",
                                     dir, ": ", tls.status().message()));
  }
  return tls;
}

std::string LoginName() {
  if (const passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name) {
    return pw->pw_name;
  }
  return "admin";
}

absl::StatusOr<std::string> BootstrapAdminToken(MasterState& state,
                                                const std::string& state_dir) {
  if (!state.ListTokens().empty()) return std::string();
  ASSIGN_OR_RETURN(MasterState::IssuedTokenText token,
                   state.CreateToken(LoginName(), /*admin=*/true,
                                     std::nullopt, "first admin token"));
  const std::string path =
      std::filesystem::absolute(std::filesystem::path(state_dir) /
                                "admin-token")
          .lexically_normal()
          .string();
  RETURN_IF_ERROR(
      security::WriteFileAtomically(path, token.text + "\n", 0600));
  return path;
}

// The webhooks' signing key: the file's first line, the file made (0600,
// 256 random bits in hex) when missing.
absl::StatusOr<std::string> NotifyKey(const MasterFlags& f) {
  const std::string path =
      security::NotifyKeyPath(f.state_dir, f.notify_key_file);
  std::ifstream in(path);
  std::string key;
  if (in && std::getline(in, key) && !key.empty()) return key;
  if (std::filesystem::exists(path)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--notify-key-file ", path, ": cannot read a key from it"));
  }
  key = security::RandomHex(32);
  if (absl::Status s = security::WriteFileAtomically(path, key + "\n", 0600);
      !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--notify-key-file ", path, ": ", s.message()));
  }
  return key;
}

absl::StatusOr<RunningMaster> StartMaster(const MasterFlags& f,
                                          master::Clock* clock) {
  // First: a standby on etcd loads and replays the state while it waits
  // for the lead, and large blocks it frees there would raise glibc's
  // thresholds for good (core/large_allocations.h).
  FixLargeAllocationThreshold();
  ASSIGN_OR_RETURN(MasterOptions options, ToOptions(f));
  // Before the TLS folder, which may lie in it. Users' checkpoints, the
  // public files and the TLS folder (0700, keys 0600, certificates 0644:
  // cert_dirs.h) are left as they are.
  auto make_private = [&]() -> absl::Status {
    absl::StatusOr<security::PrivateDir> state_dir = security::EnsurePrivateDir(
        f.state_dir, f.state_dir_mode, {"public", "checkpoints", "tls"});
    if (!state_dir.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--state-dir ", f.state_dir, ": ", state_dir.status().message()));
    }
    if (!state_dir->tightened.empty()) {
      std::fprintf(
          stderr, "tiresias: %s\n",
          security::DescribeTightened(f.state_dir, *state_dir).c_str());
    }
    return absl::OkStatus();
  };
  // Nothing of the state is read or written before this master leads it
  // (only a new state dir is made first, to hold the lead).
  std::error_code exists_error;
  const bool existed = std::filesystem::exists(f.state_dir, exists_error);
  RunningMaster m;
  ASSIGN_OR_RETURN(TakenLead taken,
                   TakeLeadToStart(f, existed, make_private, &options, &m));
  std::unique_ptr<Store> store = std::move(taken.store);
  ASSIGN_OR_RETURN(security::TlsConfig tls, MasterTls(f));
  ASSIGN_OR_RETURN(options.notify_key, NotifyKey(f));
  // A connection per agent and per client: a shell's 1,024 would refuse
  // the thousandth agent, silently. Raised as far as the hard limit lets.
  const int64_t files = RaiseOpenFileLimit();
  if (files >= 0 && files < 4096) {
    std::fprintf(stderr,
                 "tiresias master: WARNING: at most %lld open files (its hard "
                 "limit): fewer than %lld agents and clients can connect at "
                 "once; raise it (ulimit -Hn as root, LimitNOFILE= in a "
                 "systemd unit)\n",
                 static_cast<long long>(files),
                 static_cast<long long>(files - kReservedOpenFiles));
  }
  m.tls = tls;
  absl::StatusOr<std::unique_ptr<MasterState>> state =
      store != nullptr ? MasterState::Open(options, clock, std::move(store))
                       : MasterState::Open(options, clock);
  // A leader killed a moment ago may still hold the file's own lock while
  // the kernel closes its descriptors (the lead's first): wait that out.
  for (int tries = 0;
       tries < 100 && !taken.on_etcd && absl::IsUnavailable(state.status()) &&
       absl::StrContains(state.status().message(), "in use by another process");
       ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    state = MasterState::Open(options, clock);
  }
  if (!state.ok()) {
    return absl::Status(state.status().code(),
                        absl::StrCat("cannot open the master state in ",
                                     f.state_dir, ": ",
                                     state.status().message()));
  }
  m.state = std::move(*state);
  if (options.require_auth) {
    // A new cluster: its first admin, who issues everyone else's tokens.
    ASSIGN_OR_RETURN(m.admin_token_path,
                     BootstrapAdminToken(*m.state, f.state_dir));
  }
  absl::StatusOr<std::unique_ptr<MasterServer>> server =
      MasterServer::Start(m.state.get(), clock, f.listen, tls);
  if (!server.ok()) {
    return server.status();  // names the address and the likely cause
  }
  m.server = std::move(*server);
  m.address = BoundAddress(f.listen, m.server->port());
  if (absl::Status said = taken.set_address(m.address); !said.ok()) {
    std::fprintf(stderr, "tiresias master: WARNING: %s\n",
                 std::string(said.message()).c_str());  // only for standbys
  }
  if (!f.http_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MasterHttpServer>> http =
        MasterHttpServer::Start(
            m.state.get(), f.http_listen,
            {.metrics_token_required = MetricsTokenRequired(f),
             // The gRPC server outlives the HTTP one (RunningMaster).
             .more_metrics = [server = m.server.get()] {
               return RenderUserStreams(server->stream_counts());
             }});
    if (!http.ok()) {
      m.server->Shutdown();
      return absl::Status(http.status().code(),
                          absl::StrCat("--http-listen ", f.http_listen, ": ",
                                       http.status().message()));
    }
    m.http = std::move(*http);
    m.http_address = BoundAddress(f.http_listen, m.http->port());
  }
  return m;
}

}  // namespace tiresias

// The master's flags, shared by `tiresias master` and `tiresias up`.
#ifndef TIRESIAS_CLI_MASTER_FLAGS_H_
#define TIRESIAS_CLI_MASTER_FLAGS_H_

#include <sys/types.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "master/clock.h"
#include "master/etcd_store.h"
#include "master/http_server.h"
#include "master/master_state.h"
#include "master/server.h"
#include "master/state_dir_lead.h"
#include "security/tls.h"

namespace tiresias {

struct MasterFlags {
  std::string listen = "127.0.0.1:50051";
  std::string state_dir = "./tiresias-state";
  // The state dir's mode (not a flag): the master's alone, 0700; `tiresias
  // up` keeps its agents' state dirs in it, which tasks of other accounts
  // traverse (agent_daemon.h), and its public CA copy: 0711.
  mode_t state_dir_mode = 0700;
  // While another master leads the state dir: wait as its standby (not a
  // flag: `master` does), or fail at once saying who leads (`up`).
  bool wait_as_standby = true;
  // --checkpoint-base (MasterOptions::checkpoint_base); empty: homes.
  std::string checkpoint_base;
  std::string policy = "tiresias-l";
  std::string thresholds = "3600";
  std::string promote_knob = "inf";
  std::string queue_order = "stable";
  std::string placement;
  // PACKLIMIT of `profiled` placement: its start value, learnt from the
  // cluster's measured runs unless fixed_pack_limit.
  double pack_limit = 0.5;
  bool fixed_pack_limit = false;
  double pack_limit_refresh_seconds = 60;
  double history_interval_seconds = 10;  // 0: no cluster history
  double pack_limit_cost = 0.10;
  double node_timeout_seconds = 60;
  int max_heartbeat_rate = 200;  // 0: agents keep the 2 s interval
  int max_gpus_per_node = 1024;
  // Jobs submitted --no-preempt: at most this many GPUs; 0 refuses them,
  // -1 (the default) accepts any size.
  int max_no_preempt_gpus = -1;
  // Who may submit --no-preempt on a secure master: "admins" or "users".
  std::string no_preempt_for = "admins";
  // Per-user fair share: "user" or "job" (off), and its step (GPU-s).
  std::string fair_share = "job";
  double fair_quantum = 600;
  // MASTER_PORT of a launch: this + (16 x job + attempt) mod 10000.
  int job_port_base = 29500;
  // host:port for /metrics and /healthz over HTTP; empty: not served.
  std::string http_listen;
  // /metrics on a secure master answers only requests with a valid bearer
  // token, unless metrics_open (the operator's explicit opt-out: anyone who
  // reaches the port reads the job counts). metrics_token_required is the
  // default now; the flag is kept so that scripts giving it still work.
  // An --insecure master has no tokens: its /metrics is open.
  bool metrics_token_required = false;
  bool metrics_open = false;
  // Security: exactly one of these. --tls-dir: ca.pem, master.pem and
  // master-key.pem (`tiresias admin ca init` and `admin master-cert
  // issue`); --init-ca: the same, created there if missing (the CA's key
  // stays there: keep it safe); --insecure: plain text, no
  // authentication (a warning at start, on /healthz and the dashboard).
  std::string tls_dir;
  std::string init_ca;
  bool insecure = false;
  std::vector<std::string> sans;  // with --init-ca: more names for the cert
  bool hide_commands = false;     // listings hide others' commands
  // Notifications: hosts jobs' webhooks may go to, admins' webhooks, the
  // signing key's file (empty: <state-dir>/notify-key), sendmail.
  std::vector<std::string> notify_hosts;
  std::vector<std::string> notify_admin;
  std::string notify_key_file;
  std::string sendmail = "/usr/sbin/sendmail";
  bool max_nodes_set = false;
  int max_nodes = 10000;
  int max_streams_per_user = 64;
  // --store: empty (or "sqlite"): the state dir's state.db, led by its
  // lock; "etcd://HOST:PORT,...[/PREFIX]": a copy of it in the state dir,
  // replicated through etcd, led by an etcd lease (master/etcd_store.h),
  // with TLS to etcd when etcd_ca is given.
  std::string store;
  std::string etcd_ca, etcd_cert, etcd_key;
  double lead_ttl_seconds = 5;
  // The leader snapshots its copy and compacts the log every this many
  // entries (0: never; master/etcd_snapshot.h).
  int64_t snapshot_every = 10000;
};

// Registers --listen, --state-dir, --policy, --thresholds, --promote-knob,
// --placement, --node-timeout and --http-listen on `cmd`, writing into
// *flags (which must outlive the parse).
void AddMasterFlags(CLI::App* cmd, MasterFlags* flags);

// Validates the flags into the master's options.
absl::StatusOr<MasterOptions> ToOptions(const MasterFlags& f);
// Exactly one of --tls-dir, --init-ca and --insecure.
absl::Status CheckTlsChoice(const MasterFlags& f);
// Whether /metrics needs a token: on a secure master unless --metrics-open.
bool MetricsTokenRequired(const MasterFlags& f);

// The address to print: the host the user gave with the port bound (which
// differs from the one given when it was 0).
std::string BoundAddress(const std::string& listen, int port);

// A master serving: its state and its gRPC server. Shut the server down
// before destroying the state.
struct RunningMaster {
  // On an etcd store (--store etcd://): the lead and the store's log,
  // which the state's store writes through (so destroyed after it).
  std::shared_ptr<EtcdLead> etcd_lead;
  std::shared_ptr<EtcdLog> etcd_log;
  std::unique_ptr<MasterState> state;
  security::TlsConfig tls;  // the master's; insecure with --insecure
  // Where a first admin token was written at this start (its state had
  // none); empty if none was made.
  std::string admin_token_path;
  std::unique_ptr<MasterServer> server;
  std::string address;  // host:port it listens on
  std::unique_ptr<MasterHttpServer> http;  // null without --http-listen
  std::string http_address;                // host:port of `http`
  // Stops the HTTP and then the gRPC server.
  void Shutdown();
};

// Validates the flags, creates the state dir (state_dir_mode; an existing
// one set so, and what it holds closed to group and others but its
// public/, checkpoints/ and tls/ folders: security/private_files.h, said on
// stderr), opens the state and starts serving. The caller should have made
// its files private by default first (security::MakeFilesPrivateByDefault).
// Errors are one line, ready for "tiresias: ".
absl::StatusOr<RunningMaster> StartMaster(const MasterFlags& f,
                                          master::Clock* clock);

// Takes the lead of `state_dir` (master/state_dir_lead.h), waiting as a
// standby while another master holds it (saying on stderr whom it waits
// on, and again when that changes, and when it takes over), or, without
// `wait`, failing at once (FailedPrecondition) saying who leads.
// Cancelled if SIGINT or SIGTERM (blocked by the caller) comes first.
absl::StatusOr<std::shared_ptr<StateDirLead>> TakeLead(
    const std::string& state_dir, bool wait);

// The same on an etcd store (--store etcd://): joins its masters, keeps the
// state dir's copy (state.db) up to date with the store's log while
// another leads, and takes the lead; then the copy is complete and its
// writes go to the log. A lead lost later ends the process (exit status
// 3, said on stderr): a supervisor starts it again, as a standby.
struct EtcdStart {
  std::shared_ptr<EtcdLead> lead;
  std::shared_ptr<EtcdLog> log;
  std::unique_ptr<SqliteStore> store;
};
absl::StatusOr<EtcdStart> TakeEtcdLead(const MasterFlags& f);

// StartMaster's lead, by --store: TakeLead's of the state dir (made
// private by `make_private`, once it leads if it `existed`), or
// TakeEtcdLead's, whose store, lead and log it puts in `options` and `m`.
// Errors name the flag.
struct TakenLead {
  bool on_etcd = false;
  std::unique_ptr<Store> store;  // on etcd: the copy, for MasterState::Open
  std::function<absl::Status(const std::string&)> set_address;
};
absl::StatusOr<TakenLead> TakeLeadToStart(
    const MasterFlags& f, bool existed,
    const std::function<absl::Status()>& make_private, MasterOptions* options,
    RunningMaster* m);

// Blocks SIGINT and SIGTERM in this thread (call before starting any
// thread, so every thread inherits the mask); WaitForStopSignal then waits
// for one and returns its name.
void BlockStopSignals();
const char* WaitForStopSignal();
// "SIGINT" or "SIGTERM" if one arrived within `timeout` (signals blocked by
// BlockStopSignals), else null: e.g. the second Ctrl-C that cuts a clean
// shutdown short.
const char* StopSignalWithin(std::chrono::milliseconds timeout);
// The daemons' SIGHUP (`master` reloads its --config file, `agent` says it
// does not), blocked as BlockStopSignals blocks the others, so that it no
// longer ends them. WaitForSignal: WaitForStopSignal, or "SIGHUP".
// HangupPending: whether one arrived (taking it), without waiting.
void BlockHangupSignal();
const char* WaitForSignal();
bool HangupPending();

}  // namespace tiresias

#endif  // TIRESIAS_CLI_MASTER_FLAGS_H_

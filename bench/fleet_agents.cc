#include "fleet_agents.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "proto/tiresias.grpc.pb.h"
#include "security/cert_dirs.h"
#include "security/identity.h"
#include "security/tls.h"

namespace tiresias::fleet {

double Now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

namespace v1 = tiresias::v1;

double WallNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "fleet_bench: %s\n", why.c_str());
  std::exit(1);
}

struct Task {
  v1::TaskStatus status;
  double end_at = INFINITY;  // when it exits on its own
};

using FleetImpl = Fleet::Impl;

struct Agent {
  int index = 0;
  std::string name;
  std::unique_ptr<v1::AgentRegistry::Stub> stub;
  FleetImpl* fleet = nullptr;

  std::mutex mu;
  bool in_flight = false;  // a Register or Heartbeat outstanding
  bool registered = false;
  double next_call = 0;  // steady seconds
  double backoff = 0.2;
  int64_t node_id = 0;
  uint64_t session = 0;
  uint64_t held = 0;  // the desired version held
  uint64_t seq = 0;
  double interval = 2, lease = 30;
  double last_ok_sent = 0;  // when the last successful call was sent
  double registered_at = 0;
  std::map<Key, Task> tasks;
  std::set<Key> wanted;
  class Watch* watch = nullptr;
  double watch_retry = 0;
};

class Watch : public grpc::ClientReadReactor<v1::DesiredState> {
 public:
  Watch(Agent* agent, const v1::WatchDesiredStateRequest& request)
      : agent_(agent), request_(request) {}
  void Start() {
    agent_->stub->async()->WatchDesiredState(&ctx_, &request_, this);
    StartRead(&message_);
    StartCall();
  }
  void Cancel() { ctx_.TryCancel(); }
  void OnReadDone(bool ok) override;
  void OnDone(const grpc::Status&) override;

 private:
  Agent* agent_;
  grpc::ClientContext ctx_;
  v1::WatchDesiredStateRequest request_;
  v1::DesiredState message_;
};

Key KeyOf(const v1::TaskRef& ref) {
  return {ref.job_id(), ref.attempt(), ref.rank()};
}

// Seconds of "sleep S" (argv), or infinity.
double Duration(const v1::StartTask& start) {
  double s = 0;
  if (start.command_size() == 2 && start.command(0) == "sleep" &&
      absl::SimpleAtod(start.command(1), &s)) {
    return s;
  }
  return INFINITY;
}

}  // namespace

class Fleet::Impl {
 public:
  Counters counters;

  Impl(const std::string& address, const security::PemPair& ca, int agents,
       int gpus, int attempt_ms)
      : gpus_(gpus), boot_(absl::StrCat("fleet-bench-", getpid())) {
    agents_.reserve(agents);
    for (int i = 0; i < agents; ++i) {
      auto agent = std::make_unique<Agent>();
      agent->index = i;
      agent->name = absl::StrCat("fleet-", i);
      agent->fleet = this;
      auto request = security::RequestFor(
          {security::IdentityKind::kAgent, agent->name}, "localhost", {});
      if (!request.ok()) Die(request.status().ToString());
      auto pair = security::IssueCertificate(ca, *request);
      if (!pair.ok()) Die(pair.status().ToString());
      security::TlsConfig tls{.ca_pem = ca.cert_pem,
                              .cert_pem = pair->cert_pem,
                              .key_pem = pair->key_pem};
      security::DialOptions dial;
      dial.args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
      dial.args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
      dial.args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      dial.several_masters_attempt_ms = attempt_ms;
      agent->stub =
          v1::AgentRegistry::NewStub(security::Dial(address, tls, dial));
      agents_.push_back(std::move(agent));
    }
  }

  ~Impl() { StopTicking(); }

  void StartTicking() {
    ticking_ = true;
    ticker_ = std::thread([this] {
      while (ticking_) {
        Tick();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    });
  }
  void StopTicking() {
    if (!ticking_.exchange(false)) return;
    ticker_.join();
    for (auto& a : agents_) {
      std::lock_guard lock(a->mu);
      if (a->watch) a->watch->Cancel();
    }
    // Calls and streams end on their own (deadlines of 10 s, streams
    // cancelled); their callbacks touch the agents, so wait for every one.
    while (outstanding_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  std::vector<double> RegistrationTimes(double since) {
    std::vector<double> out;
    for (auto& a : agents_) {
      std::lock_guard lock(a->mu);
      if (a->registered && a->registered_at >= since) {
        out.push_back(a->registered_at);
      }
    }
    return out;
  }
  // Tasks running now, by key.
  std::set<Key> Running() {
    std::set<Key> out;
    for (auto& a : agents_) {
      std::lock_guard lock(a->mu);
      for (const auto& [key, task] : a->tasks) {
        if (task.status.state() == v1::TASK_STATE_RUNNING) out.insert(key);
      }
    }
    return out;
  }

  // As the real agent (agent_daemon.cc, WatchLoop): a push of the
  // session's newer version has it report at once.
  void Poke(Agent* a, const v1::DesiredState& pushed) {
    std::lock_guard lock(a->mu);
    if (pushed.session() == a->session && pushed.version() > a->held) {
      a->next_call = 0;
    }
  }

  void WatchEnded(Agent* a, Watch* w) {
    std::lock_guard lock(a->mu);
    if (a->watch == w) {
      a->watch = nullptr;
      a->watch_retry = Now() + 1;
    }
  }
  // A stream's last act (its reactor is deleted by then).
  void WatchDone() { --outstanding_; }

 private:
  void Tick() {
    const double now = Now();
    for (auto& holder : agents_) {
      Agent* a = holder.get();
      std::unique_lock lock(a->mu);
      // Tasks that ended on their own; the lease.
      bool changed = false;
      for (auto& [key, task] : a->tasks) {
        if (task.status.state() != v1::TASK_STATE_RUNNING) continue;
        if (now >= task.end_at) {
          End(&task, v1::TASK_STATE_EXITED, 0, v1::STOP_REASON_UNSPECIFIED);
          counters.exited++;
          changed = true;
        } else if (a->last_ok_sent > 0 && now - a->last_ok_sent > a->lease) {
          // As a real agent's lease files, registered again or not.
          End(&task, v1::TASK_STATE_PREEMPTED, 143, v1::STOP_REASON_FENCED);
          counters.fenced++;
          changed = true;
        }
      }
      if (changed) a->next_call = 0;
      if (a->registered && !a->watch && now >= a->watch_retry) OpenWatch(a);
      if (a->in_flight || now < a->next_call) continue;
      a->in_flight = true;
      ++outstanding_;
      if (a->registered) {
        Heartbeat(a, now);
      } else {
        Register(a, now);
      }
    }
  }

  static void End(Task* task, v1::TaskState state, int exit_code,
                  v1::StopReason reason) {
    task->status.set_state(state);
    task->status.set_exit_code(exit_code);
    task->status.set_end_time(WallNow());
    if (reason != v1::STOP_REASON_UNSPECIFIED) {
      task->status.set_stop_reason(reason);
    }
  }

  // One call of agent `a` (Register or Heartbeat, by `start`), its tasks
  // reported; `done` runs with the agent's lock held when it ends.
  template <typename Request, typename Response, typename Start, typename Done>
  void Send(Agent* a, Request request, Start start, Done done) {
    struct Call {
      grpc::ClientContext ctx;
      Request req;
      Response resp;
    };
    auto* call = new Call;
    call->req = std::move(request);
    call->req.set_boot_id(boot_);
    call->req.set_report_seq(++a->seq);
    for (const auto& [key, task] : a->tasks) {
      *call->req.add_tasks() = task.status;
    }
    call->ctx.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::seconds(10));
    start(&call->ctx, &call->req, &call->resp,
          [this, a, call, done](grpc::Status status) {
            {
              std::lock_guard lock(a->mu);
              a->in_flight = false;
              done(status, call->resp);
            }
            --outstanding_;
            delete call;
          });
  }

  void Register(Agent* a, double now) {
    v1::RegisterRequest req;
    req.set_name(a->name);
    req.set_address("127.0.0.1");
    req.set_gpus(gpus_);
    req.set_agent_token(absl::StrCat("fleet-bench-agent-token-", a->index));
    req.set_grace_seconds(30);  // `tiresias agent`'s default --grace
    Send<v1::RegisterRequest, v1::RegisterResponse>(
        a, std::move(req),
        [a](auto&&... args) {
          a->stub->async()->Register(std::forward<decltype(args)>(args)...);
        },
        [this, a, now](const grpc::Status& status,
                       const v1::RegisterResponse& resp) {
          if (!status.ok()) {
            counters.register_failures++;
            Retry(a);
            return;
          }
          counters.registers++;
          a->registered = true;
          a->registered_at = Now();
          a->node_id = resp.node_id();
          a->session = resp.session();
          a->lease = resp.lease_seconds();
          a->last_ok_sent = now;
          a->held = 0;
          if (a->watch) a->watch->Cancel();
          a->watch_retry = 0;
          TakeAnswer(a, resp);
        });
  }

  void Heartbeat(Agent* a, double now) {
    v1::HeartbeatRequest req;
    req.set_node_id(a->node_id);
    req.set_session(a->session);
    req.set_desired_version(a->held);
    Send<v1::HeartbeatRequest, v1::HeartbeatResponse>(
        a, std::move(req),
        [a](auto&&... args) {
          a->stub->async()->Heartbeat(std::forward<decltype(args)>(args)...);
        },
        [this, a, now](const grpc::Status& status,
                       const v1::HeartbeatResponse& resp) {
          if (status.ok()) {
            counters.heartbeats++;
            a->last_ok_sent = std::max(a->last_ok_sent, now);
            TakeAnswer(a, resp);
          } else if (status.error_code() == grpc::StatusCode::NOT_FOUND) {
            a->registered = false;  // the master restarted: register
            a->next_call = 0;
          } else {
            counters.heartbeat_failures++;
            Retry(a);
          }
        });
  }

  // What an answer to Register or Heartbeat tells: the interval, the ends
  // acknowledged, the desired state.
  template <typename Response>
  void TakeAnswer(Agent* a, const Response& resp) {
    if (resp.heartbeat_interval_seconds() > 0) {
      a->interval = resp.heartbeat_interval_seconds();
    }
    a->backoff = 0.2;
    a->next_call = Now() + a->interval;
    Acknowledge(a, resp.acknowledged());
    counters.rejected += resp.rejected_size();
    Apply(a, resp.desired());
  }

  void Retry(Agent* a) {
    thread_local std::mt19937 rng(std::random_device{}());
    a->next_call =
        Now() + a->backoff * std::uniform_real_distribution(0.8, 1.2)(rng);
    a->backoff = std::min(1.0, a->backoff * 2);
  }

  void Acknowledge(
      Agent* a, const google::protobuf::RepeatedPtrField<v1::TaskRef>& acks) {
    for (const v1::TaskRef& ref : acks) {
      auto it = a->tasks.find(KeyOf(ref));
      if (it != a->tasks.end() &&
          it->second.status.state() != v1::TASK_STATE_RUNNING) {
        a->tasks.erase(it);
      }
    }
  }

  // What the real agent does with a desired state: start what is new, stop
  // what is asked to stop or no longer wanted.
  void Apply(Agent* a, const v1::DesiredState& d) {
    if (d.delta()) {
      if (d.base_version() != a->held) {
        a->held = 0;  // report again for the whole state
        a->next_call = 0;
        return;
      }
      for (const v1::StartTask& s : d.run()) a->wanted.insert(KeyOf(s.task()));
      for (const v1::TaskRef& r : d.removed()) a->wanted.erase(KeyOf(r));
    } else {
      a->wanted.clear();
      for (const v1::StartTask& s : d.run()) a->wanted.insert(KeyOf(s.task()));
    }
    a->held = d.version();
    bool changed = false;
    const double now = Now();
    for (const v1::StartTask& s : d.run()) {
      const Key key = KeyOf(s.task());
      if (a->tasks.count(key)) continue;
      Task& task = a->tasks[key];
      *task.status.mutable_task() = s.task();
      task.status.set_state(v1::TASK_STATE_RUNNING);
      for (int g : s.gpu_indexes()) task.status.add_gpu_indexes(g);
      task.status.set_start_time(WallNow());
      task.end_at = now + Duration(s);
      counters.started++;
      changed = true;
    }
    for (auto& [key, task] : a->tasks) {
      if (task.status.state() != v1::TASK_STATE_RUNNING) continue;
      v1::StopReason reason = v1::STOP_REASON_UNSPECIFIED;
      bool stop = !a->wanted.count(key);
      for (const v1::StopTask& s : d.stop()) {
        if (s.job_id() == std::get<0>(key) && s.attempt() == std::get<1>(key)) {
          stop = true;
          reason = s.reason();
        }
      }
      if (!stop) continue;
      End(&task, v1::TASK_STATE_PREEMPTED, 143,
          reason == v1::STOP_REASON_UNSPECIFIED ? v1::STOP_REASON_ORPHAN
                                                : reason);
      counters.stopped++;
      changed = true;
    }
    if (changed) a->next_call = 0;
  }

  void OpenWatch(Agent* a) {
    v1::WatchDesiredStateRequest request;
    request.set_node_id(a->node_id);
    request.set_session(a->session);
    request.set_after_version(a->held);
    ++outstanding_;
    a->watch = new Watch(a, request);
    a->watch->Start();
  }

  int gpus_;
  std::string boot_;
  std::vector<std::unique_ptr<Agent>> agents_;
  std::atomic<bool> ticking_{false};
  std::atomic<int> outstanding_{0};
  std::thread ticker_;
};

void Watch::OnReadDone(bool ok) {
  if (!ok) return;  // OnDone follows
  agent_->fleet->Poke(agent_, message_);
  StartRead(&message_);
}

void Watch::OnDone(const grpc::Status&) {
  FleetImpl* fleet = agent_->fleet;
  fleet->WatchEnded(agent_, this);
  delete this;
  fleet->WatchDone();
}

Fleet::Fleet(const std::string& address, const security::PemPair& ca,
             int agents, int gpus, int attempt_ms)
    : impl_(std::make_unique<Impl>(address, ca, agents, gpus, attempt_ms)) {}
Fleet::~Fleet() = default;
void Fleet::StartTicking() { impl_->StartTicking(); }
std::vector<double> Fleet::RegistrationTimes(double since) {
  return impl_->RegistrationTimes(since);
}
void Fleet::StopTicking() { impl_->StopTicking(); }
Counters& Fleet::counters() { return impl_->counters; }
int Fleet::RegisteredSince(double since) {
  return static_cast<int>(RegistrationTimes(since).size());
}
std::set<Key> Fleet::Running() { return impl_->Running(); }

}  // namespace tiresias::fleet

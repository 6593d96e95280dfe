#include "agent/agent_dependencies.h"

#include <utility>

#include "agent/agent_daemon.h"
#include "security/tls.h"

namespace tiresias {

AgentDependencies RealAgentDependencies() {
  AgentDependencies deps;
  deps.make_launcher = [](PosixLauncherOptions options) {
    return std::make_unique<PosixLauncher>(std::move(options));
  };
  deps.files = RealFileStore();
  deps.make_master_stub = [](const AgentOptions& options)
      -> std::unique_ptr<v1::AgentRegistry::StubInterface> {
    // gRPC waits up to 120 s between reconnection attempts (growing 1.6x
    // from 1 s): an agent of a master gone for 30 s found it 15-19 s after
    // it was back. At most a second here (gRPC adds +-20%), from 0.2 s.
    security::DialOptions dial;
    dial.args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
    dial.args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    // Given several masters (that resolve), a connection attempt (TCP and
    // TLS) of 5 s, not clients' 2 (security::Dial): 2,000 agents
    // reconnecting at once to a restarted master on a loaded host wait
    // longer than 2 s for their
    // handshakes: at 2 s they gave attempts up mid-handshake and made them
    // again, and in one run of two only 582 were back in 300 s
    // (BENCHMARKS.md, "A connection attempt of 2 s"). The price: a frozen
    // leader is left within about 10 s, not 5, and a call made while the
    // channel waits on it fails its 5 s deadline and is made again.
    dial.several_masters_attempt_ms = 5000;
    return v1::AgentRegistry::NewStub(
        security::Dial(options.master_address, options.tls, dial));
  };
  return deps;
}

AgentDaemon::AgentDaemon(AgentOptions options)
    : AgentDaemon(std::move(options), RealAgentDependencies()) {}

}  // namespace tiresias

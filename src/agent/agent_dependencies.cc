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
    return v1::AgentRegistry::NewStub(
        security::Dial(options.master_address, options.tls));
  };
  return deps;
}

AgentDaemon::AgentDaemon(AgentOptions options)
    : AgentDaemon(std::move(options), RealAgentDependencies()) {}

}  // namespace tiresias

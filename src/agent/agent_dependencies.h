// What the node agent takes from outside, as the kubelet takes its
// Dependencies: how it starts tasks, where its own small files go, and how
// it reaches the master. AgentDaemon(options) uses RealAgentDependencies();
// a test passes its own to put a fault where the real system would need a
// broken disk, a failing fork or a half-open network, keeping the real
// parts it does not replace (a wrapper around the real launcher or file
// store fails one call and passes the others on).
//
//   AgentDependencies deps = RealAgentDependencies();
//   deps.files = &failing_store;  // outlives the agent
//   AgentDaemon agent(options, std::move(deps));
#ifndef TIRESIAS_AGENT_AGENT_DEPENDENCIES_H_
#define TIRESIAS_AGENT_AGENT_DEPENDENCIES_H_

#include <functional>
#include <memory>

#include "agent/file_store.h"
#include "agent/launcher.h"
#include "proto/tiresias.grpc.pb.h"

namespace tiresias {

struct AgentOptions;

struct AgentDependencies {
  // Makes the launcher at Start, from the options Start derives from the
  // AgentOptions (the run-as policy with its user map, the checkpoint
  // fallback folder). Called once, from the thread calling Start; the
  // agent owns what it returns (never null) and calls it from its own
  // threads (the ProcessLauncher contract: thread-safe).
  std::function<std::unique_ptr<ProcessLauncher>(PosixLauncherOptions)>
      make_launcher;
  // The agent's own files: its task record (tasks.json), its session
  // (session.json), its identity (agent-token), and the machine's boot id.
  // Not owned; never null; must outlive the agent; called from its threads
  // (FileStore: thread-safe).
  FileStore* files = nullptr;
  // Makes the stub the agent registers, heartbeats and watches its desired
  // state with, at Start, from options.master_address and options.tls.
  // Called once; the agent owns what it returns (never null) and calls it
  // from two threads at once (gRPC stubs are thread-safe).
  std::function<std::unique_ptr<v1::AgentRegistry::StubInterface>(
      const AgentOptions&)>
      make_master_stub;
};

// The real ones: a PosixLauncher, RealFileStore(), and a stub on a channel
// to options.master_address with options.tls (security::Dial).
AgentDependencies RealAgentDependencies();

}  // namespace tiresias

#endif  // TIRESIAS_AGENT_AGENT_DEPENDENCIES_H_

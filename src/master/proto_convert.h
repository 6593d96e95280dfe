// Conversions between the master's records (job_record.h) and the RPC
// messages (proto/tiresias.proto), kept apart so that the store needs no
// gRPC. ToProto functions fill every field the record has; FromProto
// functions check enums and return InvalidArgument naming the field.
#ifndef TIRESIAS_MASTER_PROTO_CONVERT_H_
#define TIRESIAS_MASTER_PROTO_CONVERT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/job_spec.h"  // JobSpecToProto, JobSpecFromProto
#include "master/job_record.h"
#include "master/master_lead.h"
#include "proto/tiresias.pb.h"

namespace tiresias {

v1::JobState JobStateToProto(JobRecordState state);
// InvalidArgument for JOB_STATE_UNSPECIFIED or an unknown number.
absl::StatusOr<JobRecordState> JobStateFromProto(v1::JobState state);

v1::NodeState NodeStateToProto(NodeState state);
absl::StatusOr<NodeState> NodeStateFromProto(v1::NodeState state);

// A master's lead as `status` shows it: its record, the standbys, the
// store's health.
void LeaderToProto(const LeaderRecord& leader,
                   const std::vector<std::string>& standbys,
                   const StoreHealth& store, v1::MasterLeader* out);

void JobEventToProto(const JobEvent& event, v1::JobEvent* out);
JobEvent JobEventFromProto(const v1::JobEvent& event);

// The whole record, events included (ListJobs callers clear them).
void JobToProto(const JobRecord& job, v1::Job* out);
absl::StatusOr<JobRecord> JobFromProto(const v1::Job& job);

// Every field but gpus_free and job_ids, which the record does not hold:
// the caller fills them from its live view of the cluster.
void NodeToProto(const NodeRecord& node, v1::Node* out);
absl::StatusOr<NodeRecord> NodeFromProto(const v1::Node& node);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_PROTO_CONVERT_H_

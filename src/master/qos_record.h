// A priority level (QOS) as the master stores it (v1::Qos): its priority,
// its exemption from preemption, its per-user GPU limit and who may use
// it. Store::PutQos writes one; QosRegistry checks them and gives the
// scheduler its QosSpecs.
#ifndef TIRESIAS_MASTER_QOS_RECORD_H_
#define TIRESIAS_MASTER_QOS_RECORD_H_

#include <string>
#include <vector>

namespace tiresias {
namespace v1 {
class Qos;
}

struct QosRecord {
  std::string name;
  int priority = 0;  // -1,000 to 1,000; higher runs first
  bool allow_no_preempt = false;
  int max_gpus_per_user = -1;      // -1: no limit
  std::vector<std::string> users;  // user names, or "*": everyone
  std::vector<std::string> vcs;    // VCs whose members may use it
  std::string description;

  bool operator==(const QosRecord&) const = default;
};

// The wire's form and back (store_vcs.cc: the store keeps these bytes).
void QosToProto(const QosRecord& qos, v1::Qos* out);
QosRecord QosFromProto(const v1::Qos& qos);

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_QOS_RECORD_H_

// Who is calling the master, once its credential has been checked: what
// authorization decisions and the audit log are made from.
#ifndef TIRESIAS_MASTER_PRINCIPAL_H_
#define TIRESIAS_MASTER_PRINCIPAL_H_

#include <string>

namespace tiresias {

struct Principal {
  // The user it authenticates as; empty on an --insecure master (nobody is
  // authenticated there, and everyone may do everything).
  std::string user;
  bool admin = false;  // may act on every job and node, manage tokens
  // How it was authenticated: "token", "certificate" or "insecure".
  std::string via;
  std::string peer;  // the caller's address, for the audit log

  // May act on a job owned by `owner`: its owner, or an admin.
  bool MayActOn(const std::string& owner) const {
    return admin || (!user.empty() && user == owner);
  }
  // For the audit log: the user, or "-" when there is none.
  std::string Name() const { return user.empty() ? "-" : user; }
};

}  // namespace tiresias

#endif  // TIRESIAS_MASTER_PRINCIPAL_H_

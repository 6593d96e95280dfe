// `tiresias admin ca init` and `tiresias admin {master,agent,user}-cert
// issue`: the cluster CA and the certificate folders it signs
// (src/security/cert_dirs.h); `admin notify-key`, a user's webhook key.
// Offline: no master needed.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/admin_command.h"
#include "cli/cluster_client.h"
#include "security/cert_dirs.h"
#include "security/notify_key.h"
#include "security/tokens.h"

namespace tiresias {

namespace {

using security::Identity;
using security::IdentityKind;

struct CaInitFlags {
  std::string dir;
  std::string name = "tiresias cluster CA";
  std::string valid_for = "3650d";
};

struct IssueFlags {
  std::string name;  // node or user; unused for the master
  std::string ca_dir;
  std::string out_dir;
  std::vector<std::string> sans;
  std::string valid_for = "365d";
};

int RunCaInit(const CaInitFlags& f) {
  absl::StatusOr<std::chrono::seconds> validity =
      security::ParseDuration(f.valid_for, "--valid-for");
  if (!validity.ok())
    return cli::Fail(std::string(validity.status().message()));
  absl::Status status = security::InitCaDir(f.dir, f.name, *validity);
  if (!status.ok()) return cli::Fail(std::string(status.message()));
  std::printf(
      "Wrote %s/ca.pem (the CA certificate, for every machine) and "
      "%s/ca-key.pem (mode 0600: it signs every identity; keep it offline).\n"
      "Next: tiresias admin master-cert issue --ca-dir %s --out DIR\n",
      f.dir.c_str(), f.dir.c_str(), f.dir.c_str());
  return 0;
}

// Where the files go and who reads them, for the closing line.
std::string NextStep(const Identity& who, const std::string& out) {
  switch (who.kind) {
    case IdentityKind::kMaster:
      return "Next: copy " + out +
             " to the master's machine; the master reads ca.pem, master.pem "
             "and master-key.pem from it.";
    case IdentityKind::kAgent:
      return "Next: copy " + out + " to node " + who.name +
             "; its agent reads ca.pem, agent.pem and agent-key.pem from it.";
    case IdentityKind::kUser:
      return "Next: give " + out + " to " + who.name +
             " (user-key.pem is theirs alone); clients read ca.pem, user.pem "
             "and user-key.pem from it.";
  }
  return "";
}

int RunIssue(IdentityKind kind, const IssueFlags& f) {
  absl::StatusOr<std::chrono::seconds> validity =
      security::ParseDuration(f.valid_for, "--valid-for");
  if (!validity.ok())
    return cli::Fail(std::string(validity.status().message()));
  const Identity who{kind, f.name};
  absl::StatusOr<security::IssuedFiles> files =
      security::IssueCertFiles({.identity = who,
                                .ca_dir = f.ca_dir,
                                .out_dir = f.out_dir,
                                .sans = f.sans,
                                .validity = *validity});
  if (!files.ok()) return cli::Fail(std::string(files.status().message()));
  std::vector<std::string> names = files->request.dns_names;
  names.insert(names.end(), files->request.ip_addresses.begin(),
               files->request.ip_addresses.end());
  std::printf(
      "Wrote %s and %s (%s%s%s) and %s.\n%s\n", files->cert_path.c_str(),
      files->key_path.c_str(), files->request.common_name.c_str(),
      names.empty() ? "" : "; names: ", absl::StrJoin(names, ", ").c_str(),
      files->ca_path.c_str(), NextStep(who, f.out_dir).c_str());
  return 0;
}

// `admin <group> issue [NAME] --ca-dir DIR --out DIR [--san ...]`.
void AddIssueCommand(CLI::App* admin, IdentityKind kind, int* exit_code) {
  const std::string base = security::BaseName(kind);
  auto flags = std::make_shared<IssueFlags>();
  CLI::App* group = admin->add_subcommand(
      base + "-cert", "Certificates for the " + base +
                          (kind == IdentityKind::kMaster ? "" : "s"));
  group->require_subcommand(1);
  CLI::App* issue = group->add_subcommand(
      "issue",
      "Sign a new key and certificate with the CA in --ca-dir and "
      "write " +
          base + ".pem, " + base +
          "-key.pem (0600) and "
          "ca.pem to --out");
  if (kind == IdentityKind::kAgent) {
    issue
        ->add_option("NODE", flags->name,
                     "The node's name, as its agent registers (--name, "
                     "default: its hostname)")
        ->required();
  } else if (kind == IdentityKind::kUser) {
    issue->add_option("USER", flags->name, "The user's Unix account name")
        ->required();
  }
  issue
      ->add_option("--ca-dir", flags->ca_dir,
                   "Folder holding ca.pem and ca-key.pem")
      ->required();
  issue
      ->add_option("--out", flags->out_dir,
                   "Folder to write the certificate, key and ca.pem to "
                   "(created, mode 0700, if missing)")
      ->required();
  if (kind != IdentityKind::kUser) {
    // One value per --san: a greedy vector option would swallow NODE.
    issue
        ->add_option("--san", flags->sans,
                     "Another host name or IP address the " + base +
                         " is reached at (repeatable); localhost, 127.0.0.1 "
                         "and ::1 are always in")
        ->allow_extra_args(false);
  }
  issue
      ->add_option("--valid-for", flags->valid_for,
                   "Lifetime: 365d, 12h... (cut to the CA's own)")
      ->capture_default_str();
  issue->callback(
      [kind, flags, exit_code] { *exit_code = RunIssue(kind, *flags); });
}

struct NotifyKeyFlags {
  std::string user;
  std::string state_dir = "./tiresias-state";
  std::string key_file;  // else <state_dir>/notify-key
};

// Prints `user`'s webhook key (UserNotifyKey) from the master's notify key
// file, read, never made: a missing file is the master's to make.
int RunNotifyKey(const NotifyKeyFlags& f) {
  if (f.user.empty()) return cli::Fail("--user: expected a user's name");
  const std::string path = security::NotifyKeyPath(f.state_dir, f.key_file);
  std::ifstream in(path);
  std::string key;
  if (!in || !std::getline(in, key) || key.empty()) {
    return cli::Fail(absl::StrCat(
        path, ": cannot read the master's notify key (",
        std::filesystem::exists(path) ? "empty or unreadable" : "no such file",
        "); the master makes it when it first starts (--state-dir, "
        "--notify-key-file)"));
  }
  std::printf("%s\n", security::UserNotifyKey(key, f.user).c_str());
  return 0;
}

}  // namespace

void AddAdminNotifyKeyCommand(CLI::App* admin, int* exit_code) {
  auto f = std::make_shared<NotifyKeyFlags>();
  CLI::App* cmd = admin->add_subcommand(
      "notify-key",
      "Print a user's webhook key: their jobs' webhooks (`submit --notify`) "
      "are signed with it (X-Tiresias-Signature), and a receiver checks "
      "them with it. Give it to the user as you give a token; it tells "
      "nothing of another user's key or of the cluster's, which signs the "
      "admin notices (--notify-admin). Offline: reads the master's key file");
  cmd->add_option("--user", f->user, "The jobs' owner")->required();
  cmd->add_option("--state-dir", f->state_dir,
                  "The master's --state-dir, holding notify-key (`up`'s: "
                  "./tiresias-up)")
      ->capture_default_str();
  cmd->add_option("--notify-key-file", f->key_file,
                  "The master's --notify-key-file, if it has one");
  cmd->callback([f, exit_code] { *exit_code = RunNotifyKey(*f); });
}

void AddAdminCertCommands(CLI::App* admin, int* exit_code) {
  auto ca_flags = std::make_shared<CaInitFlags>();
  CLI::App* ca = admin->add_subcommand("ca", "The cluster's CA");
  ca->require_subcommand(1);
  CLI::App* init = ca->add_subcommand(
      "init",
      "Create the cluster CA in DIR: ca.pem and ca-key.pem (0600). Refuses "
      "to replace an existing CA");
  init->add_option("DIR", ca_flags->dir, "Folder for the CA (created, 0700)")
      ->required();
  init->add_option("--name", ca_flags->name, "The CA's common name")
      ->capture_default_str();
  init->add_option("--valid-for", ca_flags->valid_for,
                   "Lifetime: 3650d, 12h...")
      ->capture_default_str();
  init->callback([ca_flags, exit_code] { *exit_code = RunCaInit(*ca_flags); });
  for (IdentityKind kind :
       {IdentityKind::kMaster, IdentityKind::kAgent, IdentityKind::kUser}) {
    AddIssueCommand(admin, kind, exit_code);
  }
}

}  // namespace tiresias

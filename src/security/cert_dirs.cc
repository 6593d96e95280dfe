#include "security/cert_dirs.h"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "security/pem_files.h"

namespace tiresias::security {

namespace {

void AddName(CertRequest& request, const std::string& name) {
  std::vector<std::string>& list =
      IsIpAddress(name) ? request.ip_addresses : request.dns_names;
  if (std::find(list.begin(), list.end(), name) == list.end()) {
    list.push_back(name);
  }
}

std::string Hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

absl::Status EnsureDir(const std::string& dir) {
  std::error_code error;
  if (std::filesystem::is_directory(dir, error)) return absl::OkStatus();
  std::filesystem::create_directories(dir, error);
  if (!error) {
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all, error);
  }
  if (error) {
    return absl::PermissionDeniedError(
        absl::StrCat(dir, ": cannot create folder: ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace

std::string BaseName(IdentityKind kind) {
  return std::string(IdentityKindName(kind));
}

absl::Status InitCaDir(const std::string& dir, const std::string& name,
                       std::chrono::seconds validity) {
  for (const std::string& path :
       {CertPath(dir, kCaBaseName), KeyPath(dir, kCaBaseName)}) {
    std::error_code error;
    if (std::filesystem::exists(std::filesystem::symlink_status(path, error))) {
      return absl::AlreadyExistsError(absl::StrCat(
          path, " exists; a new CA would invalidate every certificate issued"));
    }
  }
  ASSIGN_OR_RETURN(PemPair ca, CreateCa(name, validity));
  RETURN_IF_ERROR(EnsureDir(dir));
  return WritePemFiles(dir, kCaBaseName, ca);
}

absl::StatusOr<CertRequest> RequestFor(const Identity& identity,
                                       const std::string& hostname,
                                       const std::vector<std::string>& sans) {
  CertRequest request;
  switch (identity.kind) {
    case IdentityKind::kMaster:
      request.server_auth = request.client_auth = true;
      for (const char* name : {"localhost", "127.0.0.1", "::1"}) {
        AddName(request, name);
      }
      if (IsDnsName(hostname)) AddName(request, hostname);
      break;
    case IdentityKind::kAgent:
      RETURN_IF_ERROR(ValidateNodeName(identity.name));
      request.server_auth = request.client_auth = true;
      for (const char* name : {"localhost", "127.0.0.1", "::1"}) {
        AddName(request, name);
      }
      if (IsDnsName(identity.name)) AddName(request, identity.name);
      break;
    case IdentityKind::kUser:
      RETURN_IF_ERROR(ValidateUserName(identity.name));
      request.client_auth = true;
      if (!sans.empty()) {
        return absl::InvalidArgumentError(
            "--san: a user certificate serves nothing, so it takes no "
            "subjectAltName");
      }
      break;
  }
  request.common_name = CommonName(identity);
  for (const std::string& san : sans) {
    if (!IsIpAddress(san) && !IsDnsName(san)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--san: expected a host name or an IP address, got \"", san, "\""));
    }
    AddName(request, san);
  }
  return request;
}

absl::StatusOr<IssuedFiles> IssueCertFiles(const IssueFilesRequest& request) {
  IssuedFiles files;
  ASSIGN_OR_RETURN(files.request,
                   RequestFor(request.identity, Hostname(), request.sans));
  files.request.validity = request.validity;
  PemPair ca;
  ASSIGN_OR_RETURN(ca.cert_pem, ReadPem(CertPath(request.ca_dir, kCaBaseName),
                                        PemKind::kCertificate));
  ASSIGN_OR_RETURN(ca.key_pem, ReadPem(KeyPath(request.ca_dir, kCaBaseName),
                                       PemKind::kPrivateKey));
  ASSIGN_OR_RETURN(PemPair issued, IssueCertificate(ca, files.request));
  RETURN_IF_ERROR(EnsureDir(request.out_dir));
  const std::string base = BaseName(request.identity.kind);
  files.cert_path = CertPath(request.out_dir, base);
  files.key_path = KeyPath(request.out_dir, base);
  files.ca_path = CertPath(request.out_dir, kCaBaseName);
  RETURN_IF_ERROR(WritePemFiles(request.out_dir, base, issued));
  RETURN_IF_ERROR(
      WriteFileAtomically(files.ca_path, ca.cert_pem, kCertFileMode));
  return files;
}

}  // namespace tiresias::security

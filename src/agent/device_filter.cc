#include "agent/device_filter.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tiresias {
namespace {

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off,
              int32_t imm) {
  bpf_insn insn{};
  insn.code = code;
  insn.dst_reg = dst;
  insn.src_reg = src;
  insn.off = off;
  insn.imm = imm;
  return insn;
}

// r[dst] = *(u32 *)(r[src] + off)
bpf_insn LoadWord(uint8_t dst, uint8_t src, int16_t off) {
  return Insn(BPF_LDX | BPF_W | BPF_MEM, dst, src, off, 0);
}

long Bpf(int cmd, bpf_attr* attr) {
  return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

}  // namespace

std::vector<bpf_insn> DeviceFilterProgram(
    int major, const std::vector<int>& denied_minors) {
  // The context is struct bpf_cgroup_dev_ctx: access_type (the access in
  // the upper 16 bits, the device type in the lower), major, minor.
  const int n = static_cast<int>(denied_minors.size());
  const int allow = 6 + n;  // r0 = 1; exit
  const int deny = 8 + n;   // r0 = 0; exit
  auto to = [](int from, int target) {
    return static_cast<int16_t>(target - from - 1);
  };
  std::vector<bpf_insn> program;
  program.push_back(LoadWord(BPF_REG_4, BPF_REG_1, 0));
  program.push_back(Insn(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_4, 0, 0, 0xffff));
  program.push_back(LoadWord(BPF_REG_2, BPF_REG_1, 4));
  program.push_back(LoadWord(BPF_REG_3, BPF_REG_1, 8));
  program.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_4, 0, to(4, allow),
                         BPF_DEVCG_DEV_CHAR));
  program.push_back(
      Insn(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, to(5, allow), major));
  for (int i = 0; i < n; ++i) {
    program.push_back(Insn(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_3, 0,
                           to(6 + i, deny), denied_minors[i]));
  }
  program.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1));
  program.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  program.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0));
  program.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return program;
}

absl::Status AttachDeviceFilter(int cgroup_fd, int major,
                                const std::vector<int>& denied_minors) {
  if (denied_minors.size() > static_cast<size_t>(kMaxDeniedMinors)) {
    return absl::InvalidArgumentError(
        absl::StrCat("device filter: ", denied_minors.size(),
                     " minors to deny, at most ", kMaxDeniedMinors));
  }
  const std::vector<bpf_insn> program =
      DeviceFilterProgram(major, denied_minors);
  static const char kLicense[] = "GPL";
  // Without a log first: a verifier log that overflows its buffer fails
  // even a valid program (ENOSPC). Only a refusal is loaded again with it.
  auto load = [&](char* log, uint32_t size) {
    bpf_attr attr{};
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = reinterpret_cast<uint64_t>(program.data());
    attr.insn_cnt = static_cast<uint32_t>(program.size());
    attr.license = reinterpret_cast<uint64_t>(kLicense);
    attr.log_buf = reinterpret_cast<uint64_t>(log);
    attr.log_size = size;
    attr.log_level = log != nullptr ? 1 : 0;
    return static_cast<int>(Bpf(BPF_PROG_LOAD, &attr));
  };
  const int prog_fd = load(nullptr, 0);
  if (prog_fd < 0) {
    const int error = errno;
    std::string message =
        absl::StrCat("cannot load the GPU device filter (bpf BPF_PROG_LOAD): ",
                     std::strerror(error));
    std::vector<char> log(64 << 10, '\0');
    const int again = load(log.data(), static_cast<uint32_t>(log.size()));
    if (again >= 0) close(again);
    if (log[0] != '\0') {
      absl::StrAppend(
          &message, ": ",
          absl::string_view(log.data(), strnlen(log.data(), log.size())));
    }
    return absl::FailedPreconditionError(message);
  }
  bpf_attr attach{};
  attach.target_fd = static_cast<uint32_t>(cgroup_fd);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog_fd);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  const long attached = Bpf(BPF_PROG_ATTACH, &attach);
  const int error = errno;
  close(prog_fd);  // the attachment holds the program from here
  if (attached != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot attach the GPU device filter (bpf "
                     "BPF_PROG_ATTACH): ",
                     std::strerror(error)));
  }
  return absl::OkStatus();
}

}  // namespace tiresias

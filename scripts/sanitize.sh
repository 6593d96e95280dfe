#!/usr/bin/env bash
# Builds chosen tests with a sanitizer in their own build folder and runs
# them: ThreadSanitizer by default (data races, lock-order inversions),
# or AddressSanitizer (use after free, overflows, leaks) or
# UndefinedBehaviorSanitizer. Not part of .ci/run: on CI's two cores the
# build alone takes longer than the test suite; run it after a change to
# threads or locks.
#
# Our code is instrumented; Debian's libraries (gRPC, protobuf, abseil,
# SQLite) are not. Locks are pthread mutexes (core/mutex.h), whose calls
# TSan intercepts even from uninstrumented code, so it sees the ordering
# they give; a report from inside gRPC alone is gRPC's own atomics, which
# TSan cannot see (suppressed in scripts/tsan.supp).
#
# Usage: scripts/sanitize.sh [thread|address|undefined] [TARGET...]
#   default targets: the master's, the agent's and the store's tests
#   e.g.  scripts/sanitize.sh thread agent_dependencies_test
# Build folder: build-<sanitizer>. Exits non-zero on a build failure, a
# failed test or any sanitizer report.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-thread}
case "$kind" in
  thread|address|undefined) shift || true ;;
  *) kind=thread ;;
esac
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(master_state_test agent_protocol_test submit_group_commit_test
           master_server_test agent_daemon_test agent_dependencies_test
           master_store_fault_test launch_table_test)
fi
build=build-$kind
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTIRESIAS_SANITIZE="$kind" "${launcher[@]}" >/dev/null
ninja -C "$build" "${targets[@]}"

export TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1 suppressions=$PWD/scripts/tsan.supp ${TSAN_OPTIONS:-}"
export ASAN_OPTIONS="detect_leaks=1 ${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 ${UBSAN_OPTIONS:-}"
failed=0
for target in "${targets[@]}"; do
  binary=$(find "$build" -type f -name "$target" -perm -u+x | head -1)
  if [ -z "$binary" ]; then
    echo "sanitize: no binary for $target" >&2
    failed=1
    continue
  fi
  log=$build/$target.log
  if "$binary" >"$log" 2>&1 && ! grep -q "WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|runtime error:" "$log"; then
    echo "sanitize ($kind): $target: clean"
  else
    echo "sanitize ($kind): $target: FAILED (see $log)"
    grep -m 5 -A 12 "WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|runtime error:\|FAILED" "$log" || true
    failed=1
  fi
done
exit $failed

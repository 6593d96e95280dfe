#!/usr/bin/env bash
# Installs what is needed, builds, checks the lock rules (clang's
# thread-safety analysis over the build's compile commands), and runs every
# test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/check_thread_safety.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"

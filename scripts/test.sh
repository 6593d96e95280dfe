#!/usr/bin/env bash
# Installs what is needed, builds, and runs every test (ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"

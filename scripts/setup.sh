#!/usr/bin/env bash
# Installs every Debian package Tiresias needs (quietly, and only what is
# missing), then configures and builds the project into build/.
# Usage: scripts/setup.sh            (from anywhere in the repository)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake g++ ninja-build pkg-config
  libabsl-dev libcli11-dev nlohmann-json3-dev libspdlog-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libsqlite3-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libcpp-httplib-dev
  chromium zlib1g-dev
  python3-torch python3-torchvision
  libibverbs-dev
  clang-14  # scripts/check_thread_safety.sh: the lock rules (GCC ignores them)
  tmux  # tests/e2e/interactive_test.py, readme_test.py: a real terminal
  podman crun uidmap  # `submit --image`: OCI containers (tests/e2e/container_test.py)
  etcd-server  # `master --store etcd://`: the tests start their own members
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # Debian starts the etcd it installs as a service on localhost:2379; the
  # tests start their own members, and a master is given its own: a fresh
  # install's service is stopped and disabled (one set up before is left).
  if [[ " ${missing[*]} " == *" etcd-server "* ]] && [ -d /run/systemd/system ]; then
    if $sudo_cmd systemctl disable --now etcd.service >/dev/null 2>&1; then
      echo "setup: stopped and disabled the etcd service Debian started (the tests run their own)"
    fi
  fi
fi

jobs=$(nproc)
# A build folder made for another source folder (a clone that was moved or
# copied) or by another generator is stale, not an error: start it afresh.
if [ -f build/CMakeCache.txt ]; then
  cached_src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
  cached_gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' build/CMakeCache.txt)
  if [ "$cached_src" != "$(pwd -P)" ] || [ "$cached_gen" != "Ninja" ]; then
    echo "setup: build/ was made for ${cached_src:-another folder} (${cached_gen:-?}); rebuilding it here"
    rm -rf build
  fi
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$jobs"

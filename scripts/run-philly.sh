#!/usr/bin/env bash
# The main job: installs and builds what is missing, then replays the
# shipped Microsoft Philly trace on the reference cluster (88 servers x 8
# GPUs) under Tiresias-L, Tiresias-G and the baselines, prints the
# comparison table and writes out/philly/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
# What setup says (packages installed, the build's progress) goes to
# stderr, so that a first run (or a moved clone, rebuilt) shows what it
# is doing and stdout keeps only the table.
if [ ! -x build/src/cli/tiresias ]; then
  echo "run-philly: installing what is missing and building (the first time: about 25 minutes on 2 cores)" >&2
fi
bash scripts/setup.sh 1>&2
exec build/src/cli/tiresias simulate \
  --trace data/philly.csv --cluster 88x8 \
  --policy tiresias-l,tiresias-g,yarn-cs,fifo,best-effort,gandiva,srtf,srsf \
  --out out/philly "$@"

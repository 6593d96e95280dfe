#!/usr/bin/env bash
# The main job: installs and builds what is missing, then replays the
# shipped Microsoft Philly trace on the reference cluster (88 servers x 8
# GPUs) under Tiresias-L, Tiresias-G and the baselines, prints the
# comparison table and writes out/philly/report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
exec build/src/cli/tiresias simulate \
  --trace data/philly.csv --cluster 88x8 \
  --policy tiresias-l,tiresias-g,yarn-cs,fifo,best-effort,gandiva,srtf,srsf \
  --out out/philly "$@"

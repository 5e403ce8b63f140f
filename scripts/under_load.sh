#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The suite beside a CPU load: builds BUILD_DIR as scripts/test.sh does, then runs the tests that
# need no GPU RUNS times in a row with SPINNERS busy loops on the machine (a shared CI host).
# Prints one line a run (its failed tests named) and exits 1 when any run failed.
#   bash scripts/under_load.sh [BUILD_DIR [RUNS [SPINNERS]]]      defaults: build 10 4
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build} runs=${2:-10} spinners=${3:-4}
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DTOPO_WERROR=ON >/dev/null
cmake --build "$build" -j "$jobs" >/dev/null
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
for _ in $(seq "$spinners"); do
  (while :; do :; done) &
  pids+=($!)
done
log=$(mktemp "${TMPDIR:-/tmp}/topo-under-load-XXXXXX")
failed=0
for run in $(seq "$runs"); do
  start=$(date +%s)
  if (cd "$build" && ctest -LE gpu -j "$jobs" --timeout 600 --output-on-failure >"$log" 2>&1); then
    echo "run $run/$runs: passed ($(grep -o '[0-9]* tests passed.*' "$log" | head -n 1 | cut -c1-40), $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg))"
  else
    failed=$((failed + 1))
    echo "run $run/$runs: FAILED ($(($(date +%s) - start)) s): $(sed -n 's/^[[:space:]]*[0-9]* - \(.*\) (.*)$/\1/p' "$log" | tr '\n' ' ')"
    cp "$log" "$log.run$run"
    echo "  output: $log.run$run"
  fi
done
rm -f "$log"
echo "under_load: $((runs - failed)) of $runs runs passed beside $spinners busy loops"
[ "$failed" -eq 0 ]

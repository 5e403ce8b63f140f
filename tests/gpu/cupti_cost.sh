#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Step-time cost of the profiler's CUPTI modes on compute (cupti_cost.py, one GPU): rounds of
# off / default (window) / on / off, each a fresh process of WARMUP + STEPS CUDA-event-timed steps
# (defaults 20 + 200), ROUNDS rounds (default 3). Prints per mode the median of the per-round
# medians, the cost against `off`, and the A/A noise (first `off` against the second `off` of each
# round). Results in $OUT/cupti_cost.txt and $OUT/cupti_cost.jsonl.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO
rounds=${ROUNDS:-3}
jl="$OUT/cupti_cost.jsonl"; : >"$jl"
tdir=$(mktemp -d)
run() { # label, env...
  local label=$1; shift
  env TOPO_PROFILER_DIR="$tdir/$label" "$@" timeout -k 5 "$(inner_timeout 120)" "$PYTHON" \
    "$GPU_DIR/cupti_cost.py" --mode "$label" --steps "${STEPS:-200}" --warmup "${WARMUP:-20}" \
    $([ "$label" = off ] || [ "$label" = off2 ] || echo --plugin "$PROFILER_SO") 2>>"$OUT/cupti_cost.log" |
    grep '^{' >>"$jl"
}
for r in $(seq "$rounds"); do
  run off
  # This job issues no collective, so the default window (the first at the first collective of
  # >= 1 MiB, else one period after init) would not open within it: a configured trigger file,
  # never created, makes the window mode load CUPTI and open its first window at init.
  run window TOPO_PROFILER_CUPTI=window TOPO_PROFILER_CUPTI_TRIGGER="$tdir/never"
  run on TOPO_PROFILER_CUPTI=on
  run plugin-nocupti TOPO_PROFILER_CUPTI=off
  run off2
done
"$PYTHON" - "$jl" <<'PY' | tee "$OUT/cupti_cost.txt"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = {}
for r in rows:
    by.setdefault(r["mode"], []).append(r)
def med(mode, key="median_ms"):
    v = [r[key] for r in by.get(mode, [])]
    return statistics.median(v) if v else float("nan")
base = med("off")
print("cupti_cost: one H200, compute-only training step (cupti_cost.py), medians of per-round medians")
for m in ("off", "off2", "plugin-nocupti", "window", "on"):
    if m in by:
        print(f"  {m:>15}: {med(m):8.3f} ms/step (mean of means {med(m,'mean_ms'):8.3f})  "
              f"{100*(med(m)/base-1):+6.2f} % vs off   rounds {len(by[m])}")
aa = [abs(a["median_ms"] / b["median_ms"] - 1) for a, b in zip(by.get("off", []), by.get("off2", []))]
if aa:
    print(f"  A/A noise (off vs off2, per round): max {100*max(aa):.2f} %, median {100*statistics.median(aa):.2f} %")
PY
rm -rf "$tdir"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every GPU check in one go (~8 minutes on 2 x H200), tolerant of a failing step (it records the
# exit code and goes on). Order: build, plugins load (PyTorch's NCCL and the system's),
# calibration with --bench (profile + tuner/default/oracle on one node), decisions and timings,
# the profiler's cost on eager AllReduce (profcost, ~150 s), CUPTI overlap, NVTX capture, the DDP
# job, then the two-"node" socket bench.
# Work happens in $RUN_ALL_WORK (default: a temporary directory); $OUT (default ./gpu-results)
# receives at most 8 files: run_all.txt (step, exit code, seconds), results.tar.gz (every log
# and result small enough), and the key results as plain files.
# Env: RUN_ALL_BUDGET total seconds (default 480); STEPS (default: all, e.g. "plugins calibrate").
set -u
FINAL_OUT=${OUT:-$PWD/gpu-results}
mkdir -p "$FINAL_OUT"
FINAL_OUT=$(cd "$FINAL_OUT" && pwd)
WORK=${RUN_ALL_WORK:-$(mktemp -d "${TMPDIR:-/tmp}/topo-gpu-run.XXXXXX")}
export OUT="$WORK"
source "$(dirname "$0")/common.sh"
BUDGET=${RUN_ALL_BUDGET:-480}
STEPS=${STEPS:-"build plugins calibrate decisions profcost cupti nvtx ddp bench2"}
start=$(date +%s)
summary="$WORK/run_all.txt"
echo "# run_all.sh $(date -u '+%F %T UTC'), budget ${BUDGET}s, steps: $STEPS" >"$summary"

left() { echo $(( BUDGET - ($(date +%s) - start) )); }
wanted() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }

# step NAME MAX_SECONDS COMMAND... : run with min(MAX, time left), record exit code and duration.
step() {
  local name=$1 max=$2 t0 rc lim
  shift 2
  wanted "$name" || return 0
  lim=$(left)
  lim=$(( lim - 5 ))
  if [ "$lim" -lt 20 ]; then
    printf '%-10s SKIPPED (budget spent)\n' "$name" | tee -a "$summary" >&2
    return 0
  fi
  [ "$lim" -gt "$max" ] && lim=$max
  log "== $name (up to ${lim}s)"
  t0=$(date +%s)
  STEP_LIMIT=$lim timeout -k 20 "$lim" "$@" >"$WORK/step-$name.log" 2>&1
  rc=$?
  printf '%-10s rc=%-3s %4ss%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" \
    "$([ $rc -eq 124 ] && echo '  (timed out)')" | tee -a "$summary" >&2
}

step build 300 bash -c "source '$GPU_DIR/common.sh'; build_topo"
resolve_binaries
machine_info
step plugins 120 bash "$GPU_DIR/plugins_load.sh"
# The calibration also runs --bench (tuner and NCCL's default beside the oracle): it stops
# starting forced settings when its budget nears, so it always writes a profile.
cal_budget=$(( $(left) - 200 )); [ $cal_budget -gt 240 ] && cal_budget=240; [ $cal_budget -lt 60 ] && cal_budget=60
CALIBRATE_ARGS="--bench --time-budget $cal_budget ${CALIBRATE_ARGS:-}" CALIBRATE_TIMEOUT=$(( cal_budget + 40 )) \
  step calibrate $(( cal_budget + 50 )) bash "$GPU_DIR/calibrate.sh"
step decisions 120 bash "$GPU_DIR/decisions_match.sh"
step profcost 170 bash "$GPU_DIR/profiler_cost.sh"
step cupti 90 bash "$GPU_DIR/cupti_overlap.sh"
step nvtx 60 bash "$GPU_DIR/nvtx.sh"
step ddp 120 bash "$GPU_DIR/ddp_job.sh"
b2=$(( $(left) - 15 )); [ $b2 -gt 150 ] && b2=150
BENCH_SINGLE=0 BENCH2_TIMEOUT=$b2 BENCH2_ARGS="--time-budget $(( b2 > 60 ? b2 - 30 : 30 )) ${BENCH2_ARGS:-}" \
  step bench2 $(( b2 + 10 )) bash "$GPU_DIR/bench_tuner.sh"
echo "# total $(( $(date +%s) - start ))s" >>"$summary"

# Collect: one archive of everything not too large, plus the key files.
( cd "$WORK" && find . -type f -size -40M ! -name results.tar.gz -print0 | tar --null -czf "$WORK/results.tar.gz" -T - ) 2>/dev/null
for f in run_all.txt results.tar.gz calibrate.profile calibrate-summary.txt decisions_match.txt \
         profiler_cost.txt cupti_overlap.txt bench-2nodes.txt; do
  [ -f "$WORK/$f" ] && cp "$WORK/$f" "$FINAL_OUT/"
done
cat "$summary" >&2
log "results in $FINAL_OUT (work directory $WORK)"

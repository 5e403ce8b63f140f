#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The truth of topo's default configuration on the common kinds of training job (train_job.py):
# each job runs with both plugins in their DEFAULT configuration (only TOPO_PROFILER_DIR set),
# rank DELAY_RANK delayed DELAY_MS per step on the host, and torch.profiler on its last
# KINETO_STEPS steps; then truth_jobs.py compares topo's own report (its traces only) with
# topo-report on the Kineto traces of the same steps, and checks the straggler and the waits.
# On one GPU the ranks share it (NCCL >= 2.30: give its libnccl.so.2 as NCCL_LIB, preloaded into
# PyTorch); timings there are not real speed, the event streams are real.
#
#   JOBS      jobs to run (default "ddp-short ddp-long fsdp tpdp pp"):
#               ddp-short  DDP, ~0.14 s steps        ddp-long  DDP, batch 96 (~0.5 s steps)
#               fsdp       FSDP2, 12 blocks          tpdp      TP 2 x DP 2 (4 ranks)
#               pp         2 pipeline stages, 4 micro-batches (send/recv)
#   SECONDS_EACH  measured training per job (default 20); KINETO_STEPS (default 8; 5 for ddp-long)
#   KINETO_WHERE  last (default) | middle: torch.profiler on steps in the middle of the run, the
#             job going on unprofiled after them (shows what torch.profiler changes in the job)
#   VARIANT   default (as above) | full: every collective GPU-timed and CUPTI on for the whole run
#             (TOPO_PROFILER_SAMPLE=1, TOPO_PROFILER_MEASURE_BYTES=0, TOPO_PROFILER_CUPTI=on), no
#             torch.profiler: reference traces for the estimates' error (the test data) |
#             cupti-on: TOPO_PROFILER_CUPTI=on, so torch.profiler starts inside a topo window |
#             none: no topo profiler (torch.profiler alone: the reference for torch's own events)
#             Every variant with torch.profiler reports Kineto's log lines about unknown buffers
#             and its GPU events per rank (truth_jobs.py); the checks run on `default` only.
#   TAG       results under $OUT/jobs-$TAG (default: $VARIANT)
#   PARALLEL  1: run the jobs at the same time (they share the GPUs; each still compares its own
#             topo and Kineto traces of the same steps)
#   DELAY_RANK, DELAY_MS  the straggler and its host delay per step (1, 20 ms; see delay_of)
# Results: $OUT/jobs-$TAG/<job>/{traces,kineto,job.log,job.json,steps-rank*.json},
# $OUT/jobs-$TAG/truth.txt (PASS/FAIL lines, default variant).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO REPORT_BIN
machine_info
variant=${VARIANT:-default}
d="$OUT/jobs-${TAG:-$variant}"
mkdir -p "$d"
secs=${SECONDS_EACH:-20}
delay_rank=${DELAY_RANK:-1}
delay_ms=${DELAY_MS:-20}
share=()
penv=(NCCL_DEBUG=WARN)
if [ "$(gpu_count)" -lt 2 ] || [ "${SHARE_GPU:-0}" = 1 ]; then
  [ -n "${NCCL_LIB:-}" ] && [ -f "$NCCL_LIB" ] || die "one GPU: set NCCL_LIB to a libnccl.so.2 of NCCL >= 2.30"
  penv+=(LD_PRELOAD="$NCCL_LIB" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=32)
  share=(--share-gpu)
fi
venv=()
plugins=(NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO")
case $variant in
  default) ;;
  full) venv=(TOPO_PROFILER_SAMPLE=1 TOPO_PROFILER_MEASURE_BYTES=0 TOPO_PROFILER_CUPTI=on) ;;
  cupti-on) venv=(TOPO_PROFILER_CUPTI=on) ;;
  none) plugins=(NCCL_TUNER_PLUGIN="$TUNER_SO") ;;
  *) die "VARIANT=$variant: default, full, cupti-on or none" ;;
esac

job_args() {
  case $1 in
    ddp-short) echo "--mode ddp --batch 8" ;;
    ddp-long) echo "--mode ddp --batch 96" ;;
    fsdp) echo "--mode fsdp" ;;
    tpdp) echo "--mode tpdp --tp 2" ;;
    pp) echo "--mode pp --micro 4" ;;
    *) return 1 ;;
  esac
}

# The host delay of the delayed rank. Four ranks time-slicing one GPU start the kernels of one
# collective up to ~50 ms apart whoever is late (p99 34 ms on the tpdp job): there the delay is
# DELAY_MS_SHARED4 (default 80 ms), so that what was injected stands out of what the sharing adds.
delay_of() {
  if [ "$1" = tpdp ] && [ ${#share[@]} -gt 0 ]; then echo "${DELAY_MS_SHARED4:-80}"; else echo "$delay_ms"; fi
}

run_job() { # job index
  local job=$1 idx=$2 args j kin=() ks t0
  args=$(job_args "$job") || die "unknown job $job"
  j="$d/$job"
  rm -rf "$j"; mkdir -p "$j/traces"
  if [ "$variant" != full ]; then
    ks=${KINETO_STEPS:-8}
    [ "$job" = ddp-long ] && ks=${KINETO_STEPS:-5}
    kin=(--kineto "$j/kineto" --kineto-steps "$ks" --kineto-where "${KINETO_WHERE:-last}")
  fi
  t0=$(date +%s)
  # shellcheck disable=SC2086
  env "${penv[@]}" "${venv[@]}" "${plugins[@]}" \
    TOPO_PROFILER_DIR="$j/traces" \
    timeout -k 10 "$(inner_timeout $((secs * 4 + 150)))" "$PYTHON" "$GPU_DIR/train_job.py" $args "${share[@]}" \
    --seconds "$secs" --delay-rank "$delay_rank" --delay-ms "$(delay_of "$job")" --out "$j" --port $((port_base + 11 * idx)) \
    "${kin[@]}" >"$j/job.log" 2>&1
  log "job $job ($variant) exit $? in $(( $(date +%s) - t0 )) s: $(grep -h '^{"mode"' "$j/job.log")"
}

# Rendezvous ports: one block per TAG, so several truth_jobs.sh at once never share one.
port_base=$((10000 + $(printf '%s' "${TAG:-$variant}" | cksum | cut -d' ' -f1) % 900 * 60))

# PARALLEL=1: every job at once (they share the GPUs: slower steps, the same comparisons).
idx=0
for job in ${JOBS:-ddp-short ddp-long fsdp tpdp pp}; do
  idx=$((idx + 1))
  if [ "${PARALLEL:-0}" = 1 ]; then run_job "$job" "$idx" & else run_job "$job" "$idx"; fi
done
wait
if [ "$variant" != full ]; then
  "$PYTHON" "$GPU_DIR/truth_jobs.py" "$d" "$REPORT_BIN" "$delay_rank" --variant "$variant" \
    --json "$d/truth.json" 2>&1 | tee "$d/truth.txt"
  grep -q '^FAIL' "$d/truth.txt" && exit 1
fi
exit 0

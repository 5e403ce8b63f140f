#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real job of scripts/main.sh: train_job.py --mode ddp (DDP, ~400 M-parameter bf16 model, 25 MB
# buckets) on every local GPU for SECONDS_EACH seconds (default 20) with both plugins loaded in
# their default configuration (tuner on $PROFILE or $OUT/calibrate.profile when present), and
# torch.profiler (Kineto) on its last 8 steps only, so that topo's own compute windows record the
# steps before. Then:
#   - topo-report on the topo traces (the whole run: text and HTML), on the Kineto traces alone;
#   - one like-for-like table per rank: topo's own report (its traces only) and Kineto's, both on
#     the SAME steps (Kineto's, the first profiled one left out), where topo's overlap and exposed
#     figures are its estimates (topo steps aside while torch.profiler records: CUDA 13.0's CUPTI
#     serves one client), with their error; and topo's whole-run headline (steady-state steps).
# Results under $OUT/ddp/ and $OUT/ddp_job.txt.
# SHARE_GPU=1: two ranks on GPU 0 (NCCL >= 2.30: NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL_MAX_CTAS=32;
# NCCL_LIB=path of its libnccl.so.2 is preloaded into PyTorch when given).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO REPORT_BIN
machine_info
d="$OUT/ddp"
rm -rf "$d"; mkdir -p "$d/traces"
prof=${PROFILE:-$OUT/calibrate.profile}
penv=()
[ -f "$prof" ] && penv=(TOPO_TUNER_PROFILE="$prof")
share=()
if [ "${SHARE_GPU:-0}" = 1 ]; then
  penv+=(NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=32)
  [ -n "${NCCL_LIB:-}" ] && penv+=(LD_PRELOAD="$NCCL_LIB")
  share=(--share-gpu --nranks 2)
fi
secs=${SECONDS_EACH:-20}
env NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$d/traces" \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING "${penv[@]}" \
  timeout -k 10 "$(inner_timeout $((secs * 3 + 120)))" "$PYTHON" "$GPU_DIR/train_job.py" --mode ddp \
  --seconds "$secs" --kineto "$d/kineto" --kineto-steps 8 --out "$d" "${share[@]}" ${DDP_ARGS:-} >"$d/job.log" 2>&1
rc=$?
{
  echo "ddp job exit $rc"
  grep -h '^{"mode"' "$d/job.log"
  grep -h -m2 -E 'TUNER/Plugin: Using|PROFILER/Plugin: Loaded' "$d/job.log"
  echo; echo "== topo-report on the topo traces (the whole run)"
  "$REPORT_BIN" --html "$d/report-topo.html" "$d/traces" 2>&1
  echo; echo "== topo-report on the Kineto traces (the last steps)"
  "$REPORT_BIN" "$d/kineto" 2>&1
  echo
  "$PYTHON" "$GPU_DIR/ddp_compare.py" "$d" "$REPORT_BIN" 2>&1
} >"$OUT/ddp_job.txt" 2>&1
tail -20 "$OUT/ddp_job.txt" >&2
exit $rc

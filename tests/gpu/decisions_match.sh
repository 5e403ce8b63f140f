#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# With 2 GPUs, PyTorch's NCCL (2.28.9) and both plugins: (1) every rank ran the same algorithm,
# protocol and channels; (2) they are the tuner's decisions - the profiler's collective records
# (topo-report dump) against topo-tune's decision map for the same profile, nRanks and nNodes;
# (3) the profiler's per-collective GPU times match CUDA-event timings of the same calls within
# 5 % (sizes >= 1 MB, every collective GPU-timed: TOPO_PROFILER_SAMPLE=1).
# Profile: $PROFILE, else $OUT/calibrate.profile (from calibrate.sh), else the tuner's built-in.
# Results: $OUT/decisions_match.txt (+ dumps and the map under $OUT/decisions/).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO REPORT_BIN TUNE_BIN
machine_info
[ "$(gpu_count)" -ge 2 ] || die "needs 2 GPUs"
d="$OUT/decisions"
rm -rf "$d"; mkdir -p "$d/traces" "$d/dump" "$d/calls"
prof=${PROFILE:-$OUT/calibrate.profile}
penv=()
map_args=(--gpu H200)
if [ -f "$prof" ]; then
  penv=(TOPO_TUNER_PROFILE="$prof")
  map_args=(--profile "$prof")
  log "decisions_match: tuner profile $prof"
else
  log "decisions_match: no profile ($prof): the tuner's built-in defaults"
fi
env NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$d/traces" \
  TOPO_PROFILER_SAMPLE=1 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING "${penv[@]}" \
  timeout -k 10 "$(inner_timeout 300)" "$PYTHON" "$GPU_DIR/torch_collectives.py" --mode timing --nranks 2 --repeat 10 --out "$d/calls" \
  >"$d/torch.log" 2>&1
rc=$?
echo "torch timing job exit $rc" >"$OUT/decisions_match.txt"
i=0
for t in $(find "$d/traces" -type f | sort); do
  "$REPORT_BIN" dump "$t" >"$d/dump/$(basename "$t").jsonl" 2>>"$d/dump/errors.txt" || echo "dump failed: $t" >>"$d/dump/errors.txt"
  i=$((i + 1))
done
echo "traces dumped: $i" >>"$OUT/decisions_match.txt"
gpu=$(awk '/^section/ {for (i = 1; i <= NF; i++) if ($i ~ /^gpu=/) {sub("gpu=", "", $i); print $i; exit}}' "$prof" 2>/dev/null)
[ -n "$gpu" ] && [ "$gpu" != "*" ] && map_args+=(--gpu "$gpu")
"$TUNE_BIN" "${map_args[@]}" --nvls 0 --nranks 2 --nnodes 1 --min 8 --max 1G --json >"$d/tune-map.json" 2>"$d/tune-map.err"
"$PYTHON" "$GPU_DIR/decisions_match.py" --calls "$d/calls" --dump "$d/dump" --map "$d/tune-map.json" \
  >>"$OUT/decisions_match.txt" 2>&1
rc2=$?
cat "$OUT/decisions_match.txt" >&2
[ $rc -eq 0 ] && [ $rc2 -eq 0 ]

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real job: ddp_job.py (DDP, ~400 M-parameter bf16 model) on every local GPU with both
# plugins loaded (tuner on $PROFILE or $OUT/calibrate.profile when present), the same steps also
# recorded by torch.profiler (Kineto). Then topo-report on the topo traces, on the Kineto traces
# alone, and on both together (text, JSON, HTML). Results under $OUT/ddp/ and $OUT/ddp_job.txt.
# SHARE_GPU=1: two ranks on GPU 0 (NCCL >= 2.30: NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL_MAX_CTAS=32;
# NCCL_LIB=path of its libnccl.so.2 is preloaded into PyTorch when given).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO REPORT_BIN
machine_info
d="$OUT/ddp"
rm -rf "$d"; mkdir -p "$d/traces" "$d/kineto"
prof=${PROFILE:-$OUT/calibrate.profile}
penv=()
[ -f "$prof" ] && penv=(TOPO_TUNER_PROFILE="$prof")
share=()
if [ "${SHARE_GPU:-0}" = 1 ]; then
  penv+=(NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=32)
  [ -n "${NCCL_LIB:-}" ] && penv+=(LD_PRELOAD="$NCCL_LIB")
  share=(--share-gpu --nranks 2)
fi
env NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$d/traces" \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING "${penv[@]}" \
  timeout -k 10 "$(inner_timeout 300)" "$PYTHON" "$GPU_DIR/ddp_job.py" --kineto "$d/kineto" --out "$d" "${share[@]}" ${DDP_ARGS:-} >"$d/job.log" 2>&1
rc=$?
{
  echo "ddp job exit $rc"
  grep -h '^{"ranks"' "$d/job.log"
  grep -h -m2 -E 'TUNER/Plugin: Using|PROFILER/Plugin: Loaded' "$d/job.log"
  echo; echo "== topo-report on the topo traces"
  "$REPORT_BIN" --html "$d/report-topo.html" "$d/traces" 2>&1
  "$REPORT_BIN" --json -o "$d/report-topo.json" "$d/traces" 2>/dev/null
  echo; echo "== topo-report on the Kineto traces alone"
  "$REPORT_BIN" "$d/kineto" 2>&1
  "$REPORT_BIN" --json -o "$d/report-kineto.json" "$d/kineto" 2>/dev/null
  echo; echo "== topo-report on both"
  "$REPORT_BIN" "$d/traces" "$d/kineto" 2>&1
  "$REPORT_BIN" --json -o "$d/report-both.json" "$d/traces" "$d/kineto" 2>/dev/null
} >"$OUT/ddp_job.txt" 2>&1
"$PYTHON" - "$d" >>"$OUT/ddp_job.txt" 2>&1 <<'PYEOF'
import json, os, sys
d = sys.argv[1]
print("\n== per-rank comparison (communication share, overlap ratio, exposed ms)")
for name in ("topo", "kineto", "both"):
    try:
        r = json.load(open(os.path.join(d, f"report-{name}.json")))
    except Exception as e:
        print(f"{name}: no report ({e})"); continue
    f = lambda v, scale=1.0, fmt="{:.3f}": "n/a" if v is None else fmt.format(v * scale)
    for k in r.get("ranks", []):
        print(f"{name:>7} rank {k.get('rank')}: span {f(k.get('span_ns'), 1e-6, '{:.2f}')} ms, comm share "
              f"{f(k.get('comm_share'))}, overlap ratio {f(k.get('overlap_ratio'))}, exposed "
              f"{f(k.get('exposed_comm_ns'), 1e-6, '{:.2f}')} ms")
PYEOF
tail -20 "$OUT/ddp_job.txt" >&2
exit $rc

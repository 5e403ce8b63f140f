#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUPTI: compute kernels (bf16 matmuls) on one stream beside an NCCL all_reduce on another, with
# an overlap known from CUDA events (cupti_overlap.py), recorded by libtopo-profiler with
# TOPO_PROFILER_CUPTI=1; topo-report's overlap figure over the time of the measured iterations
# (--window from the truth's time.time_ns() stamps) must be within 1 % of the truth's span.
# How the truth is made comparable with the report: cupti_overlap.py's docstring.
# Results: $OUT/cupti_overlap.txt; reports (report-rank<r>.json/.txt per window, report.txt
# for the whole trace) and truth-rank<r>.json under $OUT/cupti/.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO REPORT_BIN
machine_info
[ "$(gpu_count)" -ge 2 ] || die "needs 2 GPUs"
d="$OUT/cupti"
rm -rf "$d"; mkdir -p "$d/traces"
env NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_CUPTI=1 TOPO_PROFILER_DIR="$d/traces" \
  NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,PROFILE \
  timeout -k 10 "$(inner_timeout 240)" "$PYTHON" "$GPU_DIR/cupti_overlap.py" run --nranks 2 --out "$d" ${CUPTI_ARGS:-} >"$d/job.log" 2>&1
rc=$?
# For people: the whole trace (warm-up, barriers included) and each rank's measured window.
"$REPORT_BIN" "$d/traces" >"$d/report.txt" 2>"$d/report.err"
rc2=$?
for t in "$d"/truth-rank*.json; do
  [ -e "$t" ] || continue
  r=${t##*truth-rank}; r=${r%.json}
  win=$("$PYTHON" -c 'import json,sys; w=json.load(open(sys.argv[1])).get("window_ns"); print(f"{int(w[0])},{int(w[1])}" if w else "")' "$t")
  [ -n "$win" ] && "$REPORT_BIN" --window "$win" "$d/traces" >"$d/report-rank$r.txt" 2>>"$d/report.err"
done
# The check: per rank, topo-report over that rank's window (the same time as the truth's
# iterations, on CLOCK_REALTIME) against the truth; the overlap within 1 % of the truth's span.
"$PYTHON" "$GPU_DIR/cupti_overlap.py" compare "$d" "$REPORT_BIN" >"$OUT/cupti_overlap.txt" 2>&1
rc3=$?
{ echo "job exit $rc, topo-report exit $rc2"; } >>"$OUT/cupti_overlap.txt"
cat "$OUT/cupti_overlap.txt" >&2
[ $rc -eq 0 ] && [ $rc3 -eq 0 ]

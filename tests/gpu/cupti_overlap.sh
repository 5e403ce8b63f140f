#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# CUPTI: compute kernels (bf16 matmuls) on one stream beside an NCCL all_reduce on another, with
# an overlap known from CUDA events (cupti_overlap.py), recorded by libtopo-profiler with
# TOPO_PROFILER_CUPTI=1; topo-report's overlap figure must be within 1 % of the truth's span.
# Results: $OUT/cupti_overlap.txt, report JSON and truth under $OUT/cupti/.
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
  timeout -k 10 "$(inner_timeout 240)" "$PYTHON" "$GPU_DIR/cupti_overlap.py" --nranks 2 --out "$d" ${CUPTI_ARGS:-} >"$d/job.log" 2>&1
rc=$?
"$REPORT_BIN" --json -o "$d/report.json" "$d/traces" 2>"$d/report.err"
rc2=$?
"$REPORT_BIN" "$d/traces" >"$d/report.txt" 2>>"$d/report.err"
"$PYTHON" - "$d" >"$OUT/cupti_overlap.txt" 2>&1 <<'PYEOF'
import glob, json, os, sys
d = sys.argv[1]
truth = {}
for f in glob.glob(os.path.join(d, "truth-rank*.json")):
    t = json.load(open(f))
    truth[t["rank"]] = t
try:
    rep = json.load(open(os.path.join(d, "report.json")))
except Exception as e:
    print(f"FAIL: no report JSON ({e})"); sys.exit(1)
ranks = {r.get("rank"): r for r in rep.get("ranks", [])}
print(f"truth ranks {sorted(truth)}, report ranks {sorted(ranks)}")
ok = bool(truth)
# Match by rank id; if the report numbered its processes differently, fall back to order.
rep_list = [ranks[k] for k in sorted(ranks)]
for i, (r, t) in enumerate(sorted(truth.items())):
    rr = ranks.get(r) or (rep_list[i] if i < len(rep_list) else None)
    if rr is None:
        print(f"rank {r}: FAIL (not in the report)"); ok = False; continue
    diff = rr.get("overlap_ns", 0) - t["overlap_ns"]
    lim = 0.01 * t["span_ns"]
    good = abs(diff) <= lim
    ok &= good
    print(f"rank {r}: overlap truth {t['overlap_ns']/1e6:.3f} ms, report {rr.get('overlap_ns', 0)/1e6:.3f} ms, "
          f"diff {diff/1e6:+.3f} ms, 1% of span {lim/1e6:.3f} ms -> {'PASS' if good else 'FAIL'}; "
          f"comm truth {t['comm_ns']/1e6:.3f} ms report {rr.get('comm_ns', 0)/1e6:.3f} ms; "
          f"compute truth {t['compute_ns']/1e6:.3f} ms report {rr.get('compute_ns', 0)/1e6:.3f} ms")
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PYEOF
rc3=$?
{ echo "job exit $rc, topo-report exit $rc2"; } >>"$OUT/cupti_overlap.txt"
cat "$OUT/cupti_overlap.txt" >&2
[ $rc -eq 0 ] && [ $rc3 -eq 0 ]

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ddp_job.sh's closing table: ddp_compare.py RUN_DIR REPORT_BIN.
Per rank, topo's own report (its traces only) beside topo-report on the Kineto traces, both on
the same steps (Kineto's, the first profiled one left out): communication share (measured by
both), overlap ratio and exposed share (topo's estimated where it stepped aside for
torch.profiler, with the error it states). Then topo's whole-run headline figures, which come
from the steady-state steps its own windows recorded, and which steps those are."""
import json
import os
import sys

from truth_lib import per_rank, report_json, step_bounds

run, report = sys.argv[1], sys.argv[2]


def pct(x, err=None, est=False):
    if x is None:
        return "n/a"
    s = f"{100 * x:.1f} %"
    if err:
        s += f" ± {100 * err:.1f}"
    return s + (" (est.)" if est else "")


b = step_bounds(run)
meta = json.load(open(os.path.join(run, "job.json"))) if os.path.exists(os.path.join(run, "job.json")) else {}
kfrom = meta.get("kineto_from")
if kfrom is None or len(b) < kfrom + 3:
    print("no Kineto steps to compare on")
    sys.exit(0)
win = (b[kfrom + 1], b[-1])
topo = per_rank(report_json(report, [os.path.join(run, "traces")], win))
kin = per_rank(report_json(report, [os.path.join(run, "kineto")], win))
whole = report_json(report, [os.path.join(run, "traces")])
print(f"== the same steps ({len(b) - 2 - kfrom} steps, {(win[1] - win[0]) / 1e9:.2f} s): topo's own traces vs "
      "torch.profiler's")
print(f"{'rank':>4}  {'figure':<20} {'topo (own traces)':>24} {'Kineto':>10}")
for rk in sorted(set(topo) | set(kin)):
    t, k = topo.get(rk, {}), kin.get(rk, {})
    span, comm = t.get("span_ns") or 0, t.get("comm_ns") or 0
    est = (t.get("exposed_estimated_ns") or 0) > 0
    e_exp = (t.get("exposed_all_error_ns") or 0) / span if span else None
    e_ovl = (t.get("exposed_all_error_ns") or 0) / comm if comm else None
    rows = [("communication share", pct(t.get("comm_share")), pct(k.get("comm_share"))),
            ("overlap ratio", pct(t.get("overlap_all_ratio"), e_ovl, est), pct(k.get("overlap_all_ratio"))),
            ("exposed share", pct(t.get("exposed_all_share"), e_exp, est), pct(k.get("exposed_all_share")))]
    for name, x, y in rows:
        print(f"{rk:>4}  {name:<20} {x:>24} {y:>10}")
print()
print("== topo's whole-run headline (what a user reads without torch.profiler)")
for k in (whole or {}).get("ranks", []):
    print(f"rank {k['rank']}: overlap {pct(k.get('overlap_ratio'))}, exposed (all) {pct(k.get('exposed_all_share'))} "
          f"of the span, comm {pct(k.get('comm_share'))}; from: {k.get('headline_from') or k.get('intervals_from')}")
print("topo's figures on the same steps are what to compare; Kineto recorded only its last steps.")

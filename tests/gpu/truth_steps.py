#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Per-step figures of a truth run (truth_one_gpu.sh's run A): truth_steps.py RUN_DIR REPORT_BIN.
For every measured step (bounds from the job's steps-rank*.json), topo-report on topo's traces and
on the Kineto traces, clipped to that step: per rank the CUPTI coverage of the step, comm share,
overlap ratio and exposed share. Then the same over the steps topo's CUPTI window covers whole,
against Kineto's steps: shows whether a gap between the two is drift between early and late
steps, a partial step at a window's edge, or a bias. Prints a table; --json writes one object."""
import json
import os
import sys

from truth_lib import per_rank, report_json, step_bounds

run, report = sys.argv[1], sys.argv[2]


def rep(inputs, window):
    return per_rank(report_json(report, inputs, window, say_failure=False))


def f(x):
    return "   n/a" if x is None else f"{100 * x:6.2f}"


b = step_bounds(run)
topo_in, kin_in = [os.path.join(run, "traces")], [os.path.join(run, "kineto")]
rows = []
for i in range(len(b) - 1):
    w = (b[i], b[i + 1])
    rows.append({"step": i, "topo": rep(topo_in, w), "kineto": rep(kin_in, w)})
ranks = sorted({r for row in rows for r in row["topo"]} | {r for row in rows for r in row["kineto"]})
fields = ("covered_share", "comm_share", "overlap_ratio", "exposed_share")
print(f"{run}: per step, per rank: topo covered / comm / overlap / exposed  |  Kineto comm / overlap / exposed (%)")
for row in rows:
    line = f"step {row['step']:3d}"
    for r in ranks:
        t, k = row["topo"].get(r, {}), row["kineto"].get(r, {})
        line += f"  r{r} " + " ".join(f(t.get(x)) for x in fields) + " |" + " ".join(f(k.get(x)) for x in fields[1:])
    print(line)

summary = {}
for r in ranks:
    whole = [row["step"] for row in rows if (row["topo"].get(r, {}).get("covered_share") or 0) >= 0.999]
    kin = [row["step"] for row in rows if (row["kineto"].get(r, {}).get("comm_share") or 0) > 0]
    s = {"whole_steps": whole, "kineto_steps": kin}
    if whole:
        t = rep(topo_in, (b[whole[0]], b[whole[-1] + 1]))
        s["topo_whole"] = {x: t.get(r, {}).get(x) for x in fields}
    if len(kin) > 1:
        k = rep(kin_in, (b[kin[1]], b[kin[-1] + 1]))  # the first profiled step skipped
        s["kineto"] = {x: k.get(r, {}).get(x) for x in fields}
    summary[r] = s
    tw, kk = s.get("topo_whole", {}), s.get("kineto", {})
    print(f"rank {r}: topo over its {len(whole)} whole covered steps {whole[:1]}..{whole[-1:]}: "
          + " ".join(f"{x} {f(tw.get(x))}" for x in fields[1:])
          + f"  | Kineto steps {kin[1:2]}..{kin[-1:]}: " + " ".join(f"{x} {f(kk.get(x))}" for x in fields[1:]))
if len(sys.argv) > 3 and sys.argv[3] == "--json":
    json.dump({"rows": rows, "summary": summary}, open(os.path.join(run, "truth_steps.json"), "w"))

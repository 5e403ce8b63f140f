#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks of truth_one_gpu.sh: truth_compare.py DIR REPORT_BIN KFROM DELAYED_RANK.
Prints one PASS/FAIL line per check (docs in truth_one_gpu.sh)."""
import glob
import json
import os
import subprocess
import sys

from truth_lib import per_rank, report_json, step_bounds

d, report, kfrom, delayed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def rep(inputs, window=None):
    return report_json(report, inputs, window)


def bounds(run):
    return step_bounds(os.path.join(d, run))


def pp(x):
    return "n/a" if x is None else f"{100 * x:.2f}"


def check(name, ok, text):
    print(f"{'PASS' if ok else 'FAIL'} {name}: {text}")


def check_a():
    """Run A: topo's own report against Kineto's, both by topo-report on the same steps (Kineto's,
    the first profiled one skipped). topo stepped aside there (CUDA 13.0's CUPTI serves one client),
    so its overlap and exposed figures on those steps are its estimates: measured communication
    x (1 - the overlap ratio of its covered steps elsewhere in the run), with their error."""
    b = bounds("A")
    n = len(b) - 1
    if n < kfrom + 4:
        check("A ran", False, f"{n} measured steps, need > {kfrom + 4}")
        return
    topo_in = [os.path.join(d, "A", "traces")]
    kin_in = [os.path.join(d, "A", "kineto")]
    kwin = (b[kfrom + 1], b[n])
    half = kfrom + 1 + (n - kfrom - 1) // 2
    topo = per_rank(rep(topo_in, kwin))
    kin = per_rank(rep(kin_in, kwin))
    kin_a = per_rank(rep(kin_in, (kwin[0], b[half])))
    kin_b = per_rank(rep(kin_in, (b[half], kwin[1])))

    def fig(k, f):
        if f == "overlap":
            return k.get("overlap_all_ratio")
        if f == "exposed":
            return k.get("exposed_all_share")
        return k.get("comm_share")

    for rk in sorted(kin):
        k, t = kin[rk], topo.get(rk, {})
        span = t.get("span_ns") or 0
        m = t.get("overlap_model") or {}
        err = {"comm": (t.get("comm_error_ns") or 0) / span if span else 0,
               "exposed": (t.get("exposed_all_error_ns") or 0) / span if span else 0,
               "overlap": (t.get("exposed_all_error_ns") or 0) / t["comm_ns"] if t.get("comm_ns") else 0}
        for f in ("comm", "overlap", "exposed"):
            x, y = fig(t, f), fig(k, f)
            noise = abs((fig(kin_a.get(rk, {}), f) or 0) - (fig(kin_b.get(rk, {}), f) or 0))
            extra = ""
            if f != "comm":
                extra = (f" (topo covered {pp(t.get('covered_share'))} % of these steps; model r {pp(m.get('ratio'))} % "
                         f"from {m.get('chunks')} covered steps, {m.get('outliers')} left out)")
            check(f"rank {rk} {f} share, same steps", x is not None and y is not None and abs(x - y) <= 0.01,
                  f"topo {pp(x)} % ± {100 * err[f]:.2f} vs Kineto {pp(y)} %; Kineto half-to-half "
                  f"{100 * noise:.2f} pp{extra}")
    full = per_rank(rep(topo_in))
    if full:
        s = max(full.values(), key=lambda k: k.get("delay_caused_ns") or 0)
        check("straggler named", s["rank"] == delayed,
              f"rank {s['rank']} caused {s.get('delay_caused_ns', 0) / 1e6:.1f} ms of waiting "
              f"(rank {delayed} was delayed)")
        check("comm measured or estimated on every rank", all((k.get("comm_ns") or 0) > 0 for k in full.values()),
              ", ".join(f"rank {k['rank']} {k.get('comm_ns', 0) / 1e6:.1f} ms (est. {k.get('comm_estimated_ns', 0) / 1e6:.1f})" for k in full.values()))


def gpu_events(run):
    out = {}
    for f in sorted(glob.glob(os.path.join(d, run, "kineto", "*.json"))):
        ev = json.load(open(f)).get("traceEvents", [])
        out[os.path.basename(f)] = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    return out


def cupti_states(run):
    """State counts of the CUPTI span records in the run's -cupti traces (topo-report dump)."""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, run, "traces", "*cupti*"))):
        p = subprocess.run([report, "dump", f], capture_output=True, text=True)
        for line in p.stdout.splitlines():
            if '"type":"cupti"' in line:
                st = json.loads(line)["state"]
                out[st] = out.get(st, 0) + 1
    return out


def check_bc():
    """Runs B (topo CUPTI=on, torch.profiler starts while topo records) and C (no topo)."""
    gb, gc = gpu_events("B"), gpu_events("C")
    if not gc:
        check("torch traces of runs B and C", False, "none found")
    for name in sorted(gc):
        x, y = gb.get(name, 0), gc[name]
        check(f"torch trace {name} complete beside topo recording (CUPTI=on)", y > 0 and x >= y,
              f"{x} GPU events with topo (CUPTI on) vs {y} without topo")
    lp = os.path.join(d, "B", "job.log")
    logs = open(lp, errors="replace").read() if os.path.exists(lp) else ""
    check("no CUPTI subscriber conflict in torch's log", bool(logs) and "MULTIPLE_SUBSCRIBERS" not in logs,
          "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED " + ("found" if "MULTIPLE_SUBSCRIBERS" in logs else "absent"))
    sb = cupti_states("B")
    check("topo stepped aside for torch.profiler (run B)", sb.get("yielded", 0) + sb.get("declined", 0) > 0,
          f"CUPTI span records in topo's traces: {sb or 'none'}")


def check_a_cupti():
    sa = cupti_states("A")
    check("topo's default CUPTI window recorded (run A)", sa.get("recorded", 0) + sa.get("yielded", 0) > 0,
          f"CUPTI span records in topo's traces: {sa or 'none'}")


if os.path.isdir(os.path.join(d, "A")):
    check_a()
    check_a_cupti()
if os.path.isdir(os.path.join(d, "B")) and os.path.isdir(os.path.join(d, "C")):
    check_bc()

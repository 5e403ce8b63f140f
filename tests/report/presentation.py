#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What topo-report shows a reader, checked on the embedded default's traces (topo-demo: 8 ranks,
rank 1 the straggler) and on a real Kineto-only job with a delayed rank
(tests/data/truth-1xh200/kineto, rank 1 sleeping 20 ms before each step).

Usage (CTest runs one check per test): presentation.py CHECK --report TOPO_REPORT --demo DIR
--kineto DIR --work DIR [--tune TOPO_TUNE]. Checks: text_fits, notes_fold, alignment, csv_tables, kernel_names, dump,
kineto_process, kineto_skew, busbw_after_last_start, fit_times, closed_loop, json_nulls,
next_steps. Each prints what it compared and
exits 1 on the first mismatch. Standard library only (the CSV files are read with the csv module).
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys

WIDTH = 100


def run(args, rc=0):
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != rc:
        fail(f"{' '.join(args)}: exit {p.returncode}, expected {rc}\n{p.stderr}")
    return p.stdout


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def report(a, *args, rc=0):
    return run([a.report, *args], rc)


def report_json(a, path, *args):
    return json.loads(report(a, "--json", *args, path))


def text_fits(a):
    """The default text fits 100 columns; --wide keeps a table row on one line."""
    for path in (a.demo, a.kineto):
        text = report(a, path)
        long = [l for l in text.splitlines() if len(l) > WIDTH]
        check(not long, f"{path}: {len(long)} lines over {WIDTH} columns, e.g. {long[:1]}")
        wide = report(a, "--wide", path)
        rows = [l for l in wide.splitlines() if l.startswith("  rank 0")]
        check(rows and "%" in rows[0] and len(rows[0]) > WIDTH,
              f"{path}: --wide does not keep the rank row whole: {rows[:1]}")
    print(f"default text within {WIDTH} columns, --wide rows whole")


def notes_fold(a):
    """Notes that say the same of several ranks are one line (with the ranks listed)."""
    text = report(a, "--wide", a.demo)
    notes = [l.strip() for l in text.splitlines() if re.match(r"^  ranks? [0-9,-]+: ", l)]
    bodies = [re.sub(r"^ranks? [0-9,-]+: ", "", n) for n in notes]
    dup = {b for b in bodies if bodies.count(b) > 1}
    check(not dup, f"the same note repeated per rank: {sorted(dup)[:1]}")
    # every rank of the demo shares some note (ranks 0-7 on an idle machine; on a loaded one the
    # CUPTI windows, which follow real time, may cover some ranks and not others)
    check(any(re.match(r"ranks [0-9]+-[0-9]+", n) for n in notes), f"no note folded over a run of ranks: {notes}")
    print(f"{len(notes)} rank notes, none repeated")


def alignment(a):
    """Crossed bounds are said to be invalid; no error bar of 0, no lower > upper in JSON."""
    j = report_json(a, a.demo)
    crossed = 0
    for r in j["ranks"]:
        al = r["alignment"]
        lo, hi = al.get("lower_ns"), al.get("upper_ns")
        check(lo is None or hi is None or lo <= hi, f"rank {r['rank']}: lower {lo} > upper {hi}")
        crossed += al.get("upper_crossed_ns") is not None
    text = report(a, "--wide", a.demo)
    line = next((l for l in text.splitlines() if "cross-rank error" in l), "")
    check(line, "no alignment line")
    check(not re.search(r"error <= 0 ns|±0 ns", line), f"an error bar of 0: {line}")
    if crossed:
        check("upper bound is invalid" in text, "crossed bounds not said to be invalid")
    print(f"{crossed} ranks with crossed bounds, said so; alignment: {line.strip()[:80]}...")


def read_csv(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    check(rows, f"{path}: empty")
    head = rows[0]
    check(len(set(head)) == len(head), f"{path}: duplicate columns {head}")
    for i, row in enumerate(rows[1:], 2):
        check(len(row) == len(head), f"{path}:{i}: {len(row)} fields, header has {len(head)}")
    return [dict(zip(head, row)) for row in rows[1:]]


def csv_tables(a):
    """--csv DIR: one table per file, each loadable; --csv-table NAME: that table alone."""
    for path, want in ((a.demo, ["ranks", "collectives", "steps"]),
                       (a.kineto, ["ranks", "collectives", "steps", "temporal", "kernels",
                                   "streams", "memcpy"])):
        out = os.path.join(a.work, "csv-" + os.path.basename(path.rstrip("/")))
        report(a, "--csv", out, path)
        got = sorted(f[:-4] for f in os.listdir(out) if f.endswith(".csv"))
        check(got == sorted(want), f"{path}: tables {got}, expected {sorted(want)}")
        j = report_json(a, path)
        tables = {t: read_csv(os.path.join(out, t + ".csv")) for t in want}
        check(len(tables["ranks"]) == len(j["ranks"]), "ranks.csv: not one row per rank")
        for row, r in zip(tables["ranks"], j["ranks"]):
            check(int(row["span_ns"]) == r["span_ns"], f"ranks.csv span {row} vs JSON")
            check((row["pid"] or None) == (str(r["pid"]) if r["pid"] else None), "pid")
        check(len(tables["collectives"]) == len(j["collectives"]), "collectives.csv rows")
        for row in tables["collectives"]:
            for k in ("calls", "gpu_timed", "bytes"):
                int(row[k])
            for k in ("median_ns", "busbw_gbs", "busbw_after_last_start_gbs"):
                check(row[k] == "" or float(row[k]) >= 0, f"collectives.csv {k}={row[k]}")
        if "kernels" in tables:
            kj = {(r["rank"], k["id"]): k["name"] for r in j["kernel_analyses"]["ranks"]
                  for k in r["kernels"]}
            for row in tables["kernels"]:
                key = (int(row["rank"]), int(row["kernel_id"]))
                check(kj.get(key) == row["kernel"], f"kernels.csv {key}: name differs from JSON")
        one = report(a, "--csv-table", "collectives", path)
        rows = list(csv.reader(io.StringIO(one)))
        check(rows[0][0] == "collective" and all(len(r) == len(rows[0]) for r in rows),
              "--csv-table collectives is not one table")
    report(a, "--csv", a.demo, rc=2)  # the old spelling: a directory and no traces
    print("every table in its own file, loadable by csv.reader, matching the JSON")


def kernel_names(a):
    """Kernel names are never cut: two kernels of a rank never read alike."""
    j = report_json(a, a.kineto)
    text = report(a, "--wide", a.kineto)
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("Top kernels"))
    head = lines[start + 1]
    col = head.index("kernel")
    seen = {}
    for l in lines[start + 2:]:
        if not l.startswith("  ") or not l[2:3].isdigit():
            break
        name = re.split(r"\s{2,}", l[col:].strip())[0]
        rank = l.split()[0]
        if name.startswith("others"):
            continue
        check(name not in seen.get(rank, set()), f"rank {rank}: two kernels read '{name}'")
        seen.setdefault(rank, set()).add(name)
    full = {k["name"] for r in j["kernel_analyses"]["ranks"] for k in r["kernels"]}
    shown = set().union(*seen.values())
    check(any(n in full for n in shown), "no kernel shown with its full name")
    narrow = report(a, a.kineto)
    check(all(len(l) <= WIDTH for l in narrow.splitlines()), "kernel table over 100 columns")
    print(f"{sum(len(s) for s in seen.values())} top kernels, all told apart")


def dump(a):
    """dump prints null where the trace says unknown, never the sentinel."""
    traces = sorted(f for f in os.listdir(a.demo) if f.endswith(".trace"))
    for t in traces[:2]:
        out = report(a, "dump", os.path.join(a.demo, t))
        check("-9223372036854775808" not in out, f"{t}: INT64_MIN printed")
        lines = [json.loads(l) for l in out.splitlines()]
        h = lines[0]["header"]
        check(None in (h["gpu_minus_realtime_ns"], h["cupti_minus_realtime_ns"]),
              f"{t}: an offset the trace does not have is not null")
        for rec in lines[1:]:
            if rec.get("type") == "coll" and not rec["flags"] & 2:
                check(rec["gpu_start_ns"] is None, f"{t}: untimed collective with GPU time 0")
    print(f"dump: nulls for unknown in {traces[:2]}")


def kineto_process(a):
    """A Kineto rank's process: the pid of its runtime calls; its host unknown, said so."""
    j = report_json(a, a.kineto)
    pids = [r["pid"] for r in j["ranks"]]
    check(pids == [1489, 1490], f"pids {pids}, expected [1489, 1490] (the traces' CPU pids)")
    check(all(r["host"] is None for r in j["ranks"]), "a host the trace does not name")
    html = os.path.join(a.work, "kineto.html")
    report(a, "--html", html, "--json", a.kineto)
    page = open(html).read()
    check("?:1489" in page and ":0<" not in page, "HTML host:pid not '?:1489'")
    # a tensorboard_trace_handler name gives the host
    src = os.path.abspath(os.path.join(a.kineto, sorted(os.listdir(a.kineto))[0]))
    named = os.path.join(a.work, "tb")
    os.makedirs(named, exist_ok=True)
    dst = os.path.join(named, "node7_1489.1790858026000000000.pt.trace.json.gz")
    if not os.path.exists(dst):
        os.symlink(src, dst)
    j = report_json(a, named)
    check(j["ranks"][0]["host"] == "node7" and j["ranks"][0]["pid"] == 1489,
          f"host from the file name: {j['ranks'][0]['host']}:{j['ranks'][0]['pid']}")
    print("Kineto ranks: ?:1489, ?:1490; node7:1489 from a tensorboard name")


def kineto_skew(a):
    """Kineto only, a delayed rank: why there is no skew table, and the comparison it allows."""
    text = report(a, "--wide", a.kineto)
    check("Start skew and stragglers: n/a: Kineto traces carry no NCCL sequence number" in text,
          "no reason for the missing skew section")
    m = re.search(r"likely straggler: rank (\d+)", text)
    check(m and m.group(1) == "1", f"the delayed rank (1) not named: {m and m.group(0)}")
    j = report_json(a, a.kineto)
    check(j["skew_unknown_reason"], "JSON: no skew_unknown_reason")
    check(j["kineto_comm_per_step"]["likely_straggler"] == 1, "JSON: likely_straggler")
    d = report_json(a, a.demo)
    check(d["skew_unknown_reason"] is None, "a reason where the skew is known")
    print("Kineto-only: reason given, rank 1 named as the likely straggler")


def busbw_after_last_start(a):
    """busbw without the wait for the last rank: the demo models 350 GB/s AllReduce transfers."""
    j = report_json(a, a.demo)
    ar = [c for c in j["collectives"] if c["collective"] == "AllReduce"][0]
    x = ar["busbw_after_last_start_gbs"]
    check(x is not None and 0.8 * 350 <= x <= 1.05 * 350,
          f"AllReduce busbw after last start {x}, the demo models 350 GB/s")
    check(ar["busbw_gbs"] < 0.5 * x, f"whole-kernel busbw {ar['busbw_gbs']} should include waiting")
    print(f"AllReduce busbw {ar['busbw_gbs']:.1f} GB/s whole kernel, {x:.1f} after last start")


def fit_times(a):
    """fit gives the tuner the transfer's time, not the wait for the straggler: the demo's 25 MB
    AllReduce on 8 ranks is modelled at 25 MB x 2 x 7/8 / 350 GB/s + 8 us = 139 us."""
    prof = os.path.join(a.work, "demo.profile")
    report(a, "fit", "--gpu", "H200", "-o", prof, a.demo)
    lines = [l for l in open(prof) if l.startswith("# measured allreduce ring simple")]
    check(lines, "no measured AllReduce point")
    f = dict(kv.split("=") for kv in lines[0].split() if "=" in kv)
    want = int(f["bytes"]) * 2 * 7 / 8 / 350e3 + 8
    check(f.get("time") == "after_last_start", f"point time {f.get('time')}")
    check(abs(float(f["median_us"]) - want) < 0.1 * want,
          f"median {f['median_us']} us, the modelled transfer is {want:.0f} us")
    check(any(l.startswith("point allreduce ring simple") for l in open(prof)),
          "no point line: the transfer's spread gives its noise")
    print(f"AllReduce point {float(f['median_us']):.1f} us after the last start (modelled {want:.1f})")


def json_nulls(a):
    """null where unknown, never 0 or '?': Kineto kernels name no algorithm, protocol or channel
    count; the median GPU skew is the skew's median (not a count)."""
    k = report_json(a, a.kineto)
    for c in k["collectives"]:
        for key in ("algorithm", "protocol", "channels_min", "channels_max"):
            check(c[key] is None, f"Kineto collective {key} = {c[key]!r}, not null")
    for s in k["inputs"]:
        check(s["comm_hash"] is None, f"a Kineto input with comm_hash {s['comm_hash']}")
    d = report_json(a, a.demo)
    med = d["alignment"]["gpu_skew_median_ns"]
    top = max(s["max_ns"] for s in d["skew"])
    check(med is not None and 1000 < med <= top,
          f"gpu_skew_median_ns {med}: not within the skews (max {top} ns)")
    print(f"Kineto algorithm/protocol/channels null; median GPU skew {med} ns")


def closed_loop(a):
    """The embedded default's loop: the demo's traces fitted into a profile that topo-tune reads
    back, saying what was measured and where a switch is (or why none is) measured."""
    prof = os.path.join(a.work, "loop.profile")
    report(a, "fit", "--gpu", "H200", "-o", prof, a.demo)
    out = run([a.tune, "--profile", prof, "--gpu", "H200", "--nranks", "8", "--coll", "allreduce",
               "--min", "1K", "--max", "1G"])
    check(f"{prof}:2" in out, "topo-tune did not read the fitted profile")
    check(re.search(r"measured ring/simple at 1 size \(2[0-9.]+M\)", out),
          f"the measured AllReduce point not named: {out[-400:]}")
    check("a switch needs two settings measured at one size" in out, "why no switch: not said")
    print("fit -> topo-tune --profile: the measured point named, no switch and why")


def next_steps(a):
    """Next steps come from measured figures and name the command that verifies each."""
    j = report_json(a, a.demo, "--gpu", "H200")
    steps = j["next_steps"]
    kinds = {s["kind"]: s for s in steps}
    check("straggler" in kinds, f"no straggler step: {[s['kind'] for s in steps]}")
    s = kinds["straggler"]
    rank = [r for r in j["ranks"] if r["rank"] == s["rank"]][0]
    check(s["rank"] == 1 and s["value"] == rank["delay_caused_ns"],
          f"straggler step {s['rank']} {s['value']} vs rank 1 delay {rank['delay_caused_ns']}")
    check("busbw_waiting" in kinds, "busbw far from the line through waiting not said")
    check(all("topo-report diff" in s["verify"] or "topo-tune" in s["verify"] for s in steps),
          "a step without the command that verifies it")
    text = report(a, "--gpu", "H200", a.demo)
    check("Next steps" in text and "verify: topo-report diff" in text, "text: no next steps")
    plain = report_json(a, a.demo)
    check("busbw" not in {s["kind"] for s in plain["next_steps"]} and
          "busbw_waiting" not in {s["kind"] for s in plain["next_steps"]},
          "a busbw step without a reference line (from an unknown)")
    print(f"next steps: {[s['kind'] for s in steps]}")


CHECKS = {f.__name__: f for f in (text_fits, notes_fold, alignment, csv_tables, kernel_names,
                                  dump, kineto_process, kineto_skew, busbw_after_last_start,
                                  fit_times, closed_loop, json_nulls, next_steps)}

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("check", choices=sorted(CHECKS))
    p.add_argument("--report", required=True)
    p.add_argument("--demo", required=True)
    p.add_argument("--kineto", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--tune", default="topo-tune")
    args = p.parse_args()
    os.makedirs(args.work, exist_ok=True)
    CHECKS[args.check](args)

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compute beside communication with a known overlap, on 2 GPUs (one process each), and the
comparison of topo-report's figures with that truth.

  cupti_overlap.py run [--out DIR] ...      the GPU job: writes DIR/truth-rank<r>.json
  cupti_overlap.py compare DIR REPORT_BIN   topo-report per rank over that rank's window of
                                            DIR/traces; PASS when every rank's overlap is within
                                            1 % of the truth's span (exit 0), else FAIL (exit 1)

The GPU program of one iteration (A, B: two streams; ProcessGroupNCCL runs the all_reduce on its
own internal stream, which waits for B before and B waits for after):

  A: p0 | spin_pre | c0 | matmul 0..START_AT | gate | wait(m0) | g2 | spin_post | matmuls.. | c1
  B:                                   wait(gate) | m0 | all_reduce (1 GiB) | m1

What the truth measures, and why it is comparable with the report (union of kernel intervals,
docs/metrics.md). A CUDA event is stamped when its stream reaches it, so it marks the end of the
work before it, never the start of a kernel launched later:
- spin_pre (torch.cuda._sleep, a compute kernel the report also sees) holds A while the host
  enqueues the iteration, so the matmuls run back to back from c0 on; without it, c0 was stamped
  120-270 us before the first matmul started (host launch latency counted as compute).
  p0 is stamped one kernel launch (a few us) before spin_pre starts.
- The matmuls after the gate wait for m0 and start behind spin_post (1 CTA, ~0.2 ms), so the
  NCCL kernel (24 CTAs) is resident before they take the SMs. Without this, in 2 of 10 iterations
  of the first H200 run the next matmul won the race, the NCCL kernel waited 1.07 ms for SMs after
  m0, and the truth counted that wait as overlap (18.01 ms truth against 16.59 ms of kernels).
- compute = [p0, gate] u [g2, c1] per iteration (no compute runs between gate and g2 except
  while A waits for m0: that time is excluded); comm = [m0, m1]; overlap = their intersection.
  Iterations are separated by synchronisation, so per-iteration unions add up.
- Remaining bias, truth minus report, a few tens of us per iteration: m0 precedes the NCCL kernel
  by its launch/prologue (~5 us, measured), and the 4-8 us gaps between back-to-back matmuls
  inside [g2, c1] count as compute in the truth but not in the report. The pass limit (1 % of
  the span, ~0.8 ms for 5 iterations) is more than ten times that.
The window: time.time_ns() (CLOCK_REALTIME, the report's aligned clock) right after the origin
event completed, and after the last iteration completed: nothing else runs on the GPU in between
(no barrier inside the loop), so the report over that window sees exactly these iterations.
Run with NCCL_PROFILER_PLUGIN=libtopo-profiler.so and TOPO_PROFILER_CUPTI=1 (set by the caller).
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def union_len(ivs):
    """Length of the union of [a, b) intervals."""
    total, end = 0.0, None
    for a, b in sorted(ivs):
        if b <= a:
            continue
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def intersect(xs, ys):
    """Intersections of two lists of intervals (each list may overlap itself)."""
    out = []
    for a, b in xs:
        for c, d in ys:
            lo, hi = max(a, c), min(b, d)
            if hi > lo:
                out.append((lo, hi))
    return out


def truth_from_iters(iters):
    """iters: dicts of event times (ns from the origin event): p0, c0, gate, g2, c1, m0, m1.
    Returns the truth under the report's definitions (unions of intervals)."""
    comp, comm, ov = [], [], 0.0
    for it in iters:
        ci = [(it["p0"], it["gate"]), (it["g2"], it["c1"])]
        mi = [(it["m0"], it["m1"])]
        comp += ci
        comm += mi
        ov += union_len(intersect(mi, ci))
    first = min(min(it["p0"], it["m0"]) for it in iters)
    last = max(max(it["c1"], it["m1"]) for it in iters)
    return {"span_ns": last - first, "overlap_ns": ov, "comm_ns": union_len(comm),
            "compute_ns": union_len(comp)}


def worker(rank, args):
    import time

    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nranks, device_id=dev)
    n = args.size
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = torch.empty(n, n, device=dev, dtype=torch.bfloat16)
    buf = torch.ones(args.comm_mb * (1 << 20) // 4, device=dev)
    sa, sb = torch.cuda.Stream(), torch.cuda.Stream()
    for _ in range(2):  # warm-up on the streams used below (cuBLAS workspace per stream, NCCL)
        with torch.cuda.stream(sa):
            torch.cuda._sleep(1000)
            torch.matmul(a, b, out=c)
        with torch.cuda.stream(sb):
            dist.all_reduce(buf)
        torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()

    def ev():
        return torch.cuda.Event(enable_timing=True)

    origin = ev()
    origin.record(torch.cuda.current_stream())
    torch.cuda.synchronize()
    window_from = time.time_ns()  # after the origin completed: the GPU is idle
    recs = []
    for _ in range(args.iters):
        e = {k: ev() for k in ("p0", "c0", "gate", "g2", "c1", "m0", "m1")}
        with torch.cuda.stream(sa):
            e["p0"].record(sa)
            torch.cuda._sleep(args.spin_pre)
            e["c0"].record(sa)
            for i in range(args.start_at + 1):
                torch.matmul(a, b, out=c)
            e["gate"].record(sa)
        with torch.cuda.stream(sb):
            sb.wait_event(e["gate"])
            e["m0"].record(sb)
            dist.all_reduce(buf)  # ProcessGroupNCCL's stream waits for sb, sb waits for it after
            e["m1"].record(sb)
        with torch.cuda.stream(sa):
            sa.wait_event(e["m0"])  # enqueued after m0's record: a real wait
            e["g2"].record(sa)
            torch.cuda._sleep(args.spin_post)
            for i in range(args.start_at + 1, args.matmuls):
                torch.matmul(a, b, out=c)
            e["c1"].record(sa)
        torch.cuda.synchronize()
        recs.append(e)
    window_to = time.time_ns()  # after the last iteration completed
    iters = [{k: origin.elapsed_time(v) * 1e6 for k, v in e.items()} for e in recs]
    truth = {"rank": rank, "iters": len(iters), "intervals_ns": iters,
             "window_ns": [window_from, window_to],
             "definition": "compute = [p0,gate] u [g2,c1], comm = [m0,m1], overlap = comm n compute "
                           "(CUDA events, ns from the origin event; see cupti_overlap.py)"}
    truth.update(truth_from_iters(iters))
    with open(os.path.join(args.out, f"truth-rank{rank}.json"), "w") as fh:
        json.dump(truth, fh)
    dist.barrier()
    dist.destroy_process_group()


def run(args):
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < args.nranks:
        print(f"need {args.nranks} GPUs", file=sys.stderr)
        return 2
    if not 0 <= args.start_at < args.matmuls - 1:
        print("--start-at must leave at least one matmul after the gate", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.nranks, join=True)
    return 0


def compare(d, report_bin, limit=0.01):
    """topo-report over each rank's window (all traces: the report joins ranks), that rank's row
    against its truth. Truth files without a window (older runs) are compared with the whole
    trace, which includes warm-up and barriers: expect a FAIL there."""
    truth = {}
    for f in sorted(glob.glob(os.path.join(d, "truth-rank*.json"))):
        t = json.load(open(f))
        truth[t["rank"]] = t
    print(f"truth ranks {sorted(truth)}")
    ok = bool(truth)
    for r, t in sorted(truth.items()):
        cmd = [report_bin, "--json", "-q"]
        win = t.get("window_ns")
        if win:
            cmd += ["--window", f"{int(win[0])},{int(win[1])}"]
        cmd.append(os.path.join(d, "traces"))
        p = subprocess.run(cmd, capture_output=True, text=True)
        with open(os.path.join(d, f"report-rank{r}.json"), "w") as fh:
            fh.write(p.stdout)
        try:
            rep = json.loads(p.stdout)
        except ValueError as e:
            print(f"rank {r}: FAIL (topo-report exit {p.returncode}, no JSON: {e}; {p.stderr.strip()})")
            ok = False
            continue
        rows = {x.get("rank"): x for x in rep.get("ranks", [])}
        rr = rows.get(r)
        if rr is None:
            print(f"rank {r}: FAIL (not in the report; report ranks {sorted(rows)})")
            ok = False
            continue
        diff = rr.get("overlap_ns", 0) - t["overlap_ns"]
        lim = limit * t["span_ns"]
        good = abs(diff) <= lim
        ok &= good
        where = f"window {int(win[0])},{int(win[1])}" if win else "whole trace (no window in the truth)"
        print(f"rank {r} ({where}): overlap truth {t['overlap_ns']/1e6:.3f} ms, report "
              f"{rr.get('overlap_ns', 0)/1e6:.3f} ms, diff {diff/1e6:+.3f} ms, 1% of span {lim/1e6:.3f} ms"
              f" -> {'PASS' if good else 'FAIL'}; comm truth {t['comm_ns']/1e6:.3f} ms report "
              f"{rr.get('comm_ns', 0)/1e6:.3f} ms; compute truth {t['compute_ns']/1e6:.3f} ms report "
              f"{rr.get('compute_ns', 0)/1e6:.3f} ms; span truth {t['span_ns']/1e6:.3f} ms report "
              f"{rr.get('span_ns', 0)/1e6:.3f} ms")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd")
    r = sub.add_parser("run")
    r.add_argument("--nranks", type=int, default=2)
    r.add_argument("--size", type=int, default=8192)
    r.add_argument("--matmuls", type=int, default=10)
    r.add_argument("--start-at", type=int, default=7, help="the gate follows this matmul (0-based)")
    r.add_argument("--comm-mb", type=int, default=1024)
    r.add_argument("--iters", type=int, default=5)
    r.add_argument("--spin-pre", type=int, default=2000000, help="GPU cycles (~1 ms on H200)")
    r.add_argument("--spin-post", type=int, default=400000, help="GPU cycles (~0.2 ms on H200)")
    r.add_argument("--out", default=".")
    r.add_argument("--port", type=int, default=29700 + os.getpid() % 200)
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("report_bin")
    args = p.parse_args()
    if args.cmd == "compare":
        return compare(args.dir, args.report_bin)
    if args.cmd == "run":
        return run(args)
    p.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Compute beside communication with a known overlap, on 2 GPUs (one process each).

Per iteration and rank: stream A runs MATMULS bf16 matmuls back to back; stream B waits for an
event recorded on A after matmul START_AT, then runs one all_reduce of COMM_MB MB. CUDA events
give the truth: the compute interval [first matmul start, last matmul end] and the communication
interval [all_reduce start, end], both relative to one origin event per rank; overlap = their
intersection. Between iterations everything synchronises, so nothing else overlaps. Setup work
(tensor fills, NCCL's first call) happens before and is separated by synchronisation.
Writes truth-rank<r>.json: {"rank", "span_ns", "overlap_ns", "comm_ns", "compute_ns", "iters"}.
Run with NCCL_PROFILER_PLUGIN=libtopo-profiler.so and TOPO_PROFILER_CUPTI=1 (set by the caller).
"""
import argparse
import json
import os
import sys


def worker(rank, args):
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
    for _ in range(2):  # warm-up (cuBLAS heuristics, NCCL connections), not overlapped
        torch.matmul(a, b, out=c)
        dist.all_reduce(buf)
    torch.cuda.synchronize()
    dist.barrier()
    torch.cuda.synchronize()

    origin = torch.cuda.Event(enable_timing=True)
    origin.record(torch.cuda.current_stream())
    torch.cuda.synchronize()
    iters = []
    for _ in range(args.iters):
        c0, c1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        m0, m1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        gate = torch.cuda.Event()
        with torch.cuda.stream(sa):
            c0.record(sa)
            for i in range(args.matmuls):
                torch.matmul(a, b, out=c)
                if i == args.start_at:
                    gate.record(sa)
            c1.record(sa)
        with torch.cuda.stream(sb):
            sb.wait_event(gate)
            m0.record(sb)
            dist.all_reduce(buf)  # ProcessGroupNCCL's stream waits for sb, sb waits for it after
            m1.record(sb)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        iters.append([origin.elapsed_time(e) * 1e6 for e in (c0, c1, m0, m1)])
    truth = {"rank": rank, "iters": len(iters)}
    ov = comm = comp = 0.0
    for c0, c1, m0, m1 in iters:
        comp += c1 - c0
        comm += m1 - m0
        ov += max(0.0, min(c1, m1) - max(c0, m0))
    first = min(min(x[0], x[2]) for x in iters)
    last = max(max(x[1], x[3]) for x in iters)
    truth.update({"span_ns": last - first, "overlap_ns": ov, "comm_ns": comm, "compute_ns": comp,
                  "intervals_ns": iters})
    with open(os.path.join(args.out, f"truth-rank{rank}.json"), "w") as fh:
        json.dump(truth, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--size", type=int, default=8192)
    p.add_argument("--matmuls", type=int, default=10)
    p.add_argument("--start-at", type=int, default=7)
    p.add_argument("--comm-mb", type=int, default=1024)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--out", default=".")
    p.add_argument("--port", type=int, default=29700 + os.getpid() % 200)
    args = p.parse_args()
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < args.nranks:
        print(f"need {args.nranks} GPUs", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.nranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""PyTorch's NCCL in N local processes (torch.multiprocessing, one GPU each), for the plugin checks.

--mode load    all_reduce / all_gather / reduce_scatter at a few sizes: both plugins must load
               (the caller greps NCCL's INFO log for the negotiated ABI versions).
--mode timing  each collective timed with torch.cuda.Event around it, on a stream held back by a
               GPU sleep so that every call is queued before the GPU reaches the start event (the
               event pair then brackets GPU work, not the host's launch). Sizes >= 1 MB. Writes one
               JSON per rank: [{"func", "bytes" (count x element size, as the profiler records it),
               "nccl_bytes" (what the tuner sees), "event_us"}] in call order.

Environment (set by the caller): NCCL_TUNER_PLUGIN, NCCL_PROFILER_PLUGIN, TOPO_*, NCCL_DEBUG...
"""
import argparse
import json
import os
import sys
import time


def worker(rank, args):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nranks, device_id=dev)
    n = args.nranks
    results = []

    def run(func, nbytes, timed):
        elems = max(nbytes // 4, n)
        elems -= elems % n
        per = elems // n
        if func == "AllReduce":
            t = torch.ones(elems, device=dev)
            call = lambda: dist.all_reduce(t)
            rec, tuner = elems * 4, elems * 4
        elif func == "AllGather":
            src = torch.ones(per, device=dev)
            dst = torch.empty(elems, device=dev)
            call = lambda: dist.all_gather_into_tensor(dst, src)
            rec, tuner = per * 4, elems * 4
        else:
            src = torch.ones(elems, device=dev)
            dst = torch.empty(per, device=dev)
            call = lambda: dist.reduce_scatter_tensor(dst, src)
            rec, tuner = per * 4, elems * 4
        if not timed:
            call()
            return
        s = torch.cuda.current_stream()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        dist.barrier()
        torch.cuda.synchronize()
        torch.cuda._sleep(2_000_000)  # ~1 ms at 2 GHz: the host queues everything meanwhile
        start.record(s)
        call()
        end.record(s)
        torch.cuda.synchronize()
        results.append({"func": func, "bytes": rec, "nccl_bytes": tuner,
                        "event_us": start.elapsed_time(end) * 1e3})

    funcs = ["AllReduce", "AllGather", "ReduceScatter"]
    if args.mode == "load":
        for nb in (8 * n, 1 << 16, 1 << 20, 16 << 20):
            for f in funcs:
                run(f, nb, False)
        torch.cuda.synchronize()
    else:
        for nb in (1 << 20, 4 << 20, 16 << 20, 64 << 20, 256 << 20):
            for f in funcs:
                run(f, nb, False)  # warm-up: connections, buffers
                for _ in range(args.repeat):
                    run(f, nb, True)
        with open(os.path.join(args.out, f"calls-rank{rank}.json"), "w") as fh:
            json.dump(results, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=["load", "timing"], default="load")
    p.add_argument("--nranks", type=int, default=2)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=".")
    p.add_argument("--port", type=int, default=29500 + os.getpid() % 1000)
    args = p.parse_args()
    import torch
    import torch.multiprocessing as mp

    if torch.cuda.device_count() < args.nranks:
        print(f"need {args.nranks} GPUs, {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    mp.spawn(worker, args=(args,), nprocs=args.nranks, join=True)
    print(f"torch_collectives {args.mode}: {args.nranks} ranks ok in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A PyTorch DDP training loop of a few-hundred-million-parameter bf16 model on every local GPU,
one process per GPU, for topo-report: run it with NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN set
(ddp_job.sh does) and it leaves per-rank topo traces in TOPO_PROFILER_DIR; --kineto DIR also
records the same steps with torch.profiler and writes one Chrome/Kineto trace per rank there.

Model: LAYERS blocks of Linear(d, 4d) - GELU - Linear(4d, d) with a residual, d = HIDDEN
(default 12 x 2048: ~403 M parameters), bf16 weights, SGD; DDP's default 25 MB buckets overlap
the gradient all-reduces with the backward pass. Prints step times and parameter count.

--share-gpu puts every rank on GPU 0 (NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1: real calls
and event streams, not real speed). --delay-rank R --delay-ms D sleeps D ms on the host before
every step of rank R (a straggler). --kineto-from K starts torch.profiler at measured step K (0:
all measured steps), so steps before K run with torch.profiler off (topo's own CUPTI windows can
record them). Every rank writes DIR/steps-rank<r>.json (with --out): CLOCK_REALTIME ns at each
measured step boundary, after a device synchronise, for topo-report --window.
"""
import argparse
import json
import os
import sys
import time


def worker(rank, args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    gpu = 0 if args.share_gpu else rank
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nranks, device_id=dev)
    torch.manual_seed(1234)

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.up = nn.Linear(d, 4 * d)
            self.down = nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(x)))

    model = nn.Sequential(*[Block(args.hidden) for _ in range(args.layers)]).to(dev, torch.bfloat16)
    nparams = sum(p.numel() for p in model.parameters())
    ddp = DDP(model, device_ids=[gpu])
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.hidden, device=dev, dtype=torch.bfloat16)

    def step():
        if rank == args.delay_rank and args.delay_ms > 0:
            time.sleep(args.delay_ms / 1e3)
        opt.zero_grad(set_to_none=True)
        out = ddp(x)
        loss = out.float().pow(2).mean()
        loss.backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    times = []
    bounds = [time.time_ns()]
    prof = None
    kineto_from = None
    for i in range(args.steps):
        if args.kineto and prof is None and i >= args.kineto_from:
            from torch.profiler import ProfilerActivity, profile

            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False)
            prof.__enter__()
            torch.cuda.synchronize()
            kineto_from = i
        t0 = time.perf_counter()
        if prof is not None:
            from torch.profiler import record_function

            with record_function(f"ProfilerStep#{i}"):
                step()
        else:
            step()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
        bounds.append(time.time_ns())
    if args.out:
        with open(os.path.join(args.out, f"steps-rank{rank}.json"), "w") as fh:
            json.dump({"rank": rank, "bounds_ns": bounds, "kineto_from": kineto_from,
                       "delay_rank": args.delay_rank, "delay_ms": args.delay_ms}, fh)
    if prof is not None:
        prof.__exit__(None, None, None)
        os.makedirs(args.kineto, exist_ok=True)
        prof.export_chrome_trace(os.path.join(args.kineto, f"kineto-rank{rank}.pt.trace.json"))
    if rank == 0:
        info = {"ranks": args.nranks, "params": nparams, "hidden": args.hidden, "layers": args.layers,
                "batch": args.batch, "seq": args.seq, "dtype": "bfloat16", "steps": args.steps,
                "step_ms": times, "median_step_ms": sorted(times)[len(times) // 2]}
        print(json.dumps(info))
        if args.out:
            with open(os.path.join(args.out, "ddp_job.json"), "w") as fh:
                json.dump(info, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nranks", type=int, default=0, help="default: every visible GPU")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--kineto", default="", help="directory for torch.profiler traces (one per rank)")
    p.add_argument("--kineto-from", type=int, default=0,
                   help="measured step at which torch.profiler starts (with --kineto)")
    p.add_argument("--share-gpu", action="store_true", help="every rank on GPU 0 (NCCL >= 2.30)")
    p.add_argument("--delay-rank", type=int, default=-1)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--out", default="")
    p.add_argument("--port", type=int, default=29900 + os.getpid() % 90)
    args = p.parse_args()
    import torch
    import torch.multiprocessing as mp

    if args.nranks <= 0:
        args.nranks = 2 if args.share_gpu else torch.cuda.device_count()
    if args.nranks < 1 or torch.cuda.device_count() < (1 if args.share_gpu else args.nranks):
        print(f"need {args.nranks} GPUs, {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.nranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

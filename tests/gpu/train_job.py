#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Training jobs of the common kinds of parallelism, for topo's truth checks (truth_jobs.sh).
Run it with NCCL_TUNER_PLUGIN / NCCL_PROFILER_PLUGIN set and it leaves per-rank topo traces in
TOPO_PROFILER_DIR; --kineto DIR records the last --kineto-steps measured steps with
torch.profiler and writes one Chrome/Kineto trace per rank there.

--mode picks the job (every one a bf16 model, SGD):
  ddp   DDP of LAYERS blocks Linear(d, 4d)-GELU-Linear(4d, d) with a residual (default 12 x 2048,
        ~403 M parameters); DDP's 25 MB buckets overlap the gradient all-reduces with backward.
        --batch sets the step length (8: ~0.14 s, 32: ~0.5 s with two ranks sharing one H200).
  fsdp  FSDP2 (torch.distributed.fsdp.fully_shard) of LAYERS transformer blocks
        (nn.TransformerEncoderLayer, d = HIDDEN, 16 heads), each block its own unit: per-layer
        all-gathers in forward and backward, reduce-scatters in backward (prefetching).
  tpdp  tensor parallel x data parallel on a 2-D grid (--tp, default 2; ranks / tp data-parallel
        groups): Megatron-style MLP blocks (column- then row-parallel, an all-reduce over the TP
        group in forward and in backward), then the gradients all-reduced over the DP group in
        25 MB buckets: two communicators per rank, interleaved.
  pp    a pipeline of one stage per rank (LAYERS split evenly), GPipe schedule with --micro
        micro-batches: activations and gradients cross stages by send/recv (NCCL p2p).

--seconds S: measured steps run for about S seconds (rank 0 times the first steps after warm-up
and broadcasts the step count), else --steps N. --share-gpu puts every rank on GPU 0 (NCCL >= 2.30
with NCCL_MULTI_RANK_GPU_ENABLE=1: real calls and event streams, not real speed). --delay-rank R
--delay-ms D sleeps D ms on the host before every step of rank R (a straggler). Every rank writes
OUT/steps-rank<r>.json: CLOCK_REALTIME ns at each measured step boundary (after a device
synchronise) and the first profiled step; rank 0 writes OUT/job.json (mode, sizes, step times).
"""
import argparse
import json
import os
import sys
import time


def build_ddp(args, dev, rank, world):
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = nn.Sequential(*[MlpBlock(args.hidden) for _ in range(args.layers)]).to(dev, BF16())
    ddp = DDP(model, device_ids=[dev.index])
    x = torch_randn(args.batch, args.seq, args.hidden, dev)

    def step(opt):
        opt.zero_grad(set_to_none=True)
        ddp(x).float().pow(2).mean().backward()
        opt.step()

    return ddp.parameters(), step, model


def build_fsdp(args, dev, rank, world):
    import torch.nn as nn
    from torch.distributed.fsdp import fully_shard

    blocks = [nn.TransformerEncoderLayer(args.hidden, 16, 4 * args.hidden, dropout=0.0, batch_first=True)
              for _ in range(args.layers)]
    model = nn.Sequential(*blocks).to(dev, BF16())
    for b in model:
        fully_shard(b)
    fully_shard(model)
    x = torch_randn(args.batch, args.seq, args.hidden, dev)

    def step(opt):
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        opt.step()

    return model.parameters(), step, model


def build_tpdp(args, dev, rank, world):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    tp = args.tp
    if world % tp:
        raise SystemExit(f"--tp {tp} does not divide {world} ranks")
    tp_groups = [dist.new_group(list(range(g * tp, (g + 1) * tp))) for g in range(world // tp)]
    dp_groups = [dist.new_group(list(range(i, world, tp))) for i in range(tp)]
    tpg, dpg = tp_groups[rank // tp], dp_groups[rank % tp]

    class Copy(torch.autograd.Function):  # identity forward, all-reduce of the gradient backward
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            g = g.clone(memory_format=torch.contiguous_format)
            dist.all_reduce(g, group=tpg)
            return g

    class Reduce(torch.autograd.Function):  # all-reduce forward, identity backward
        @staticmethod
        def forward(ctx, x):
            x = x.clone(memory_format=torch.contiguous_format)
            dist.all_reduce(x, group=tpg)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    class TpBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.up = nn.Linear(d, 4 * d // tp)
            self.down = nn.Linear(4 * d // tp, d, bias=False)

        def forward(self, x):
            h = torch.nn.functional.gelu(self.up(Copy.apply(x)))
            return x + Reduce.apply(self.down(h))

    model = nn.Sequential(*[TpBlock(args.hidden) for _ in range(args.layers)]).to(dev, BF16())
    params = list(model.parameters())
    x = torch_randn(args.batch, args.seq, args.hidden, dev)
    bucket = 25 * 1024 * 1024

    def step(opt):
        opt.zero_grad(set_to_none=True)
        model(x).float().pow(2).mean().backward()
        pending, size = [], 0
        for p in reversed(params):  # buckets in backward order, as DDP fills them
            pending.append(p.grad)
            size += p.grad.numel() * p.grad.element_size()
            if size >= bucket or p is params[0]:
                flat = torch.cat([g.reshape(-1) for g in pending])
                dist.all_reduce(flat, group=dpg)
                off = 0
                for g in pending:
                    g.copy_(flat[off:off + g.numel()].view_as(g))
                    off += g.numel()
                pending, size = [], 0
        opt.step()

    return params, step, model


def build_pp(args, dev, rank, world):
    import torch
    import torch.distributed as dist
    import torch.nn as nn

    per = max(1, args.layers // world)
    model = nn.Sequential(*[MlpBlock(args.hidden) for _ in range(per)]).to(dev, BF16())
    micro = args.micro
    mb = max(1, args.batch // micro)
    shape = (mb, args.seq, args.hidden)
    x = torch_randn(*shape, dev)
    first, last = rank == 0, rank == world - 1

    def step(opt):
        opt.zero_grad(set_to_none=True)
        ins, outs = [], []
        for _ in range(micro):  # GPipe: every micro-batch forward, then every one backward
            if first:
                inp = x
            else:
                inp = torch.empty(shape, device=dev, dtype=BF16())
                dist.recv(inp, src=rank - 1)
                inp.requires_grad_(True)
            out = model(inp)
            if not last:
                dist.send(out.detach().contiguous(), dst=rank + 1)
            ins.append(inp)
            outs.append(out)
        for i in reversed(range(micro)):
            if last:
                outs[i].float().pow(2).mean().backward()
            else:
                g = torch.empty(shape, device=dev, dtype=BF16())
                dist.recv(g, src=rank + 1)
                outs[i].backward(g)
            if not first:
                dist.send(ins[i].grad.contiguous(), dst=rank - 1)
        opt.step()

    return model.parameters(), step, model


def BF16():
    import torch

    return torch.bfloat16


def torch_randn(*dims_then_device):
    import torch

    *dims, dev = dims_then_device
    return torch.randn(*dims, device=dev, dtype=torch.bfloat16)


def MlpBlock(d):
    import torch
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.Linear(d, 4 * d)
            self.down = nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(x)))

    return Block()


BUILDERS = {"ddp": build_ddp, "fsdp": build_fsdp, "tpdp": build_tpdp, "pp": build_pp}


def worker(rank, args):
    import torch
    import torch.distributed as dist

    gpu = 0 if args.share_gpu else rank
    torch.cuda.set_device(gpu)
    dev = torch.device("cuda", gpu)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nranks, device_id=dev)
    torch.manual_seed(1234 + rank)
    params, step_fn, model = BUILDERS[args.mode](args, dev, rank, args.nranks)
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.SGD(params, lr=1e-4)

    def step():
        if rank == args.delay_rank and args.delay_ms > 0:
            time.sleep(args.delay_ms / 1e3)
        step_fn(opt)

    for _ in range(args.warmup):
        step()
    torch.cuda.synchronize()
    nsteps = args.steps
    if args.seconds > 0:  # rank 0 times two steps and tells every rank how many to run
        t0 = time.perf_counter()
        for _ in range(2):
            step()
        torch.cuda.synchronize()
        per = (time.perf_counter() - t0) / 2
        n = torch.tensor([max(args.kineto_steps + 4, int(args.seconds / per))], device=dev)
        dist.broadcast(n, src=0)
        nsteps = int(n.item())
    kfrom = None
    if args.kineto:  # the last steps, or the middle ones (the steps after show the job unprofiled)
        kfrom = nsteps - args.kineto_steps if args.kineto_where == "last" else (nsteps - args.kineto_steps) // 2
    kuntil = kfrom + args.kineto_steps if kfrom is not None else None
    done_prof = None
    times, bounds = [], [time.time_ns()]
    prof = None
    for i in range(nsteps):
        if prof is not None and i >= kuntil:  # the profiled steps are over: the job goes on without
            torch.cuda.synchronize()
            prof.__exit__(None, None, None)
            done_prof, prof = prof, None
        if kfrom is not None and prof is None and done_prof is None and i >= kfrom:
            from torch.profiler import ProfilerActivity, profile

            prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False)
            prof.__enter__()
            torch.cuda.synchronize()
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
            json.dump({"rank": rank, "bounds_ns": bounds, "kineto_from": kfrom, "kineto_until": kuntil, "mode": args.mode,
                       "delay_rank": args.delay_rank, "delay_ms": args.delay_ms}, fh)
    if prof is not None:
        prof.__exit__(None, None, None)
        done_prof = prof
    if done_prof is not None:
        prof = done_prof
        os.makedirs(args.kineto, exist_ok=True)
        prof.export_chrome_trace(os.path.join(args.kineto, f"kineto-rank{rank}.pt.trace.json"))
    if rank == 0:
        s = sorted(times)
        info = {"mode": args.mode, "ranks": args.nranks, "params": nparams, "hidden": args.hidden,
                "layers": args.layers, "batch": args.batch, "seq": args.seq, "dtype": "bfloat16",
                "steps": nsteps, "total_steps": args.warmup + (2 if args.seconds > 0 else 0) + nsteps,
                "kineto_from": kfrom, "kineto_until": kuntil, "step_ms": times, "median_step_ms": s[len(s) // 2],
                "seconds": sum(times) / 1e3}
        print(json.dumps({k: v for k, v in info.items() if k != "step_ms"}))
        if args.out:
            with open(os.path.join(args.out, "job.json"), "w") as fh:
                json.dump(info, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode", choices=sorted(BUILDERS), default="ddp")
    p.add_argument("--nranks", type=int, default=0, help="default: every visible GPU (2 with --share-gpu)")
    p.add_argument("--hidden", type=int, default=0, help="default: 2048 (fsdp: 1024)")
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--tp", type=int, default=2)
    p.add_argument("--micro", type=int, default=4)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--seconds", type=float, default=0.0)
    p.add_argument("--kineto", default="", help="directory for torch.profiler traces (one per rank)")
    p.add_argument("--kineto-steps", type=int, default=8, help="profile the last N measured steps")
    p.add_argument("--kineto-where", choices=["last", "middle"], default="last",
                   help="profile the last N steps, or N in the middle (the job goes on unprofiled)")
    p.add_argument("--share-gpu", action="store_true", help="every rank on GPU 0 (NCCL >= 2.30)")
    p.add_argument("--delay-rank", type=int, default=-1)
    p.add_argument("--delay-ms", type=float, default=0.0)
    p.add_argument("--out", default="")
    p.add_argument("--port", type=int, default=29900 + os.getpid() % 90)
    args = p.parse_args()
    import torch
    import torch.multiprocessing as mp

    if args.hidden <= 0:
        args.hidden = 1024 if args.mode == "fsdp" else 2048
    if args.nranks <= 0:
        args.nranks = (4 if args.mode == "tpdp" else 2) if args.share_gpu else torch.cuda.device_count()
    if args.nranks < 2 or torch.cuda.device_count() < (1 if args.share_gpu else args.nranks):
        print(f"need {args.nranks} GPUs (>= 2 ranks), {torch.cuda.device_count()} visible", file=sys.stderr)
        return 2
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    mp.spawn(worker, args=(args,), nprocs=args.nranks, join=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

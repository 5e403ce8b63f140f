#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What topo's CUPTI compute timeline costs a training step, on one GPU.

One process runs the compute of ddp_job.py's model (LAYERS x [Linear(d,4d) - GELU - Linear(4d,d)],
bf16, SGD; forward + backward + step) for WARMUP + STEPS steps, each timed with CUDA events. With
--plugin PATH it first loads libtopo-profiler.so and calls its ncclProfiler_v5.init exactly as NCCL
does at communicator init (one rank), so the plugin's CUPTI mode (TOPO_PROFILER_CUPTI from the
environment: off / on / window) runs as in a real job; finalize at the end. NCCL itself is not
needed: the CUPTI cost falls on every kernel of the process, whoever launches it.

Prints one JSON line: {"mode":..., "steps":N, "median_ms":..., "mean_ms":..., "step_ms":[...]}.
cupti_cost.sh alternates the modes in rounds (A/B/A/B) and adds an A/A noise figure.
"""
import argparse
import ctypes
import json
import os
import sys


class ProfilerV5(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p),
                ("init", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64,
                                          ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int,
                                          ctypes.c_int, ctypes.c_int, ctypes.c_void_p)),
                ("startEvent", ctypes.c_void_p), ("stopEvent", ctypes.c_void_p),
                ("recordEventState", ctypes.c_void_p),
                ("finalize", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p))]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--plugin", default="", help="libtopo-profiler.so (empty: no plugin)")
    p.add_argument("--mode", default="off", help="label for the output")
    p.add_argument("--hidden", type=int, default=2048)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=512)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    import torch
    import torch.nn as nn

    dev = torch.device("cuda", 0)
    torch.cuda.set_device(dev)
    ctx = ctypes.c_void_p()
    mask = ctypes.c_int(0)
    prof = None
    if args.plugin:
        lib = ctypes.CDLL(args.plugin)
        prof = ProfilerV5.in_dll(lib, "ncclProfiler_v5")
        prof.init(ctypes.byref(ctx), 0x70707070, ctypes.byref(mask), b"cupti-cost", 1, 1, 0, None)

    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.up = nn.Linear(d, 4 * d)
            self.down = nn.Linear(4 * d, d)

        def forward(self, x):
            return x + self.down(torch.nn.functional.gelu(self.up(x)))

    torch.manual_seed(1234)
    model = nn.Sequential(*[Block(args.hidden) for _ in range(args.layers)]).to(dev, torch.bfloat16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.hidden, device=dev, dtype=torch.bfloat16)
    times = []
    for i in range(args.warmup + args.steps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        opt.zero_grad(set_to_none=True)
        loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        b.record()
        b.synchronize()
        if i >= args.warmup:
            times.append(a.elapsed_time(b))
    if prof is not None:
        prof.finalize(ctx)
    s = sorted(times)
    print(json.dumps({"mode": args.mode, "steps": len(times), "median_ms": s[len(s) // 2],
                      "mean_ms": sum(times) / len(times), "step_ms": times}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

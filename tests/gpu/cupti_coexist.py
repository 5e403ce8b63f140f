#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch.profiler beside topo's CUPTI timeline, on one GPU: does torch keep every GPU event?

One process, one NCCL rank (PyTorch's NCCL loads the profiler plugin at communicator init, so
topo's CUPTI mode runs as in a real job), a fixed program per step (matmuls, an elementwise
kernel, a host-to-device copy, a memset and a 32 MiB all_reduce), identical every step. After
--before steps torch.profiler starts, either without a schedule (it enables CUPTI and records at
once: the case where another client arrives while topo records) or with PyTorch's schedule
(one warm-up step, then --active steps). The host never waits for the GPU inside the loop, so
work is queued when either profiler starts or steps aside, as in training. Prints one JSON line: the GPU events of Kineto's trace
(kernels, memcpy, memset) by kind, and the active steps; the caller compares runs with and
without topo (cupti_coexist.sh).
"""
import argparse
import json
import os

import torch
import torch.distributed as dist


def gpu_events(path):
    with open(path) as fh:
        trace = json.load(fh)
    kinds = {"kernel": 0, "gpu_memcpy": 0, "gpu_memset": 0}
    zero = 0
    for ev in trace.get("traceEvents", []):
        cat = ev.get("cat")
        if ev.get("ph") == "X" and cat in kinds:
            kinds[cat] += 1
            if not ev.get("dur"):
                zero += 1
    return kinds, zero


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", type=int, default=20, help="steps before torch.profiler starts")
    p.add_argument("--active", type=int, default=40)
    p.add_argument("--n", type=int, default=8192, help="matrix size (8192: ~1.5 ms per matmul on H200)")
    p.add_argument("--schedule", choices=["none", "warmup"], default="none")
    p.add_argument("--out", required=True)
    p.add_argument("--tag", default="")
    a = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(29600 + os.getpid() % 1000))
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
    x = torch.randn(a.n, a.n, device="cuda", dtype=torch.bfloat16) / a.n ** 0.5
    grad = torch.ones(8 << 20, device="cuda")  # 32 MiB
    host = torch.ones(1 << 16, pin_memory=True)
    dev = torch.empty(1 << 16, device="cuda")

    def step():
        y = x
        for _ in range(12):
            y = torch.matmul(y, x)
            y = y * 0.5
        dev.copy_(host, non_blocking=True)
        dev.zero_()
        dist.all_reduce(grad)

    for _ in range(a.before):
        step()
    torch.cuda.synchronize()
    from torch.profiler import ProfilerActivity, profile, schedule

    acts = [ProfilerActivity.CPU, ProfilerActivity.CUDA]
    if a.schedule == "none":
        prof = profile(activities=acts)
        prof.__enter__()
        for _ in range(a.active):
            step()
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
    else:
        prof = profile(activities=acts, schedule=schedule(wait=0, warmup=1, active=a.active, repeat=1))
        prof.__enter__()
        for _ in range(1 + a.active):
            step()
            prof.step()
        torch.cuda.synchronize()
        prof.__exit__(None, None, None)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"kineto-{a.tag or os.getpid()}.json")
    prof.export_chrome_trace(path)
    kinds, zero = gpu_events(path)
    print(json.dumps({"tag": a.tag, "schedule": a.schedule, "active": a.active, "events": sum(kinds.values()),
                      "by_kind": kinds, "zero_duration": zero}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write a large PyTorch-profiler (Kineto) trace by replicating a real one's steps.

Usage: kineto_gen.py OUT MEGABYTES [--src TRACE] [--gzip] [--rank R] [--world W]

Takes the ProfilerStep#N steps of a real Kineto trace (default: the 2 x H200 DDP job's rank-0
excerpt, tests/report/data/) and writes them again and again with shifted timestamps, fresh
correlation / external ids and step numbers, until the file holds about MEGABYTES MB. The layout
is Kineto's own (one key group per line, indented args), and each launch gets what a
record_shapes profile writes around it: the aten::* CPU operators that issued it, with their
shapes, and the ac2g flow events; so the bytes per GPU event are those of a real trace, not of
the excerpt (which kept GPU events and launches only). The last step is cut in the middle of its
CPU range, as a profiler stopped mid-step leaves it. Deterministic: the same arguments write the
same bytes. bench/kineto_bench.sh times topo-report on these files.
"""
import argparse
import gzip
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SRC = os.path.join(HERE, "..", "tests", "report", "data", "ddp-kineto-rank0-excerpt.pt.trace.json")

# The CPU operators a record_shapes profile shows above a launch (name, input dims, types).
OPS = [
    ("aten::linear", [[64, 4096], [16384, 4096], [16384]], ["c10::BFloat16"] * 3),
    ("aten::addmm", [[16384], [64, 4096], [4096, 16384], [], []], ["c10::BFloat16"] * 3 + ["Scalar", "Scalar"]),
    ("aten::gelu", [[64, 16384], []], ["c10::BFloat16", "Scalar"]),
    ("aten::empty_strided", [[], [], [], [], [], []], ["ScalarList", "ScalarList", "Scalar", "", "Scalar", ""]),
]


def fmt_us(v):
    return "%.3f" % v


def event_text(e):
    """One event as Kineto lays it out."""
    head = '  {\n    "ph": "%s", "cat": "%s", "name": %s, "pid": %s, "tid": %s,\n    "ts": %s' % (
        e["ph"], e["cat"], json.dumps(e["name"]), json.dumps(e["pid"]), json.dumps(e["tid"]),
        fmt_us(e["ts"]))
    if "dur" in e:
        head += ', "dur": %s' % fmt_us(e["dur"])
    for k in ("id", "bp"):
        if k in e:
            head += ', "%s": %s' % (k, json.dumps(e[k]))
    args = e.get("args")
    if args:
        lines = ",\n".join('      %s: %s' % (json.dumps(k), json.dumps(v)) for k, v in args.items())
        head += ',\n    "args": {\n' + lines + "\n    }"
    return head + "\n  }"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("megabytes", type=float)
    ap.add_argument("--src", default=DEFAULT_SRC)
    ap.add_argument("--gzip", action="store_true", help="write gzip (as use_gzip=True does)")
    ap.add_argument("--rank", type=int, default=None, help="distributedInfo.rank (default: the source's)")
    ap.add_argument("--world", type=int, default=None)
    ap.add_argument("--shift-us", type=float, default=0.0, help="add to every timestamp")
    a = ap.parse_args()

    with open(a.src) as f:
        src = json.load(f)
    events = src["traceEvents"]
    cpu_steps = sorted((e for e in events if e.get("cat") == "user_annotation"
                        and str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    if not cpu_steps:
        sys.exit("kineto_gen: the source has no ProfilerStep#N")
    t0 = cpu_steps[0]["ts"]
    period = (cpu_steps[-1]["ts"] + cpu_steps[-1]["dur"] - t0) / len(cpu_steps) * 1.02
    nsrc = len(cpu_steps)
    max_corr = max(e.get("args", {}).get("correlation", 0) for e in events) + 1
    max_ext = max(e.get("args", {}).get("External id", 0) for e in events) + 1
    meta = {k: v for k, v in src.items() if k != "traceEvents"}
    if a.rank is not None or a.world is not None:
        info = dict(meta.get("distributedInfo", {}))
        if a.rank is not None:
            info["rank"] = a.rank
        if a.world is not None:
            info["world_size"] = a.world
        meta["distributedInfo"] = info
    target = int(a.megabytes * 1e6)
    opener = gzip.open if a.gzip else open
    out = opener(a.out, "wt") if a.gzip else open(a.out, "w")
    # Kineto writes the metadata first, traceEvents, then the trailing keys.
    head = {k: v for k, v in meta.items() if k not in ("traceName", "baseTimeNanoseconds", "displayTimeUnit")}
    tail = {k: meta[k] for k in ("traceName", "displayTimeUnit", "baseTimeNanoseconds") if k in meta}
    text = json.dumps(head, indent=2)[:-2] + ',\n  "traceEvents": [\n'
    out.write(text)
    written = len(text)
    rep = 0
    first = True
    while True:
        last = written >= target
        off = rep * nsrc * period + a.shift_us
        for e in sorted(events, key=lambda e: e["ts"]):
            e = json.loads(json.dumps(e))
            args = e.get("args", {})
            if "correlation" in args:
                args["correlation"] += rep * max_corr
            if "External id" in args:
                args["External id"] += rep * max_ext
            name = e.get("name", "")
            if name.startswith("ProfilerStep#"):
                n = int(name[13:]) + rep * nsrc
                e["name"] = "ProfilerStep#%d" % n
            e["ts"] += off
            if last and e["cat"] == "user_annotation" and name.startswith("ProfilerStep#") and \
                    int(name[13:]) == nsrc - 1:
                e["dur"] = e["dur"] / 2  # the profiler stopped inside the last step
            group = []
            if e["cat"] in ("cuda_runtime", "cuda_driver"):
                for i, (op, dims, types) in enumerate(OPS):
                    group.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": e["pid"], "tid": e["tid"],
                                  "ts": e["ts"] - 8.0 + i, "dur": 7.5 - i + e.get("dur", 0),
                                  "args": {"External id": args.get("External id", 0), "Record function id": 0,
                                           "Concrete Inputs": [""] * len(dims), "Input type": types,
                                           "Input Strides": [[d[-1], 1] if len(d) == 2 else [] for d in dims],
                                           "Input Dims": dims, "Ev Idx": i}})
                group.append(e)
                if "correlation" in args:
                    group.append({"ph": "s", "id": args["correlation"], "pid": e["pid"], "tid": e["tid"],
                                  "ts": e["ts"], "cat": "ac2g", "name": "ac2g"})
            elif e["cat"] in ("kernel", "gpu_memset", "gpu_memcpy"):
                args.setdefault("queued", 0)
                args.setdefault("context", 1)
                if e["cat"] == "kernel":
                    args.update({"registers per thread": 168, "shared memory": 214016, "blocks per SM": 0.969697,
                                 "warps per SM": 7.757576, "grid": [128, 1, 1], "block": [384, 1, 1],
                                 "est. achieved occupancy %": 0})
                group.append(e)
                if "correlation" in args:
                    group.append({"ph": "f", "id": args["correlation"], "pid": e["pid"], "tid": e["tid"],
                                  "ts": e["ts"], "cat": "ac2g", "name": "ac2g", "bp": "e"})
            else:
                group.append(e)
            for g in group:
                text = ("" if first else ",\n") + event_text(g)
                first = False
                out.write(text)
                written += len(text)
        rep += 1
        if last:
            break
    text = "\n  ],\n" + ",\n".join("  %s: %s" % (json.dumps(k), json.dumps(v)) for k, v in tail.items()) + "\n}\n"
    out.write(text)
    out.close()
    print("%s: %d steps, %.1f MB of JSON%s" % (a.out, rep * nsrc, (written + len(text)) / 1e6,
                                                 " (gzip)" if a.gzip else ""))


if __name__ == "__main__":
    main()

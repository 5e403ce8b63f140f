#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""topo-report's Kineto JSON speed against CPython's json.load, on the same file in the same run.

Usage: bench/kineto_bench.py [--mb 256] [--runs 5] [--build build] [--gzip] [--dir /tmp/...]

Writes a Kineto trace of about MB megabytes with bench/kineto_gen.py (kept in --dir for the next
run), then runs, in turn, `topo-report --json -q --no-progress FILE` (both passes: read + the
whole analysis) and `python3 -c 'import json,sys; json.load(open(sys.argv[1]))' FILE`, RUNS
times each, and prints per command the median wall and CPU seconds and the peak RSS (the child's
rusage; peak RSS from GNU time), topo-report's MB/s (file bytes / wall and / CPU seconds), and the median of the
pairwise ratios topo / json.load. A second trace of a quarter the size shows whether topo-report's
memory depends on the trace's length. --gzip times the .json.gz form too (json.load reads the
plain file: it has no gzip of its own).
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


GNU_TIME = "/usr/bin/time"


def run(cmd):
    """(wall s, cpu s, peak RSS MiB or None) of one command, its output thrown away. A child's
    ru_maxrss counts this Python process's size when it was started from it, so the peak RSS comes
    from GNU time (a small C parent) when it is installed, else it is not given."""
    fd, rss_file = tempfile.mkstemp()
    os.close(fd)
    have_time = os.access(GNU_TIME, os.X_OK)
    full = [GNU_TIME, "-f", "%M", "-o", rss_file] + cmd if have_time else cmd
    devnull = os.open(os.devnull, os.O_WRONLY)
    t = time.monotonic()
    pid = os.posix_spawn(full[0], full, os.environ,
                         file_actions=[(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)])
    _, status, ru = os.wait4(pid, 0)  # times include the grandchild's: GNU time waits for it
    wall = time.monotonic() - t
    os.close(devnull)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("kineto_bench: %s exited %d" % (cmd[0], os.waitstatus_to_exitcode(status)))
    rss = None
    if have_time:
        with open(rss_file) as f:
            rss = int(f.read().split()[-1]) / 1024.0
    os.unlink(rss_file)
    return wall, ru.ru_utime + ru.ru_stime, rss


def peak(rows):
    v = [x[2] for x in rows if x[2] is not None]
    return "%.1f MiB" % max(v) if v else "n/a (no %s)" % GNU_TIME


def trace(path, mb, gz):
    if not os.path.exists(path):
        cmd = [sys.executable, os.path.join(HERE, "kineto_gen.py"), path, str(mb)] + (["--gzip"] if gz else [])
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=256)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--dir", default="/tmp/topo-kineto-bench")
    a = ap.parse_args()
    exe = os.path.join(a.build, "tools", "report", "topo-report")
    if not os.access(exe, os.X_OK):
        sys.exit("kineto_bench: no %s (build first: bash scripts/test.sh)" % exe)
    os.makedirs(a.dir, exist_ok=True)
    big = trace(os.path.join(a.dir, "trace-%g.json" % a.mb), a.mb, False)
    small = trace(os.path.join(a.dir, "trace-%g.json" % (a.mb / 4)), a.mb / 4, False)
    size = os.path.getsize(big) / 1e6
    topo = [exe, "--json", "-q", "--no-progress"]
    pyjson = [sys.executable, "-c", "import json,sys; json.load(open(sys.argv[1]))"]
    print("file: %s, %.1f MB (%s)" % (big, size, os.uname().machine))
    rows = {"topo-report": [], "json.load": []}
    ratio_wall, ratio_cpu = [], []
    for _ in range(a.runs):
        t = run(topo + [big])
        j = run(pyjson + [big])
        rows["topo-report"].append(t)
        rows["json.load"].append(j)
        ratio_wall.append(t[0] / j[0])
        ratio_cpu.append(t[1] / j[1])
    for name, r in rows.items():
        wall = statistics.median(x[0] for x in r)
        cpu = statistics.median(x[1] for x in r)
        print("%-12s wall %7.3f s  cpu %7.3f s  peak RSS %12s  %7.1f MB/s (wall)  %7.1f MB/s (cpu)" %
              (name, wall, cpu, peak(r), size / wall, size / cpu))
    print("ratio topo-report / json.load: wall %.4f, cpu %.4f (median of %d pairs)" %
          (statistics.median(ratio_wall), statistics.median(ratio_cpu), a.runs))
    s = [run(topo + [small]) for _ in range(max(1, a.runs // 2))]
    print("memory: topo-report peak RSS %s on %.1f MB, %s on %.1f MB" %
          (peak(s), os.path.getsize(small) / 1e6, peak(rows["topo-report"]), size))
    if a.gzip:
        gz = trace(os.path.join(a.dir, "trace-%g.json.gz" % a.mb), a.mb, True)
        g = [run(topo + [gz]) for _ in range(a.runs)]
        wall = statistics.median(x[0] for x in g)
        print("gzip: %s, %.1f MB compressed: wall %.3f s, cpu %.3f s, peak RSS %s, %.1f MB/s of JSON" %
              (gz, os.path.getsize(gz) / 1e6, wall, statistics.median(x[1] for x in g), peak(g), size / wall))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Shared by truth_compare.py and truth_steps.py: a run's step bounds and topo-report's JSON."""
import glob
import json
import os
import subprocess


def step_bounds(run_dir):
    """The job's step bounds (ddp_job.py's steps-rank*.json): per boundary, the latest rank's."""
    b = [json.load(open(f))["bounds_ns"] for f in sorted(glob.glob(os.path.join(run_dir, "steps-rank*.json")))]
    return [max(x[i] for x in b) for i in range(min(len(x) for x in b))] if b else []


def report_json(report, inputs, window=None, say_failure=True):
    """topo-report --json on `inputs` (clipped to `window`, a (from, to) pair), or None."""
    cmd = [report, "--json", "-q"] + (["--window", f"{window[0]},{window[1]}"] if window else []) + inputs
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        if say_failure:
            print(f"  topo-report {' '.join(cmd[1:])} exit {p.returncode}: {p.stderr[-400:]}")
        return None
    return json.loads(p.stdout)


def per_rank(r):
    """A report's ranks by world rank."""
    return {k["rank"]: k for k in (r or {}).get("ranks", [])}

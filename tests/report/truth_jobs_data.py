#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The truth checks of tests/gpu/truth_jobs.py on recorded GPU jobs, on the CPU:
truth_jobs_data.py DATA_DIR REPORT_BIN TRUTH_JOBS_PY. DATA_DIR holds one folder per job (topo's
traces, the Kineto traces of its last steps, the job's step bounds; tests/data/jobs-1xh200) and
EXPECTED_FAILURES, the checks known to fail with their reasons. Exit 1 when a check fails that is
not expected, when an expected failure passes (the list must then shrink), or when no check ran."""
import json
import os
import subprocess
import sys
import tempfile

data, report, script = sys.argv[1], sys.argv[2], sys.argv[3]
expected = {}
for line in open(os.path.join(data, "EXPECTED_FAILURES")):
    line = line.strip()
    if line and not line.startswith("#"):
        check, _, why = line.partition(" # ")
        expected[check.strip()] = why.strip()
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "truth.json")
    p = subprocess.run([sys.executable, script, data, report, "1", "--json", out],
                       capture_output=True, text=True)
    print(p.stdout, end="")
    if p.stderr:
        print(p.stderr, end="", file=sys.stderr)
    results = json.load(open(out)) if os.path.exists(out) else []
checks = [r for r in results if "check" in r]
bad = []
for r in checks:
    name = f"{r['job']}: {r['check']}"
    if not r["pass"] and name not in expected:
        bad.append(f"unexpected FAIL {name}: {r['text']}")
    if r["pass"] and name in expected:
        bad.append(f"expected to fail but passes (remove it from EXPECTED_FAILURES): {name}")
seen = {f"{r['job']}: {r['check']}" for r in checks}
bad += [f"expected failure never checked: {c}" for c in expected if c not in seen]
if len(checks) < 50:
    bad.append(f"only {len(checks)} checks ran")
for b in bad:
    print(b)
print(f"truth_jobs_data: {len(checks)} checks, {sum(r['pass'] for r in checks)} pass, "
      f"{len(expected)} expected failures, {len(bad)} problems")
sys.exit(1 if bad else 0)

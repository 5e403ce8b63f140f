#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# NVTX ranges of libtopo-profiler captured on the GPU machine through the test injection library
# (tests/nvtx/, NVTX_INJECTION64_PATH; no Nsight needed): a 2-process PyTorch job with the
# profiler loaded; every process must create the "topo" domain and emit start/end range pairs,
# one per collective, with messages naming the collective.
# NVTX_CAPTURE_SO overrides the library's path. Results: $OUT/nvtx.txt, capture in $OUT/nvtx/.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO
if [ ! -e "$NVTX_CAPTURE_SO" ] && [ -f "$GPU_SRC/tests/nvtx/nvtx_capture.c" ]; then
  # Not in the build (e.g. configured without tests): compile the one-file tool directly.
  inc=/usr/local/cuda/include
  mkdir -p "$GPU_BUILD/nvtx-fallback"
  cc -O2 -shared -fPIC -I"$inc" "$GPU_SRC/tests/nvtx/nvtx_capture.c" -o "$GPU_BUILD/nvtx-fallback/libtopo_nvtx_capture.so" \
    -lpthread 2>"$OUT/nvtx-build.log" && NVTX_CAPTURE_SO="$GPU_BUILD/nvtx-fallback/libtopo_nvtx_capture.so"
fi
[ -e "$NVTX_CAPTURE_SO" ] || die "NVTX injection library not found ($NVTX_CAPTURE_SO): build tests/nvtx or set NVTX_CAPTURE_SO"
n=$(gpu_count)
nr=$(( n >= 2 ? 2 : 1 ))
d="$OUT/nvtx"
rm -rf "$d"; mkdir -p "$d/traces"
cap="$d/nvtx-capture.txt"
env NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$d/traces" TOPO_PROFILER_NVTX=1 \
  NVTX_INJECTION64_PATH="$NVTX_CAPTURE_SO" TOPOTEST_NVTX_CAPTURE="$cap" \
  timeout -k 10 "$(inner_timeout 180)" "$PYTHON" "$GPU_DIR/torch_collectives.py" --mode load --nranks "$nr" >"$d/job.log" 2>&1
rc=$?
"$PYTHON" - "$cap" "$nr" >"$OUT/nvtx.txt" 2>&1 <<'PYEOF'
import re, sys
path, nranks = sys.argv[1], int(sys.argv[2])
try:
    lines = open(path).read().splitlines()
except OSError as e:
    print(f"FAIL: no capture file ({e})"); sys.exit(1)
topo_doms = set()
# Every process appends to the same capture file and numbers its ranges from 1, so ids repeat
# across processes: count starts and ends per id (a multiset), pairing min(starts, ends).
from collections import Counter
starts, ends, msgs = Counter(), Counter(), []
for l in lines:
    m = re.match(r"DOMAIN dom=(\d+) name=(.*)", l)
    if m and m.group(2) == "topo":
        topo_doms.add(m.group(1))
    m = re.match(r"START dom=(\d+) id=(\d+) .*msg=(.*)", l)
    if m and m.group(1) in topo_doms:
        starts[(m.group(1), m.group(2))] += 1
        msgs.append(m.group(3))
    m = re.match(r"END dom=(\d+) id=(\d+)", l)
    if m and m.group(1) in topo_doms:
        ends[(m.group(1), m.group(2))] += 1
paired = sum(min(n, ends[k]) for k, n in starts.items())
colls = {name: sum(name.lower() in s.lower() for s in msgs) for name in ("AllReduce", "AllGather", "ReduceScatter")}
print(f"capture lines {len(lines)}, 'topo' domains {len(topo_doms)}, ranges started {sum(starts.values())}, ended and paired {paired}")
print(f"ranges naming: {colls}")
for s in msgs[:5]:
    print(f"  e.g. {s}")
# 12 collectives per rank in --mode load (4 sizes x 3 collectives)
ok = len(topo_doms) >= 1 and paired >= 12 * nranks * 0.9 and all(v > 0 for v in colls.values())
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
PYEOF
rc2=$?
echo "job exit $rc" >>"$OUT/nvtx.txt"
cat "$OUT/nvtx.txt" >&2
[ $rc -eq 0 ] && [ $rc2 -eq 0 ]

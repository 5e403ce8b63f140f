#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# topo's CUPTI flushes when torch.profiler starts while topo records: the plugin as built
# (build-gpu: CUPTI's periodic flush every TOPO_CUPTI_FLUSH_PERIOD_MS while a span is open, no
# flush when stepping aside) against the code before (-DTOPO_CUPTI_FLUSH_PERIOD_MS=0
# -DTOPO_CUPTI_YIELD_FLUSH=1: flushes only at topo's 0.5 s polls and when stepping aside). (1) cupti_coexist.sh with both, ROUNDS rounds: torch's GPU
# events kept and Kineto's "unknown buffer" lines; (2) the DDP job of truth_one_gpu.sh (needs
# NCCL_LIB) with a 10 s default window, so that torch.profiler starts inside it, per variant:
# Kineto's GPU events per rank and its "unknown buffer" lines.
# Results: $OUT/cupti_flush_period.txt.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO REPORT_BIN
v0="$GPU_SRC/build-gpu-fp0"
root=$(dirname "$(torch_nccl_dir)")
args=(); [ -f "$root/include/nccl.h" ] && args+=("-DTOPO_NCCL_ROOT=$root")
cmake -S "$GPU_SRC" -B "$v0" -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF \
  "-DCMAKE_C_FLAGS=-DTOPO_CUPTI_FLUSH_PERIOD_MS=0 -DTOPO_CUPTI_YIELD_FLUSH=1" "${args[@]}" >"$OUT/build-fp0.log" 2>&1 && ninja -C "$v0" topo-profiler >>"$OUT/build-fp0.log" 2>&1 ||
  die "variant build failed (see $OUT/build-fp0.log)"
so0=$(find "$v0" -name libtopo-profiler.so | head -1)
{
  PROFILER_VARIANTS="now:$PROFILER_SO before:$so0" ROUNDS=${ROUNDS:-1} bash "$GPU_DIR/cupti_coexist.sh" >/dev/null 2>&1
  cat "$OUT/cupti_coexist.txt"
  if [ -n "${NCCL_LIB:-}" ]; then
    for v in "now:$PROFILER_SO" "before:$so0"; do
      PROFILER_SO=${v#*:} PARTS=A TOPO_PROFILER_CUPTI_WINDOW_MS=10000 bash "$GPU_DIR/truth_one_gpu.sh" >/dev/null 2>&1
      n=$("$PYTHON" -c "
import glob, gzip, json, sys
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    ev = json.load(open(f))['traceEvents']
    print(sum(1 for e in ev if e.get('ph') == 'X' and e.get('cat') in ('kernel', 'gpu_memcpy', 'gpu_memset')), end=' ')
" "$OUT/truth/A/kineto")
      echo "ddp ${v%%:*}: Kineto GPU events per rank: $n; unknown-buffer lines: $(grep -c 'unknown buffer' "$OUT/truth/A/job.log")"
      rm -rf "$OUT/truth"
    done
  fi
} 2>&1 | tee "$OUT/cupti_flush_period.txt"

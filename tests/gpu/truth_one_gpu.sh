#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The truth checks of a real job with both plugins in their DEFAULT configuration, on one GPU:
# two DDP ranks share GPU 0 (ddp_job.py --share-gpu), which needs NCCL >= 2.30
# (NCCL_MULTI_RANK_GPU_ENABLE=1, NCCL_MAX_CTAS=32); give its libnccl.so.2 as NCCL_LIB (it is
# preloaded into PyTorch). Timings there are not real speed; the event streams are real.
#   A  default plugins, torch.profiler from measured step KFROM on, rank 1 delayed DELAY_MS per
#      step: topo's own report against topo-report on the Kineto traces, both on Kineto's steps
#      (truth_compare.py): communication share (measured by both); overlap ratio and exposed
#      share, which topo did not record there (its default window opens at the first large
#      collective and steps aside while torch.profiler records: CUDA 13.0's CUPTI serves one
#      client), so topo's are its estimates from the overlap of its covered steps, with their
#      error; Kineto's own first-half/second-half difference as the noise; the straggler named.
#   B  TOPO_PROFILER_CUPTI=on and torch.profiler on the same steps; C  no topo plugin, torch.profiler:
#      torch's trace keeps all its GPU events with topo present (kernel count per step B vs C),
#      and topo's CUPTI trace records that it stepped aside.
# PARTS=ABC (default) picks the runs; B and C are checked together.
# Results: $OUT/truth.txt (PASS/FAIL lines), $OUT/truth/ (traces, reports, logs).
set -u
source "$(dirname "$0")/common.sh"
[ -n "${NCCL_LIB:-}" ] && [ -f "$NCCL_LIB" ] || die "set NCCL_LIB to a libnccl.so.2 of NCCL >= 2.30"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO REPORT_BIN
d="$OUT/truth"; rm -rf "$d"; mkdir -p "$d"
steps=${STEPS:-30}; kfrom=${KFROM:-18}; delay=${DELAY_MS:-20}
job() { # name, extra env..., -- ddp args...
  local name=$1; shift; local envs=()
  while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  mkdir -p "$d/$name/traces"
  env LD_PRELOAD="$NCCL_LIB" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=32 NCCL_DEBUG=WARN \
    TOPO_PROFILER_DIR="$d/$name/traces" "${envs[@]}" \
    timeout -k 10 "$(inner_timeout 240)" "$PYTHON" "$GPU_DIR/ddp_job.py" --share-gpu --nranks 2 \
    --out "$d/$name" --kineto "$d/$name/kineto" "$@" >"$d/$name/job.log" 2>&1
  echo "job $name exit $?"
}
plug=(NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO")
parts=${PARTS:-ABC}
{
  case $parts in *A*) job A "${plug[@]}" -- --steps "$steps" --kineto-from "$kfrom" --delay-rank 1 --delay-ms "$delay";; esac
  case $parts in *B*) job B "${plug[@]}" TOPO_PROFILER_CUPTI=on -- --steps 10 --kineto-from 2;; esac
  case $parts in *C*) job C X=1 -- --steps 10 --kineto-from 2;; esac
  "$PYTHON" "$GPU_DIR/truth_compare.py" "$d" "$REPORT_BIN" "$kfrom" 1
} 2>&1 | tee "$OUT/truth.txt"
grep -q FAIL "$OUT/truth.txt" && exit 1
exit 0

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: build topo, record a data-parallel training job with both plugins loaded, and
# report on it (terminal tables + topo-run/report.html).
#  - With two or more GPUs (nvidia-smi lists them and python3 has torch): a real PyTorch DDP job on
#    every local GPU through real NCCL (tests/gpu/ddp_job.sh), both plugins in their default
#    configuration, then topo-report.
#  - With one GPU: two DDP ranks sharing it, where the NCCL present allows it (NCCL >= 2.30 with
#    NCCL_MULTI_RANK_GPU_ENABLE=1: PyTorch's own NCCL when it is that new, or MAIN_NCCL_LIB=path of
#    a libnccl.so.2 >= 2.30, preloaded into PyTorch); else the embedded default below, saying why.
#  - Without GPUs: the embedded default. tools/demo/topo-demo loads both plugins through the
#    plugin host exactly as NCCL does and drives them with an NCCL 2.28 event stream modelled on
#    an 8-rank data-parallel step (bf16 ~350M parameters, 25 MB gradient buckets overlapping the
#    backward pass, two slower warm-up steps, one slow rank) over 14 steps, long enough for the
#    profiler to learn the step and record one CUPTI window of whole steady steps; the plugins write
#    real trace files; topo-report reads them (against the built-in H200 NVLink peak). Then the
#    closed loop: topo-report fit turns the traces into a tuner profile, topo-tune reads it back
#    (where it switches from NCCL's pick, on what evidence), the demo runs again with the tuner on
#    that profile (TOPO_TUNER_PROFILE), and topo-report diff compares the two runs.
# Usage: bash scripts/main.sh [--cpu]   (MAIN_OUT=dir to change ./topo-run; MAIN_BUILD=dir: the
# embedded default runs that build's tools instead of configuring and building build-main, as
# tests/newcomer.sh does)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${MAIN_OUT:-$PWD/topo-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)

# GPUs torch sees (0 without nvidia-smi, torch or GPUs, or with --cpu).
gpu_count() {
  [ "${1:-}" != --cpu ] || { echo 0; return; }
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' || { echo 0; return; }
  python3 -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0
}

# "major minor patch" of the NCCL a one-GPU job would run: MAIN_NCCL_LIB's, else PyTorch's.
nccl_version() {
  if [ -n "${MAIN_NCCL_LIB:-}" ]; then
    python3 - "$MAIN_NCCL_LIB" <<'PY' 2>/dev/null
import ctypes, sys
v = ctypes.c_int(0)
ctypes.CDLL(sys.argv[1]).ncclGetVersion(ctypes.byref(v))
print(v.value // 10000, v.value // 100 % 100, v.value % 100)
PY
  else
    python3 -c 'import torch; print(*torch.cuda.nccl.version())' 2>/dev/null
  fi
}

ngpus=$(gpu_count "${1:-}")
why=""
if [ "$ngpus" -ge 1 ]; then
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  if [ "$ngpus" -ge 2 ]; then
    echo "topo: $ngpus GPUs: a real DDP job through NCCL with both plugins in their default configuration"
    OUT="$out" GPU_BUILD="$PWD/build-main" bash tests/gpu/ddp_job.sh
  else
    read -r major minor patch <<<"$(nccl_version)"
    if [ -n "${minor:-}" ] && [ $((major * 100 + minor)) -ge 230 ]; then
      echo "topo: one GPU and NCCL $major.$minor.$patch: two DDP ranks sharing it (real NCCL calls and" \
           "events; timings are not real speed)"
      OUT="$out" GPU_BUILD="$PWD/build-main" SHARE_GPU=1 NCCL_LIB="${MAIN_NCCL_LIB:-}" bash tests/gpu/ddp_job.sh
    else
      why="one GPU, and NCCL ${major:-?}.${minor:-?}.${patch:-?} refuses two ranks on one GPU (NCCL >= 2.30"
      why="$why allows it; set MAIN_NCCL_LIB to its libnccl.so.2), and one rank runs no collectives"
    fi
  fi
  if [ -z "$why" ]; then
    cat "$out/ddp_job.txt"
    echo "topo: HTML report: $out/ddp/report-topo.html"
    exit 0
  fi
fi

bm=${MAIN_BUILD:-build-main}
if [ -z "${MAIN_BUILD:-}" ]; then
  gen=()
  command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
  cmake -S . -B build-main "${gen[@]}" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build-main -j "$jobs" --target topo-tuner topo-profiler topo-report topo-demo topo-tune >/dev/null
fi
echo "topo: ${why:-no GPU here}: running the embedded default (8 modelled ranks driving the real" \
     "plugins in their default configuration)"
rm -rf "$out/traces"
"$bm"/tools/demo/topo-demo --out "$out/traces" --ranks 8
echo
"$bm"/tools/report/topo-report --gpu H200 "$out/traces" --html "$out/report.html"
"$bm"/tools/report/topo-report export --chrome "$out/trace.json" "$out/traces" >/dev/null
echo
echo "topo: the closed loop. 1. The traces fitted into a tuner profile ($out/demo.profile):"
"$bm"/tools/report/topo-report fit --gpu H200 -o "$out/demo.profile" "$out/traces"
echo
echo "topo: 2. What the tuner chooses from that profile for AllReduce on 8 ranks, beside NCCL's own"
echo "model (topo-tune reads the profile back as the tuner does):"
"$bm"/tools/tune/topo-tune --profile "$out/demo.profile" --gpu H200 --nranks 8 --nnodes 1 \
  --coll allreduce --min 1K --max 1G
echo
echo "topo: 3. The job again with the tuner on that profile (TOPO_TUNER_PROFILE), then topo-report diff:"
rm -rf "$out/traces-tuned"
TOPO_TUNER_PROFILE="$out/demo.profile" "$bm"/tools/demo/topo-demo --out "$out/traces-tuned" \
  --ranks 8 >/dev/null
"$bm"/tools/report/topo-report diff "$out/traces" "$out/traces-tuned"
echo
echo "topo: HTML report $out/report.html, Perfetto trace $out/trace.json, traces in $out/traces/,"
echo "the tuner profile fitted from them $out/demo.profile"

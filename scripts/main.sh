#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: build topo, record a data-parallel training job with both plugins loaded, and
# report on it (terminal tables + topo-run/report.html).
#  - With GPUs (nvidia-smi lists one and python3 has torch): a real PyTorch DDP job on every local
#    GPU through real NCCL (tests/gpu/ddp_job.sh), tuner + profiler loaded, then topo-report.
#  - Without GPUs: the embedded default. tools/demo/topo-demo loads both plugins through the
#    plugin host exactly as NCCL does and drives them with an NCCL 2.28 event stream modelled on
#    an 8-rank data-parallel step (bf16 ~350M parameters, 25 MB gradient buckets overlapping the
#    backward pass, one slow rank); the plugins write real trace files; topo-report reads them.
# Usage: bash scripts/main.sh [--cpu]   (MAIN_OUT=dir to change ./topo-run)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${MAIN_OUT:-$PWD/topo-run}
mkdir -p "$out"
jobs=$(nproc 2>/dev/null || echo 2)

have_gpus() {
  [ "${1:-}" != --cpu ] || return 1
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU ' &&
    python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.device_count() > 0 else 1)' 2>/dev/null
}

if have_gpus "${1:-}"; then
  export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
  echo "topo: GPUs found: a real DDP job through NCCL with both plugins (tests/gpu/ddp_job.sh)"
  OUT="$out" GPU_BUILD="$PWD/build-main" bash tests/gpu/ddp_job.sh
  cat "$out/ddp_job.txt"
  echo "topo: HTML report: $out/ddp/report-topo.html"
  exit 0
fi

gen=()
command -v ninja >/dev/null 2>&1 && gen=(-G Ninja)
cmake -S . -B build-main "${gen[@]}" -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-main -j "$jobs" --target topo-tuner topo-profiler topo-report topo-demo topo-tune >/dev/null
echo "topo: no GPU here: running the embedded default (8 modelled ranks driving the real plugins)"
rm -rf "$out/traces"
build-main/tools/demo/topo-demo --out "$out/traces" --ranks 8 --steps 3
echo
build-main/tools/report/topo-report "$out/traces" --html "$out/report.html"
build-main/tools/report/topo-report export --chrome "$out/trace.json" "$out/traces" >/dev/null
echo
echo "topo: what the tuner chooses for AllReduce on 8 x H200 (built-in profile) beside NCCL's own model:"
build-main/tools/tune/topo-tune --gpu H200 --nranks 8 --nnodes 1 --coll allreduce --min 1K --max 1G
echo
echo "topo: HTML report $out/report.html, Perfetto trace $out/trace.json, traces in $out/traces/"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the profiler's DEFAULT configuration costs a training step: train_job.py runs alternately
# without topo's profiler (A) and with it in its default configuration (B), A B A B ... (ROUNDS
# pairs, default 2), each for SECONDS_EACH seconds (default 15) of measured steps; the median step
# time of each run, then B against A (the mean of the pairs' ratios) and A against A (the first
# A against the later ones) as the noise. The tuner is not loaded in either. JOBS picks the
# job kinds (default "ddp-short"; as truth_jobs.sh). Results: $OUT/step_cost.txt, $OUT/step_cost/.
# One GPU: NCCL_LIB= an NCCL >= 2.30 (the ranks share it; the costs are those of that sharing).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO
d="$OUT/step_cost"; rm -rf "$d"; mkdir -p "$d"
secs=${SECONDS_EACH:-15}
rounds=${ROUNDS:-2}
penv=(NCCL_DEBUG=WARN)
share=()
if [ "$(gpu_count)" -lt 2 ] || [ "${SHARE_GPU:-0}" = 1 ]; then
  [ -n "${NCCL_LIB:-}" ] && [ -f "$NCCL_LIB" ] || die "one GPU: set NCCL_LIB to a libnccl.so.2 of NCCL >= 2.30"
  penv+=(LD_PRELOAD="$NCCL_LIB" NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_MAX_CTAS=32)
  share=(--share-gpu)
fi
args_of() {
  case $1 in
    ddp-short) echo "--mode ddp --batch 8" ;; ddp-long) echo "--mode ddp --batch 96" ;;
    fsdp) echo "--mode fsdp" ;; tpdp) echo "--mode tpdp --tp 2" ;; pp) echo "--mode pp --micro 4" ;;
    *) return 1 ;;
  esac
}
for job in ${JOBS:-ddp-short}; do
  a=$(args_of "$job") || die "unknown job $job"
  for r in $(seq 1 "$rounds"); do
    for v in A B; do
      o="$d/$job-$v$r"; mkdir -p "$o/traces"
      plug=()
      [ "$v" = B ] && plug=(NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$o/traces")
      # shellcheck disable=SC2086
      env "${penv[@]}" "${plug[@]}" timeout -k 10 $((secs * 4 + 120)) "$PYTHON" "$GPU_DIR/train_job.py" $a \
        "${share[@]}" --seconds "$secs" --out "$o" >"$o/job.log" 2>&1
      log "$job $v$r exit $?"
    done
  done
done
"$PYTHON" - "$d" <<'EOF' | tee "$OUT/step_cost.txt"
import glob, json, os, statistics, sys
d = sys.argv[1]
jobs = sorted({os.path.basename(p).rsplit("-", 1)[0] for p in glob.glob(os.path.join(d, "*-A*"))})
for job in jobs:
    med = {}
    for p in sorted(glob.glob(os.path.join(d, f"{job}-*"))):
        try:
            t = json.load(open(os.path.join(p, "job.json")))["step_ms"]
        except Exception:
            continue
        med[os.path.basename(p).rsplit("-", 1)[1]] = statistics.median(t[len(t) // 10:])
    rounds = sorted({int(k[1:]) for k in med})
    pairs = [med[f"B{r}"] / med[f"A{r}"] - 1 for r in rounds if f"A{r}" in med and f"B{r}" in med]
    aa = [med[f"A{r}"] / med["A1"] - 1 for r in rounds[1:] if f"A{r}" in med and "A1" in med]
    print(f"{job}: median step ms " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(med.items(), key=lambda kv: (kv[0][1:], kv[0]))))
    if pairs:
        print(f"{job}: profiler default (B) vs none (A): {100 * statistics.mean(pairs):+.2f} % "
              f"(pairs {', '.join(f'{100 * x:+.2f}' for x in pairs)}); A/A noise "
              f"{', '.join(f'{100 * x:+.2f} %' for x in aa) or 'n/a'}")
EOF

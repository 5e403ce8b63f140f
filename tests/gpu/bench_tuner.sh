#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tuner against NCCL's default and the oracle (best forced setting), all in one job:
# topo-calibrate --bench on the local GPUs (one node), then the same with the GPUs split into two
# "nodes" by NCCL_HOSTID (one process per GPU; NCCL's socket transport: labelled as such). The
# tuner runs on $PROFILE when given (else on the profile fitted in the same job).
# Env: BENCH_SINGLE=0 skips the one-node run (run_all.sh gets it from calibrate.sh --bench),
# BENCH_TWO_NODES=0 skips the split run, BENCH_ARGS / BENCH2_ARGS add arguments,
# BENCH_TIMEOUT / BENCH2_TIMEOUT (seconds). Results: $OUT/bench-*.txt/.csv/.log.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need CALIBRATE_BIN TUNER_SO
machine_info
n=$(gpu_count)
[ "$n" -ge 2 ] || die "needs at least 2 GPUs ($n visible)"
rc=0
pargs=()
[ -n "${PROFILE:-}" ] && [ -f "$PROFILE" ] && pargs=(-p "$PROFILE")
if [ "${BENCH_SINGLE:-1}" != 0 ]; then
  log "bench: one node, $n GPUs"
  mkdir -p "$OUT/bench-work"
  # shellcheck disable=SC2086
  timeout -k 10 "$(inner_timeout "${BENCH_TIMEOUT:-420}")" "$CALIBRATE_BIN" --bench --tuner "$TUNER_SO" "${pargs[@]}" \
    -c allreduce,allgather,reducescatter -o "$OUT/bench-1node.profile" --csv "$OUT/bench-1node.csv" \
    --workdir "$OUT/bench-work" ${BENCH_ARGS:-} >"$OUT/bench-1node.txt" 2>"$OUT/bench-1node.log"
  r=$?; [ $r -ne 0 ] && rc=$r
  grep -E 'geometric mean' "$OUT/bench-1node.txt" >&2
fi
if [ "${BENCH_TWO_NODES:-1}" != 0 ]; then
  log "bench: $n GPUs as 2 nodes (NCCL_HOSTID, socket transport)"
  mkdir -p "$OUT/bench2-work"
  # Sockets are ~100x slower than NVLink: a smaller range keeps this to a minute or two.
  # shellcheck disable=SC2086
  timeout -k 10 "$(inner_timeout "${BENCH2_TIMEOUT:-300}")" "$CALIBRATE_BIN" --bench --nodes 2 --tuner "$TUNER_SO" \
    -c allreduce,allgather,reducescatter --channels 0 -f 4 -e 32M \
    -o "$OUT/bench-2nodes.profile" --csv "$OUT/bench-2nodes.csv" --workdir "$OUT/bench2-work" \
    ${BENCH2_ARGS:-} >"$OUT/bench-2nodes.txt" 2>"$OUT/bench-2nodes.log"
  r=$?; [ $r -ne 0 ] && rc=$r
  grep -E 'geometric mean' "$OUT/bench-2nodes.txt" >&2
fi
log "bench_tuner.sh: exit $rc"
exit $rc

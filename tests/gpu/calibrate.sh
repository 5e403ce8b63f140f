#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run topo-calibrate on every local GPU: the p2p matrix, the launch floor and the forced NCCL
# sweeps, fitted into a tuner profile. Writes to $OUT: calibrate.profile, calibrate-summary.txt
# (stdout: every table), calibrate-progress.log (stderr), calibrate.csv, and the NCCL INFO log the
# tool read. Extra arguments go to topo-calibrate (e.g. --quick, --bench, -c allreduce).
# Env: CALIBRATE_ARGS (more arguments), CALIBRATE_TIMEOUT (seconds, default 420).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need CALIBRATE_BIN
machine_info
n=$(gpu_count)
[ "$n" -ge 1 ] || die "no GPU visible"
log "topo-calibrate on $n GPU(s)"
work="$OUT/calibrate-work"
mkdir -p "$work"
# shellcheck disable=SC2086
timeout -k 10 "$(inner_timeout "${CALIBRATE_TIMEOUT:-420}")" "$CALIBRATE_BIN" -o "$OUT/calibrate.profile" --csv "$OUT/calibrate.csv" \
  --workdir "$work" --tuner "$TUNER_SO" ${CALIBRATE_ARGS:-} "$@" \
  >"$OUT/calibrate-summary.txt" 2>"$OUT/calibrate-progress.log"
rc=$?
cp "$work"/topo-calibrate-nccl.*.log "$OUT/calibrate-nccl-info.log" 2>/dev/null
tail -5 "$OUT/calibrate-progress.log" >&2
grep -E '^# (profile|  link|  proto)' "$OUT/calibrate-summary.txt" >&2 || true
log "calibrate.sh: exit $rc (profile: $OUT/calibrate.profile)"
exit $rc

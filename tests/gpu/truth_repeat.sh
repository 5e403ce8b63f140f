#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run A of truth_one_gpu.sh REPEAT times (default 3), each followed by truth_steps.py (per-step
# figures of topo's traces and Kineto's), keeping each run's traces: whether a gap between
# topo's CUPTI window and Kineto's steps is drift between early and late steps, a partial step
# at the window's edge, or a bias. Needs NCCL_LIB as truth_one_gpu.sh does.
# Results: $OUT/truth-N.txt (checks), $OUT/steps-N.txt (per-step table), $OUT/A-N.tgz (run A's
# traces, Kineto's gzipped, job log and step bounds).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need REPORT_BIN
for i in $(seq "${REPEAT:-3}"); do
  PARTS=A bash "$GPU_DIR/truth_one_gpu.sh" >/dev/null 2>&1
  cp "$OUT/truth.txt" "$OUT/truth-$i.txt" 2>/dev/null
  "$PYTHON" "$GPU_DIR/truth_steps.py" "$OUT/truth/A" "$REPORT_BIN" --json >"$OUT/steps-$i.txt" 2>&1
  gzip -q "$OUT"/truth/A/kineto/*.json 2>/dev/null
  tar czf "$OUT/A-$i.tgz" -C "$OUT/truth" A
  rm -rf "$OUT/truth" "$OUT/truth.txt"
  cat "$OUT/truth-$i.txt" "$OUT/steps-$i.txt"
done

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Both plugins load in real NCCL 2.28.x processes and NCCL logs the ABI versions it negotiated:
#  (1) PyTorch's NCCL (pip nvidia-nccl-cu13, 2.28.9): a 2-process torch.distributed job running
#      all_reduce / all_gather / reduce_scatter with NCCL_DEBUG=INFO;
#  (2) the system's NCCL (2.28.3): topo-calibrate itself with that libnccl.so.2 preloaded, a short
#      forced AllReduce sweep through the tuner with the profiler loaded.
# Pass: "TUNER/Plugin: Using" and "PROFILER/Plugin: Loaded" (or the profiler's own init line) in
# both logs, and the NCCL version each process ran. Logs: $OUT/plugins-*.log, verdicts in
# $OUT/plugins_load.txt.
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need TUNER_SO PROFILER_SO
machine_info
n=$(gpu_count)
nr=$(( n >= 2 ? 2 : 1 ))
res="$OUT/plugins_load.txt"
: >"$res"
fail=0
traces="$OUT/plugins-traces"
rm -rf "$traces"; mkdir -p "$traces"

check() { # name logfile
  local name=$1 f=$2 t p
  t=$(grep -h 'TUNER/Plugin: Using' "$f" | head -n 1)
  p=$(grep -h -E 'PROFILER/Plugin: (Loaded|Using)|Successfully loaded external profiler' "$f" | head -n 1)
  echo "$name tuner:    ${t:-NOT LOADED}" >>"$res"
  echo "$name profiler: ${p:-NOT LOADED}" >>"$res"
  grep -h -m1 -E 'NCCL version [0-9.]+' "$f" | sed "s/^/$name /" >>"$res"
  grep -h -i -m3 'topo' "$f" | sed "s/^/$name topo line: /" >>"$res"
  if [ -z "$t" ] || [ -z "$p" ]; then echo "$name: FAIL" >>"$res"; fail=1; else echo "$name: PASS" >>"$res"; fi
}

common_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,ENV,PROFILE
            NCCL_TUNER_PLUGIN="$TUNER_SO" NCCL_PROFILER_PLUGIN="$PROFILER_SO"
            TOPO_PROFILER_DIR="$traces")

# (1) PyTorch's NCCL
log "plugins_load: PyTorch's NCCL, $nr ranks"
env "${common_env[@]}" timeout -k 10 "$(inner_timeout 180)" "$PYTHON" "$GPU_DIR/torch_collectives.py" --mode load --nranks "$nr" \
  >"$OUT/plugins-torch.log" 2>&1
echo "torch job exit $?" >>"$res"
check "torch-nccl($(nccl_version_of "$(torch_nccl_dir)/libnccl.so.2"))" "$OUT/plugins-torch.log"

# (2) the system's NCCL, through topo-calibrate with that library preloaded
sys_lib=$(system_nccl_lib)
if [ -z "$sys_lib" ]; then
  echo "system NCCL: not found (ldconfig -p | grep libnccl)" >>"$res"
  fail=1
elif [ ! -e "$CALIBRATE_BIN" ]; then
  echo "system NCCL: topo-calibrate not built" >>"$res"
  fail=1
else
  log "plugins_load: system NCCL $sys_lib"
  work="$OUT/plugins-sys-work"; mkdir -p "$work"
  env "${common_env[@]}" NCCL_DEBUG_FILE="$OUT/plugins-system-nccl.%p.log" LD_PRELOAD="$sys_lib" \
    timeout -k 10 "$(inner_timeout 180)" "$CALIBRATE_BIN" -g "$nr" --quick -c allreduce -e 1M --no-p2p --no-default \
    --force-via tuner --tuner "$TUNER_SO" --workdir "$work" \
    >"$OUT/plugins-system-calibrate.txt" 2>"$OUT/plugins-system-calibrate.err"
  echo "system-NCCL topo-calibrate exit $?" >>"$res"
  cat "$OUT"/plugins-system-nccl.*.log >"$OUT/plugins-system.log" 2>/dev/null
  rm -f "$OUT"/plugins-system-nccl.*.log
  grep -h 'NCCL [0-9]' "$OUT/plugins-system-calibrate.err" | head -n 2 >>"$res"
  check "system-nccl($(nccl_version_of "$sys_lib"))" "$OUT/plugins-system.log"
fi
ls "$traces" | head -5 | sed 's/^/trace: /' >>"$res"
cat "$res" >&2
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Both plugins load in real NCCL 2.28.x processes and NCCL logs the ABI versions it negotiated:
#  (1) PyTorch's NCCL (pip nvidia-nccl-cu13, 2.28.9): a 2-process torch.distributed job running
#      all_reduce / all_gather / reduce_scatter with NCCL_DEBUG=INFO;
#  (2) from C, each NCCL in turn (PyTorch's 2.28.9 and the system's 2.28.3) preloaded under a
#      short topo-profiler-cost --quick run (a few eager AllReduces), with a hard 60 s timeout.
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

# (2) both NCCLs from C: topo-profiler-cost --quick (a few eager AllReduces on every GPU, one
# process) with the library preloaded, both plugins set, NCCL's INFO log on stdout; a hard 60 s
# timeout. topo-profiler-cost prints the version ncclGetVersion() reports and the file it came
# from, which must be the preloaded one. (topo-calibrate's forced sweep under the system NCCL
# 2.28.3 has hung past 120 s after its first setting: this check does not use it.)
PROFCOST_BIN=${PROFCOST_BIN:-$(dirname "$CALIBRATE_BIN")/topo-profiler-cost}
if [ ! -x "$PROFCOST_BIN" ]; then alt=$(find_built topo-profiler-cost); [ -n "$alt" ] && PROFCOST_BIN=$alt; fi
c_check() { # name libnccl.so.2
  local name=$1 lib=$2 f="$OUT/plugins-$1.log" rc v
  log "plugins_load: $name: $lib under topo-profiler-cost"
  env "${common_env[@]}" NCCL_DEBUG_SUBSYS=INIT,ENV \
    timeout -k 5 "$(inner_timeout 60)" env LD_PRELOAD="$lib" "$PROFCOST_BIN" --quick --config "$name" >"$f" 2>&1
  rc=$?
  echo "$name topo-profiler-cost exit $rc$([ $rc -eq 124 ] && echo ' (timed out after 60 s)')" >>"$res"
  [ $rc -ne 0 ] && fail=1
  v=$(grep -h -m1 'topo-profiler-cost: NCCL version' "$f" | sed 's/^topo-profiler-cost: //')
  echo "$name ncclGetVersion: ${v:-not reported}" >>"$res"
  case "$v" in
    *" from $lib;"*|*" from $(readlink -f "$lib");"*) ;;
    *) echo "$name: the NCCL that answered is not $lib" >>"$res"; fail=1 ;;
  esac
  grep -h -E "^$name eager_all_reduce " "$f" | sed "s/^/$name result: /" >>"$res"
  check "$name($(nccl_version_of "$lib"))" "$f"
}
sys_lib=$(system_nccl_lib)
torch_lib=$(torch_nccl_dir)
torch_lib=${torch_lib:+$torch_lib/libnccl.so.2}
if [ ! -x "$PROFCOST_BIN" ]; then
  echo "topo-profiler-cost not built ($PROFCOST_BIN): C checks of both NCCLs not run" >>"$res"
  fail=1
else
  if [ -n "$torch_lib" ] && [ -e "$torch_lib" ]; then c_check c-torch-nccl "$torch_lib"
  else echo "PyTorch's libnccl.so.2: not found" >>"$res"; fail=1; fi
  if [ -n "$sys_lib" ]; then c_check c-system-nccl "$sys_lib"
  else echo "system NCCL: not found (ldconfig -p | grep libnccl)" >>"$res"; fail=1; fi
fi
ls "$traces" | head -5 | sed 's/^/trace: /' >>"$res"
cat "$res" >&2
exit $fail

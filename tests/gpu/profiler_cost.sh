#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What libtopo-profiler costs an eager AllReduce (bench/RESULTS.md, "Profiler cost"), measured as the
# baseline in tests/data/nccl-2.28.9-2xh200/profiler-cost-*.txt: topo-profiler-cost drives every
# local GPU from one process and times AllReduce (float, sum) at 8 B, 128 KB, 1 MB, 16 MB, 128 MB,
# back to back, eager, no graphs (2000 calls per batch below 1 MB, 200 from 1 MB on; median/min/
# max over the batches). NCCL loads its profiler once per process, so every configuration is its
# own process; configurations alternate within a round (order rotated each round); 3 rounds, up to
# 5 while PROFCOST_BUDGET allows, fewer only when it runs out (the output says so). Configurations:
#   off           no NCCL_PROFILER_PLUGIN
#   topo-default  libtopo-profiler.so, default settings (kernel-channel timing sampled 1 in 32)
#   topo-cupti    TOPO_PROFILER_CUPTI=1
#   topo-full     TOPO_PROFILER_SAMPLE=1 (kernel-channel timing of every collective)
#   inspector     NCCL's libnccl-profiler-inspector.so, only if one exists on the machine
# NCCL: PyTorch's libnccl.so.2 (2.28.9, the baseline's) through LD_LIBRARY_PATH when present, else
# the one topo-profiler-cost was linked with; each run's log names the version it got.
# Output: $OUT/profiler_cost.txt (per size: median of the per-round medians per configuration,
# overhead vs off, the targets for topo-default: <= 3 % from 128 KB, <= 10 % at 8 B, then every
# raw line); logs under $OUT/profcost/. Exit 0 targets met, 1 a target missed or a run failed.
# Env: PROFCOST_BUDGET (seconds for the runs, default 140), PROFCOST_ROUNDS (at least, default 3),
# PROFCOST_MAX_ROUNDS (more while the budget allows, default 5), PROFCOST_ARGS (extra arguments,
# e.g. "--reps 5"), PROFCOST_NCCL_DIR (directory of the libnccl.so.2 to use), INSPECTOR_SO,
# PROFCOST_CUPTI_LIB, PROFCOST_TASKSET (e.g. 0-7: pin every run to these CPUs).
set -u
source "$(dirname "$0")/common.sh"
build_topo || die "build failed (see $OUT/build.log)"
need PROFILER_SO
PROFCOST_BIN=${PROFCOST_BIN:-$(dirname "$CALIBRATE_BIN")/topo-profiler-cost}
if [ ! -x "$PROFCOST_BIN" ]; then alt=$(find_built topo-profiler-cost); [ -n "$alt" ] && PROFCOST_BIN=$alt; fi
[ -x "$PROFCOST_BIN" ] || die "topo-profiler-cost not built ($PROFCOST_BIN): needs CUDA and NCCL at configure time"
machine_info
n=$(gpu_count)
[ "$n" -ge 1 ] || die "no GPU visible"

d="$OUT/profcost"
rm -rf "$d"
mkdir -p "$d"
raw="$d/raw.txt"
notes="$d/notes.txt"
res="$OUT/profiler_cost.txt"
: >"$raw"
: >"$notes"
note() { echo "$*" >>"$notes"; log "profiler_cost: $*"; }

# ---- which NCCL, CUPTI and inspector ---------------------------------------------------------
ndir=${PROFCOST_NCCL_DIR:-$(torch_nccl_dir)}
ld_env=()
if [ -n "$ndir" ] && [ -e "$ndir/libnccl.so.2" ]; then
  ld_env=("LD_LIBRARY_PATH=$ndir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  note "NCCL: $ndir/libnccl.so.2 ($(nccl_version_of "$ndir/libnccl.so.2")) through LD_LIBRARY_PATH"
else
  note "NCCL: the library topo-profiler-cost was linked with (no PyTorch NCCL found)"
fi

cupti=${PROFCOST_CUPTI_LIB:-}
if [ -z "$cupti" ]; then
  nv=${ndir:+$(dirname "$(dirname "$ndir")")}
  for c in /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13 /usr/local/cuda/lib64/libcupti.so.13 \
           /usr/local/cuda/targets/x86_64-linux/lib/libcupti.so.13 \
           $( [ -n "$nv" ] && [ -d "$nv" ] && find "$nv" -maxdepth 3 -name 'libcupti.so.13*' 2>/dev/null | head -n 1) \
           $(ldconfig -p 2>/dev/null | awk '/libcupti\.so\.13 / {print $NF}' | head -n 1); do
    [ -e "$c" ] && { cupti=$c; break; }
  done
fi
note "CUPTI for topo-cupti: ${cupti:-not found here: the profiler tries libcupti.so.13 / libcupti.so itself}"

inspector=${INSPECTOR_SO:-}
if [ -z "$inspector" ]; then
  for dir in "$GPU_BUILD" ${ndir:+"$(dirname "$(dirname "$ndir")")"} /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib \
             /usr/local/cuda/lib64 /opt "$HOME"; do
    [ -d "$dir" ] || continue
    inspector=$(find "$dir" -maxdepth 6 -name 'libnccl-profiler-inspector*.so*' -type f 2>/dev/null | head -n 1)
    [ -n "$inspector" ] && break
  done
fi
configs=(off topo-default topo-cupti topo-full)
if [ -n "$inspector" ] && [ -e "$inspector" ]; then
  configs+=(inspector)
  note "inspector: $inspector"
else
  note "inspector: no libnccl-profiler-inspector.so on this machine (searched the build, PyTorch's nvidia/, /usr/lib*, /usr/local, /opt, \$HOME; set INSPECTOR_SO): not measured"
fi
if [ "$n" -gt 1 ]; then
  note "one process drives $n ranks: the profiler counts operations process-wide, so with the default 1-in-32 sampling one AllReduce in $(( 32 / n > 0 ? 32 / n : 1 )) gets kernel-channel events on one rank (one process per GPU: 1 in 32 on every rank at once); topo-default here is pessimistic by up to ${n}x for the sampled part"
fi

# ---- one run ----------------------------------------------------------------------------------
# Every TOPO_* and profiler variable of the caller's environment is dropped, so "default" is the
# built-in default.
clean_env=(-u NCCL_PROFILER_PLUGIN -u NCCL_TUNER_PLUGIN -u NCCL_DEBUG_FILE -u NCCL_ALGO -u NCCL_PROTO)
for v in $(env | awk -F= '/^(TOPO_|NCCL_INSPECTOR_)/ {print $1}'); do clean_env+=(-u "$v"); done
pin=()
[ -n "${PROFCOST_TASKSET:-}" ] && command -v taskset >/dev/null && pin=(taskset -c "$PROFCOST_TASKSET")
failed=0

run_one() { # config round
  local cfg=$1 r=$2 tdir="$d/traces-$1-r$2" log="$d/$1-r$2.log" out="$d/$1-r$2.out" rc t0 cfg_env=()
  case $cfg in
    off) ;;
    topo-default) cfg_env=(NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$tdir") ;;
    topo-cupti) cfg_env=(NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$tdir" TOPO_PROFILER_CUPTI=1
                         ${cupti:+TOPO_PROFILER_CUPTI_LIB="$cupti"}) ;;
    topo-full) cfg_env=(NCCL_PROFILER_PLUGIN="$PROFILER_SO" TOPO_PROFILER_DIR="$tdir" TOPO_PROFILER_SAMPLE=1) ;;
    inspector) cfg_env=(NCCL_PROFILER_PLUGIN="$inspector" NCCL_INSPECTOR_ENABLE=1 NCCL_INSPECTOR_DUMP_THREAD_ENABLE=0
                        NCCL_INSPECTOR_DUMP_DIR="$tdir") ;;
  esac
  t0=$(date +%s)
  # NCCL's INFO lines go to stdout with the results: the results are picked out by their label.
  # INIT,ENV only: nothing is logged per collective.
  # shellcheck disable=SC2086
  env "${clean_env[@]}" "${ld_env[@]}" NCCL_NVLS_ENABLE=0 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "${cfg_env[@]}" \
    timeout -k 5 "$(inner_timeout 60)" "${pin[@]}" "$PROFCOST_BIN" --config "$cfg" ${PROFCOST_ARGS:-} \
    >"$out" 2>"$log"
  rc=$?
  grep -E "^$cfg eager_all_reduce [0-9]+ " "$out" >>"$raw"
  local loaded ntr bytes
  loaded=$(grep -h -m1 -E 'PROFILER/Plugin: Loaded' "$out" "$log" | sed 's/.*PROFILER/PROFILER/')
  ntr=$(find "$tdir" -type f 2>/dev/null | wc -l)
  bytes=$(du -sk "$tdir" 2>/dev/null | awk '{print $1}')
  echo "run $cfg round $r: exit $rc, $(( $(date +%s) - t0 )) s, ${loaded:-no profiler loaded}, $ntr output file(s) ${bytes:-0} KB" >>"$notes"
  [ "$r" = 1 ] && grep -h -m1 -E 'topo-profiler-cost: NCCL version' "$log" | sed "s/^topo-profiler-cost/$cfg/" >>"$notes"
  grep -h -E 'NCCL WARN|topo-profiler-cost: (error|warning)' "$out" "$log" | head -n 3 | sed "s/^/  $cfg r$r: /" >>"$notes"
  if [ "$cfg" = topo-cupti ] && ! find "$tdir" -name '*cupti*' 2>/dev/null | grep -q .; then
    echo "  topo-cupti r$r: NO CUPTI TRACE: CUPTI did not run, this figure is the default configuration's" >>"$notes"
  fi
  case $cfg in
    off) [ -n "$loaded" ] && echo "  off r$r: a profiler was loaded anyway: $loaded" >>"$notes" ;;
    *) [ -z "$loaded" ] && echo "  $cfg r$r: NCCL did not log 'PROFILER/Plugin: Loaded': check $log" >>"$notes" ;;
  esac
  [ "$rc" -ne 0 ] && failed=1
  rm -rf "$tdir" # 64 B per collective and rank: tens of MB per run
  return 0
}

# ---- rounds -----------------------------------------------------------------------------------
budget=${PROFCOST_BUDGET:-140}
if [ -n "${STEP_LIMIT:-}" ] && [ $(( STEP_LIMIT - 20 )) -lt "$budget" ]; then budget=$(( STEP_LIMIT - 20 )); fi
min_rounds=${PROFCOST_ROUNDS:-3}
max_rounds=${PROFCOST_MAX_ROUNDS:-5}
[ "$max_rounds" -lt "$min_rounds" ] && max_rounds=$min_rounds
start=$(date +%s)
rounds=0
last=0
k=${#configs[@]}
while [ "$rounds" -lt "$max_rounds" ]; do
  spent=$(( $(date +%s) - start ))
  if [ "$rounds" -gt 0 ] && [ $(( spent + last + last / 10 )) -gt "$budget" ]; then
    [ "$rounds" -lt "$min_rounds" ] && note "budget ${budget}s: stopped after $rounds round(s) of $min_rounds (a round takes ${last}s; PROFCOST_ARGS=\"--reps 5\" shortens it)"
    break
  fi
  r0=$(date +%s)
  rounds=$(( rounds + 1 ))
  for (( j = 0; j < k; j++ )); do
    run_one "${configs[$(( (j + rounds - 1) % k ))]}" "$rounds"
  done
  last=$(( $(date +%s) - r0 ))
  log "profiler_cost: round $rounds in ${last}s"
done
total=$(( $(date +%s) - start ))
note "$rounds round(s) of ${configs[*]} in ${total}s (budget ${budget}s; at least $min_rounds, at most $max_rounds rounds)"

# ---- summary ----------------------------------------------------------------------------------
"$PROFCOST_BIN" --summarize --baseline off --check topo-default "$raw" >"$d/summary.txt" 2>&1
src=$?
{
  echo "# profiler cost, $(date -u '+%F %T UTC'), $n GPU(s): $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)"
  echo "# eager AllReduce (float, sum), one process drives every GPU; per batch: N calls timed by CUDA events on GPU 0 / N"
  sed 's/^/# /' "$notes"
  echo
  cat "$d/summary.txt"
  echo
  echo "# raw: config op bytes median_us min_us max_us (one line per size, run and round)"
  cat "$raw"
} >"$res"
cat "$d/summary.txt" >&2
[ "$failed" -ne 0 ] && { log "profiler_cost: a run failed (see $d/*.log)"; exit 1; }
exit $src

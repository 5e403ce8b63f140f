#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Shared by every tests/gpu/ script (source it): where the build and the binaries are, where NCCL
# lives (PyTorch's pip NCCL and the system's), the environment every GPU run needs, and small
# helpers. Paths of other components' binaries are guesses centralised here: fix them in one
# place. Every variable can be overridden from the environment.
#
#   GPU_SRC        repository root (default: two levels above this file)
#   GPU_BUILD      build directory (default: $GPU_SRC/build-gpu; built with cmake+ninja if needed)
#   OUT             results directory (default: ./gpu-results)
#   PYTHON          python3 with torch (default: python3)
#   NGPUS           GPUs to use (default: all visible)

set -o pipefail

GPU_SRC=${GPU_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
GPU_BUILD=${GPU_BUILD:-$GPU_SRC/build-gpu}
OUT=${OUT:-$PWD/gpu-results}
PYTHON=${PYTHON:-python3}
GPU_DIR="$GPU_SRC/tests/gpu"
mkdir -p "$OUT"

# Never enable NVLS on the test machines; never touch clocks, power or MIG.
export NCCL_NVLS_ENABLE=0

# ---- binaries of the build (one CMake build makes them all) ---------------------------------
TUNER_SO=${TUNER_SO:-$GPU_BUILD/tuner-plugin/libtopo-tuner.so}
PROFILER_SO=${PROFILER_SO:-$GPU_BUILD/profiler-plugin/libtopo-profiler.so}
REPORT_BIN=${REPORT_BIN:-$GPU_BUILD/tools/report/topo-report}
TUNE_BIN=${TUNE_BIN:-$GPU_BUILD/tools/tune/topo-tune}
CALIBRATE_BIN=${CALIBRATE_BIN:-$GPU_BUILD/tools/calibrate/topo-calibrate}
DEMO_BIN=${DEMO_BIN:-$GPU_BUILD/tools/demo/topo-demo}
NVTX_CAPTURE_SO=${NVTX_CAPTURE_SO:-$GPU_BUILD/tests/nvtx/libtopo_nvtx_capture.so}

log() { echo "[$(date +%H:%M:%S)] $*" >&2; }

# Seconds for a job inside a script: its default, but never past the limit run_all.sh gave the
# whole step (STEP_LIMIT), so nothing outlives its step and overlaps the next one on the GPUs.
inner_timeout() {
  local t=$1
  if [ -n "${STEP_LIMIT:-}" ] && [ $(( STEP_LIMIT - 10 )) -lt "$t" ]; then t=$(( STEP_LIMIT - 10 )); fi
  [ "$t" -lt 10 ] && t=10
  echo "$t"
}
die() { echo "error: $*" >&2; exit 1; }

# First file under the build named like $1 when the guessed path is wrong (prints nothing if none).
find_built() { find "$GPU_BUILD" -name "$1" -type f 2>/dev/null | head -n 1; }

# Resolve every binary: the guessed path, else a file of that name anywhere in the build.
resolve_binaries() {
  local v name alt
  for v in TUNER_SO PROFILER_SO REPORT_BIN TUNE_BIN CALIBRATE_BIN DEMO_BIN NVTX_CAPTURE_SO; do
    name=$(basename "${!v}")
    if [ ! -e "${!v}" ]; then
      alt=$(find_built "$name")
      [ -n "$alt" ] && printf -v "$v" '%s' "$alt"
    fi
  done
  [ -e "$NVTX_CAPTURE_SO" ] || { alt=$(find_built 'libtopo*nvtx*capture*.so'); [ -n "$alt" ] && NVTX_CAPTURE_SO=$alt; }
  export TUNER_SO PROFILER_SO REPORT_BIN TUNE_BIN CALIBRATE_BIN DEMO_BIN NVTX_CAPTURE_SO
}

# Require binaries by variable name, one clear line for the first missing one.
need() {
  local v
  for v in "$@"; do
    [ -e "${!v}" ] || die "$v not found (${!v}); build topo (bash tests/gpu/common.sh build) or set $v"
  done
}

# ---- NCCL: PyTorch's pip package (2.28.9) and the system's (2.28.3) ---------------------------
# Directory of PyTorch's libnccl.so.2 (nvidia-nccl-cu13), empty if none.
torch_nccl_dir() {
  "$PYTHON" - <<'EOF' 2>/dev/null
import os, glob
try:
    import nvidia.nccl as m
    for p in list(getattr(m, "__path__", [])) + ([os.path.dirname(m.__file__)] if getattr(m, "__file__", None) else []):
        for cand in (os.path.join(p, "lib"), p):
            if glob.glob(os.path.join(cand, "libnccl.so*")):
                print(cand); raise SystemExit
except ImportError:
    pass
import site, sys
for base in site.getsitepackages() + [site.getusersitepackages()]:
    for f in glob.glob(os.path.join(base, "nvidia", "**", "libnccl.so.2"), recursive=True):
        print(os.path.dirname(f)); raise SystemExit
EOF
}

# The system's libnccl.so.2: system directories first (/usr/lib*, where the distribution's NCCL
# lives), then the ldconfig cache; never PyTorch's pip copy. Empty if none.
system_nccl_lib() {
  local tdir c f
  tdir=$(torch_nccl_dir)
  tdir=${tdir:+$(readlink -f "$tdir")}
  for c in /usr/lib/x86_64-linux-gnu/libnccl.so.2 /usr/lib64/libnccl.so.2 /usr/lib/libnccl.so.2 \
           /usr/local/lib/libnccl.so.2 $(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 / {print $NF}'); do
    [ -e "$c" ] || continue
    f=$(readlink -f "$c")
    [ -n "$tdir" ] && [ "$(dirname "$f")" = "$tdir" ] && continue
    echo "$f"
    return
  done
}

# "major.minor.patch" of a libnccl.so.2 (ncclGetVersion through ctypes), empty on failure.
nccl_version_of() {
  "$PYTHON" - "$1" <<'EOF' 2>/dev/null
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
v = ctypes.c_int()
lib.ncclGetVersion(ctypes.byref(v))
v = v.value
print(f"{v // 10000}.{v // 100 % 100}.{v % 100}" if v >= 10000 else f"{v // 1000}.{v // 100 % 10}.{v % 100}")
EOF
}

# ---- build ----------------------------------------------------------------------------------
# Configure and build into $GPU_BUILD (once; cmake keeps it incremental). NCCL for the build:
# PyTorch's when its include/ has nccl.h, else what CMake finds (/usr/local/cuda).
build_topo() {
  local ndir root args=()
  if [ ! -f "$GPU_BUILD/build.ninja" ] && [ ! -f "$GPU_BUILD/Makefile" ]; then
    ndir=$(torch_nccl_dir)
    if [ -n "$ndir" ]; then
      root=$(dirname "$ndir")
      [ -f "$root/include/nccl.h" ] && args+=("-DTOPO_NCCL_ROOT=$root")
    fi
    log "configuring topo in $GPU_BUILD ${args[*]}"
    local gen=()
    command -v ninja >/dev/null && gen=(-G Ninja)
    # Tests need cmocka; without it, configure again without tests (the NVTX capture library
    # then comes from nvtx.sh's fallback).
    if ! cmake -S "$GPU_SRC" -B "$GPU_BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=ON "${args[@]}" \
      >"$OUT/build-configure.log" 2>&1; then
      log "configure with tests failed (cmocka missing?); configuring without tests"
      rm -rf "$GPU_BUILD"
      cmake -S "$GPU_SRC" -B "$GPU_BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF "${args[@]}" \
        >>"$OUT/build-configure.log" 2>&1 || { tail -30 "$OUT/build-configure.log" >&2; return 1; }
    fi
  fi
  log "building topo"
  cmake --build "$GPU_BUILD" -j "$(nproc)" >"$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log" >&2; return 1; }
  resolve_binaries
}

# GPUs visible (nvidia-smi, else torch), 0 when none.
gpu_count() {
  if [ -n "${NGPUS:-}" ]; then echo "$NGPUS"; return; fi
  local n
  n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ -z "$n" ] || [ "$n" = 0 ]; then
    n=$("$PYTHON" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
  fi
  echo "${n:-0}"
}

# Record the machine once per results directory.
machine_info() {
  [ -f "$OUT/machine.txt" ] && return
  {
    date -u
    uname -a
    nvidia-smi 2>&1 | head -25
    nvidia-smi topo -m 2>&1 | head -20
    echo "torch NCCL dir: $(torch_nccl_dir)"
    "$PYTHON" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())' 2>&1
    echo "system NCCL: $(system_nccl_lib) $(nccl_version_of "$(system_nccl_lib)")"
  } >"$OUT/machine.txt" 2>&1
}

resolve_binaries

if [ "${1:-}" = build ] && [ "${BASH_SOURCE[0]}" = "$0" ]; then
  build_topo
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build and run every test that needs no GPU. Usage: bash scripts/test.sh [build-dir] [cmake args...]
# TOPO_TEST_SANITIZE=address,undefined builds into build-asan with sanitizers instead.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build" -G Ninja -DTOPO_WERROR=ON "$@" >/dev/null
cmake --build "$build" -j "$jobs"
cd "$build"
ctest -LE gpu --output-on-failure -j "$jobs" --timeout 600

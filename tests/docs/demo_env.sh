#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs/man/topo-demo.md's ENVIRONMENT section names exactly the TOPO_* variables topo-demo sets
# (it prints them: "topo-demo: sets NAME=value ..."), with its CUPTI stand-in and with --cupti ''.
# Usage: demo_env.sh TOPO_DEMO PAGE.md
set -u
demo=$1 page=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/topo-demo-env-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
"$demo" --ranks 2 --steps 1 --out "$work/a" >"$work/a.out" 2>&1 || { cat "$work/a.out"; exit 1; }
"$demo" --ranks 2 --steps 1 --out "$work/b" --cupti '' >"$work/b.out" 2>&1 || { cat "$work/b.out"; exit 1; }
set_by_demo=$(sed -n 's/^topo-demo: sets //p' "$work/a.out" "$work/b.out" | tr ' ' '\n' | sed 's/=.*//' | sort -u)
documented=$(awk '/^## ENVIRONMENT/ { on = 1; next } /^## / { on = 0 } on' "$page" |
  grep -o 'TOPO_[A-Z_]*[A-Z]' | grep -vx 'TOPO_PROFILER\|TOPO_TUNER' | sort -u)
[ -n "$set_by_demo" ] || { echo "FAIL: topo-demo prints no 'sets' line"; cat "$work/a.out"; exit 1; }
if [ "$set_by_demo" != "$documented" ]; then
  echo "FAIL: topo-demo sets: $(echo $set_by_demo); $page documents: $(echo $documented)"
  exit 1
fi
echo "$page documents what topo-demo sets: $(echo $set_by_demo)"

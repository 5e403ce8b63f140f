#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A newcomer's first hour, as a script: README's main job (scripts/main.sh --cpu, the embedded
# default, on this build's tools), then every command and subcommand with good input (exit 0,
# output) and with bad input (exit 1, exactly one stderr line "NAME: error: ...") and misuse (exit
# 2, one line ending "(try --help)"). No line on stderr may carry a raw control byte.
# Usage: newcomer.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$(cd "$2" && pwd)
R=$build/tools/report/topo-report T=$build/tools/tune/topo-tune D=$build/tools/demo/topo-demo
work=$(mktemp -d "${TMPDIR:-/tmp}/topo-newcomer-XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fail=0 n=0
bad() { echo "FAIL: $*"; fail=1; }

# expect RC WHAT CMD...: the exit code, and for 1 and 2 the one stderr line of its kind.
expect() {
  want=$1 what=$2
  shift 2
  n=$((n + 1))
  "$@" >"$work/out" 2>"$work/err" </dev/null
  rc=$?
  lines=$(wc -l <"$work/err")
  [ "$rc" = "$want" ] || { bad "$what: exit $rc, want $want: $(head -3 "$work/err")"; return; }
  LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$work/err" && bad "$what: raw control bytes on stderr"
  case $want in
    0) [ -s "$work/out" ] || [ -n "${EXPECT_FILE:-}" ] || bad "$what: exit 0 with nothing on stdout" ;;
    1) [ "$lines" -eq 1 ] || bad "$what: $lines stderr lines, want one: $(cat "$work/err")"
       grep -q '^topo-[a-z-]*: error: ' "$work/err" || bad "$what: not an error line: $(cat "$work/err")" ;;
    2) [ "$lines" -eq 1 ] || bad "$what: $lines stderr lines, want one: $(cat "$work/err")"
       grep -q '^topo-[a-z-]*: .*(try --help)$' "$work/err" || bad "$what: not a misuse line: $(cat "$work/err")" ;;
  esac
  [ -n "${VERBOSE:-}" ] && echo "ok $what -> $rc $(head -1 "$work/err")"
  return 0
}

# README's first command, its embedded default (this build, not a fresh build-main).
(cd "$src" && MAIN_OUT=$work/run MAIN_BUILD=$build bash scripts/main.sh --cpu) >"$work/main.out" 2>"$work/main.err" \
  || { cat "$work/main.out" "$work/main.err"; bad "scripts/main.sh --cpu failed"; }
grep -q '^topo-report: 8 ranks from' "$work/main.out" || bad "main job: no 8-rank report"
[ -s "$work/run/report.html" ] || bad "main job: no report.html"
[ -s "$work/run/trace.json" ] || bad "main job: no Perfetto trace"
grep -q 'warning\|error' "$work/main.err" && bad "main job warns: $(head -2 "$work/main.err")"
traces=$work/run/traces
trace=$(ls "$traces"/topo-*-r0.trace | head -1)
mkdir -p "$work/empty" "$work/empty2"
printf 'root:x:0:0:root:/root:/bin/bash\n\033[31mred\233\n' >"$work/passwd"

# topo-report and each subcommand.
expect 0 "report" "$R" "$traces"
expect 0 "report --json" "$R" --json "$traces"
expect 0 "report --csv DIR" "$R" --csv "$work/csv" "$traces"
expect 0 "report --csv-table ranks" "$R" --csv-table ranks "$traces"
expect 0 "report --wide" "$R" --wide "$traces"
EXPECT_FILE=1 expect 0 "report -o" "$R" -o "$work/r.txt" "$traces"
expect 1 "report on a missing path" "$R" "$work/nope"
expect 1 "report on an empty directory" "$R" "$work/empty"
expect 1 "report on a file that is no trace (escape bytes)" "$R" "$work/passwd"
expect 1 "report --window outside the data" "$R" --window 1,2 "$traces"
expect 1 "report -o into a missing directory" "$R" -o "$work/nope/x" "$traces"
expect 2 "report without input" "$R"
expect 2 "report --json --csv-table" "$R" --json --csv-table ranks "$traces"
expect 2 "report --csv-table of no table" "$R" --csv-table nope "$traces"
expect 2 "report --bogus" "$R" --bogus "$traces"
expect 0 "report --gpu H200 (the busbw reference of the next steps)" "$R" --gpu H200 "$traces"
expect 1 "report --profile missing" "$R" --profile "$work/nope" "$traces"
expect 0 "dump" "$R" dump "$trace"
expect 1 "dump of no trace" "$R" dump "$work/passwd"
expect 2 "dump --csv" "$R" dump --csv "$trace"
expect 2 "dump of two files" "$R" dump "$trace" "$trace"
EXPECT_FILE=1 expect 0 "export" "$R" export --chrome "$work/c.json" "$traces"
expect 1 "export of a missing path" "$R" export --chrome "$work/c2.json" "$work/nope"
expect 1 "export of an empty directory" "$R" export --chrome "$work/c2.json" "$work/empty"
[ -e "$work/c2.json" ] && bad "export left a file behind with nothing to export"
expect 2 "export without --chrome" "$R" export "$traces"
expect 2 "export --window" "$R" export --window 1,2 --chrome "$work/c3.json" "$traces"
expect 0 "diff" "$R" diff "$traces" "$traces"
expect 1 "diff of two empty directories" "$R" diff "$work/empty" "$work/empty2"
expect 1 "diff with a missing side" "$R" diff "$traces" "$work/nope"
expect 2 "diff --json" "$R" diff --json "$traces" "$traces"
expect 2 "diff --csv" "$R" diff --csv "$traces" "$traces"
expect 2 "diff --html" "$R" diff --html "$work/d.html" "$traces" "$traces"
expect 2 "diff of one run" "$R" diff "$traces"
expect 0 "fit" "$R" fit --gpu H200 -o "$work/fit.profile" "$traces"
expect 1 "fit of no trace" "$R" fit -o "$work/fit2.profile" "$work/passwd"
expect 2 "fit without -o" "$R" fit "$traces"
expect 2 "fit --csv" "$R" fit --csv -o "$work/fit3.profile" "$traces"

# topo-tune, on the profile fitted above and on bad ones.
expect 0 "tune" "$T" --gpu H200 --nranks 8 --coll allreduce
expect 0 "tune on the fitted profile" "$T" --profile "$work/fit.profile" --gpu H200 --nranks 8 --coll allreduce
"$T" --verbose --profile "$work/fit.profile" --gpu H200 --nranks 8 --coll allreduce --min 16M --max 32M >"$work/tv" 2>/dev/null
grep -q '^  *topo [a-z]*/[a-z]*.*: \(at\|below\|above\|no measured point\)' "$work/tv" \
  || bad "tune --verbose shows no measured points under its rows: $(head -14 "$work/tv" | tail -3)"
expect 0 "tune --json" "$T" --json --gpu H200 --nranks 8 --coll allreduce
expect 1 "tune --profile missing" "$T" --profile "$work/nope" --nranks 8
expect 1 "tune --profile that is no profile" "$T" --profile "$work/passwd" --nranks 8
expect 1 "tune --profile /etc/passwd" "$T" --profile /etc/passwd --nranks 8
expect 2 "tune without --nranks" "$T" --gpu H200
expect 2 "tune --nranks x" "$T" --nranks x

# topo-demo.
expect 0 "demo" "$D" --ranks 2 --steps 1 --out "$work/demo"
expect 1 "demo --cupti missing" "$D" --ranks 2 --steps 1 --out "$work/demo2" --cupti "$work/typo.so"
expect 1 "demo --tuner missing" "$D" --ranks 2 --steps 1 --out "$work/demo2" --tuner "$work/typo.so"
expect 1 "demo --profiler missing" "$D" --ranks 2 --steps 1 --out "$work/demo2" --profiler "$work/typo.so"
expect 1 "demo into an unmakeable directory" "$D" --ranks 2 --steps 1 --out "$work/nope/x/y"
expect 2 "demo --ranks 1" "$D" --ranks 1
expect 2 "demo extra argument" "$D" extra
# a misspelt plugin variable is said (once) through the demo
TOPO_PROFILER_SAMPEL=1 "$D" --ranks 2 --steps 1 --out "$work/demo3" >/dev/null 2>"$work/err"
[ "$(grep -c 'TOPO/Profiler unknown variable TOPO_PROFILER_SAMPEL' "$work/err")" -eq 1 ] \
  || bad "demo: the profiler's warning about TOPO_PROFILER_SAMPEL is not shown once: $(cat "$work/err")"

[ $fail -eq 0 ] && echo "newcomer path: main job and $n command lines as expected"
exit $fail

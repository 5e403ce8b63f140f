#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `cmake --install` of this build into PREFIX (emptied first), then the installed layout checked
# and the installed tools run from there: every tool's --help/--version/misuse (cli_check.sh),
# topo-demo writing traces through the installed plugins, topo-report (text, JSON, HTML, Chrome
# export, dump) on them, topo-tune's decision map. The installed plugins are loaded through the
# plugin host by test_installed_plugins (which needs this test as its fixture).
# Every installed program has its man page under MANDIR/man1, and each renders (man -l, and groff
# with every warning on: no syntax warnings); the installed docs' links resolve (doc_links.sh).
# Usage: install_run.sh BUILD_DIR PREFIX VERSION BINDIR LIBDIR DOCDIR WITH_CALIBRATE(0|1) MANDIR
set -u
build=$1 prefix=$2 version=$3 bindir=$4 libdir=$5 docdir=$6 with_calibrate=$7 mandir=$8
here=$(cd "$(dirname "$0")" && pwd)
fail=0
bad() { echo "FAIL: $*"; fail=1; }

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" >"$prefix.log" 2>&1 || { cat "$prefix.log"; echo "FAIL: cmake --install"; exit 1; }
B=$prefix/$bindir L=$prefix/$libdir D=$prefix/$docdir

# Layout.
for f in "$L/libtopo-tuner.so" "$L/libtopo-profiler.so" "$B/topo-report" "$B/topo-tune" "$B/topo-demo" \
         "$D/README.md" "$D/docs/quickstart.md" "$D/docs/environment.md" "$D/docs/reading-the-report.md" \
         "$D/docs/man/topo-report.md"; do
  [ -f "$f" ] || bad "not installed: $f"
done
for pair in libnccl-tuner-topo.so:libtopo-tuner.so libnccl-profiler-topo.so:libtopo-profiler.so; do
  alias=${pair%%:*} target=${pair#*:}
  [ "$(readlink "$L/$alias")" = "$target" ] || bad "$L/$alias is not a link to $target"
done
if [ "$with_calibrate" = 1 ]; then
  [ -x "$B/topo-calibrate" ] || bad "topo-calibrate was built but is not installed"
else
  [ -e "$B/topo-calibrate" ] && bad "topo-calibrate installed though not built"
fi

# A man page per installed program, and each renders.
M=$prefix/$mandir/man1
programs="topo-report topo-tune topo-demo"
[ "$with_calibrate" = 1 ] && programs="$programs topo-calibrate topo-profiler-cost"
command -v groff >/dev/null 2>&1 || command -v man >/dev/null 2>&1 \
  || bad "neither groff nor man is installed: the man pages cannot be checked (apt-get install groff-base man-db)"
for p in $programs; do
  page=$M/$p.1
  [ -f "$page" ] || { bad "no man page $page (is go-md2man installed? see README)"; continue; }
  if command -v groff >/dev/null 2>&1; then
    groff -k -man -Tutf8 -ww -z "$page" >"$prefix/groff.err" 2>&1
    [ -s "$prefix/groff.err" ] && bad "$page: groff warns: $(head -2 "$prefix/groff.err")"
  fi
  if command -v man >/dev/null 2>&1; then
    MANWIDTH=80 man -l "$page" >"$prefix/man.out" 2>"$prefix/man.err" || bad "man -l $page fails: $(head -1 "$prefix/man.err")"
    grep -q '^NAME' "$prefix/man.out" && grep -q "^       $p " "$prefix/man.out" \
      || bad "man -l $page shows no NAME section naming $p"
    grep -q '^EXIT STATUS' "$prefix/man.out" || bad "man -l $page has no EXIT STATUS section"
  fi
done

# The installed documents' links resolve where they are installed.
sh "$here/../docs/doc_links.sh" "$D" >"$prefix/links.out" 2>&1 || { cat "$prefix/links.out"; bad "installed docs have dead links"; }

# Every installed tool keeps the command-line contract.
sh "$here/cli_check.sh" "$B/topo-tune" topo-tune "$version" "--nranks x" || fail=1
sh "$here/cli_check.sh" "$B/topo-report" topo-report "$version" "" "--html" || fail=1
sh "$here/cli_check.sh" "$B/topo-demo" topo-demo "$version" "--ranks 1" || fail=1
if [ "$with_calibrate" = 1 ]; then
  sh "$here/cli_check.sh" "$B/topo-calibrate" topo-calibrate "$version" "--gpus x" || fail=1
fi

# topo-demo from the prefix drives the installed plugins (it prints which it loaded).
work=$prefix/work
mkdir -p "$work"
(cd "$work" && "$B/topo-demo" --ranks 2 --steps 1 --out traces) >"$work/demo.out" 2>&1 || bad "topo-demo failed: $(cat "$work/demo.out")"
grep -q "profiler $L/libtopo-profiler.so\|profiler $B/[^ ]*/libtopo-profiler.so" "$work/demo.out" \
  || bad "topo-demo did not load the installed profiler: $(head -1 "$work/demo.out")"
grep -q "tuner $L/libtopo-tuner.so\|tuner $B/[^ ]*/libtopo-tuner.so" "$work/demo.out" \
  || bad "topo-demo did not load the installed tuner: $(head -1 "$work/demo.out")"
ntraces=$(ls "$work/traces" | grep -c '^topo-.*-r[0-9]*\.trace$')
[ "$ntraces" -eq 2 ] || bad "topo-demo wrote $ntraces rank traces, want 2"

# topo-report from the prefix on those traces.
"$B/topo-report" "$work/traces" >"$work/report.txt" 2>"$work/report.err" || bad "topo-report failed: $(cat "$work/report.err")"
grep -q '^topo-report: 2 ranks from' "$work/report.txt" || bad "report: no '2 ranks' summary line"
grep -q 'AllReduce' "$work/report.txt" || bad "report: no AllReduce row"
"$B/topo-report" --json "$work/traces" >"$work/report.json" 2>/dev/null || bad "topo-report --json failed"
grep -q "\"$version\"" "$work/report.json" || bad "report JSON does not carry the version $version"
"$B/topo-report" --html "$work/report.html" "$work/traces" >/dev/null 2>&1 || bad "topo-report --html failed"
grep -q '<svg' "$work/report.html" || bad "HTML report has no SVG"
"$B/topo-report" export --chrome "$work/chrome.json" "$work/traces" >/dev/null 2>&1 || bad "topo-report export --chrome failed"
grep -q '"traceEvents"' "$work/chrome.json" || bad "Chrome export has no traceEvents"
first=$(ls "$work/traces"/topo-*-r0.trace | head -1)
"$B/topo-report" dump "$first" >"$work/dump.jsonl" 2>/dev/null || bad "topo-report dump failed"
grep -q "$version" "$work/dump.jsonl" || bad "dump: the trace header does not carry $version"

# topo-tune from the prefix.
"$B/topo-tune" --gpu H200 --nranks 8 --coll allreduce >"$work/tune.txt" 2>&1 || bad "topo-tune failed"
grep -q "^topo-tune $version" "$work/tune.txt" || bad "topo-tune's map does not name version $version"

[ $fail -eq 0 ] && echo "installed into $prefix: layout, tools and plugins as expected"
exit $fail

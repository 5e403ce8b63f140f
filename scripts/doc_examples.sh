#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The worked examples of docs/ are what the demo prints. A fenced block right after a line
#   <!-- demo-example: FROM_REGEX .. TO_REGEX -->
# holds the lines of `topo-report` on the traces of `topo-demo` (its default 14 steps: one CUPTI
# window of whole steady steps) from the first line that matches FROM_REGEX (awk) to the next
# that matches TO_REGEX, verbatim. "demo-shape:" instead of
# "demo-example:" marks a block whose figures hang on the CPU's timing (start skew and stragglers
# from enqueue times, which a loaded machine moves by milliseconds): its lines without digits
# (titles, column headers) are checked, in order, and its figures only rewritten by --write.
#   doc_examples.sh BUILD_DIR --write DOC.md...   runs the demo and rewrites those blocks
#   doc_examples.sh BUILD_DIR --check DOC.md...   fails (exit 1) naming each block that differs
# The demo paces its events in real time, so measured times move a little from run to run: the
# check wants every word and every whole number (counts) equal, and every decimal or percentage
# within 25 % of the document's (a time within 25 % or 1 ms, its unit free; an error after ±,
# itself the spread of the few steps the window happened to hold, within 50 % or 1 ms), a
# percentage within 2 points (a wrong figure, 182.8 ms for 89.9, still fails), and "n/a" where
# the document has it. CTest runs --check on docs/reading-the-report.md (tests/docs).
# A busy machine: topo-demo says when its events ran behind the model's time (over 2 ms); the
# figures that hang on real time then move beyond these bounds. A check that fails on such a run
# is run again on a fresh demo, three runs at most; a failure on a run that kept its pace, or on
# three busy runs in a row, fails.
set -eu
build=$1 mode=$2
shift 2
work=$(mktemp -d "${TMPDIR:-/tmp}/topo-doc-examples-XXXXXX")
trap 'rm -rf "$work"' EXIT
demo_run() {
  rm -rf "$work/traces"
  "$build/tools/demo/topo-demo" --out "$work/traces" >"$work/demo.out" 2>&1 \
    || { cat "$work/demo.out"; echo "doc_examples: topo-demo failed" >&2; exit 1; }
  "$build/tools/report/topo-report" "$work/traces" >"$work/report.txt" 2>"$work/report.err" \
    || { cat "$work/report.err"; echo "doc_examples: topo-report failed" >&2; exit 1; }
}

# The report's lines FROM .. TO (regexes).
excerpt() {
  awk -v from="$1" -v to="$2" '!on && $0 ~ from { on = 1 } on { print } on && $0 ~ to { exit }' "$work/report.txt"
}

check_all() {
fail=0
for doc in "$@"; do
  out=$work/doc.new
  : >"$out"
  n=0
  while IFS= read -r line || [ -n "$line" ]; do
    printf '%s\n' "$line" >>"$out"
    case $line in
      '<!-- demo-example: '*' .. '*' -->') shape=0 ;;
      '<!-- demo-shape: '*' .. '*' -->') shape=1 ;;
      *) continue ;;
    esac
    spec=${line#'<!-- demo-'*': '}
    spec=${spec%' -->'}
    from=${spec%% .. *} to=${spec#* .. }
    IFS= read -r fence
    printf '%s\n' "$fence" >>"$out"
    : >"$work/old"
    while IFS= read -r l && [ "$l" != '```' ]; do printf '%s\n' "$l" >>"$work/old"; done
    excerpt "$from" "$to" >"$work/new"
    n=$((n + 1))
    [ -s "$work/new" ] || { echo "FAIL: $doc: the report has no lines $from .. $to"; fail=1; }
    if [ "$mode" = --write ]; then cat "$work/new" >>"$out"; else cat "$work/old" >>"$out"; fi
    printf '%s\n' '```' >>"$out"
    [ "$mode" = --check ] || continue
    if [ $shape = 1 ]; then
      grep -v '[0-9]' "$work/old" >"$work/old.shape" || true
      grep -v '[0-9]' "$work/new" >"$work/new.shape" || true
      cmp -s "$work/old.shape" "$work/new.shape" \
        || { echo "FAIL: $doc, block $from: its titles and headers differ from the demo's:"; diff "$work/old.shape" "$work/new.shape"; fail=1; }
      continue
    fi
    awk -v doc="$doc" -v what="$from" '
      function num(t) { gsub(/[^0-9.]/, "", t); return t + 0 }
      function decimal(t) { return t ~ /^[~±(+-]*[0-9]*\.[0-9]+[%x)]*$/ || t ~ /^[(+-]*[0-9]+%[)]*$/ }
      function scale(u) { return u == "ns" ? 1 : u == "us" ? 1e3 : u == "ms" ? 1e6 : u == "s" ? 1e9 : 0 }
      # the words of a line, a time and its unit made one word "T<prefix>|<ns>"
      function words(line, w,   t, n, k, i) {
        n = split(line, t, /[ \t]+/); k = 0
        for (i = 1; i <= n; i++) {
          if (i < n && decimal(t[i]) && scale(t[i + 1]) > 0) {
            p = t[i]; sub(/[0-9.].*$/, "", p)
            w[++k] = "T" p "|" num(t[i]) * scale(t[i + 1]); i++
          } else w[++k] = t[i]
        }
        return k
      }
      NR == FNR { old[FNR] = $0; nold = FNR; next }
      {
        nnew = FNR
        if (FNR > nold) next
        no = words(old[FNR], a); nn = words($0, b)
        bad = no != nn
        for (i = 1; i <= no && !bad; i++) {
          if (a[i] == b[i]) continue
          if (a[i] ~ /^T/ && b[i] ~ /^T/) { # times: 25 % (an error after ±: 50 %) or 1 ms
            split(a[i], pa, "|"); split(b[i], pb, "|")
            x = pa[2] + 0; y = pb[2] + 0; m = x > y ? x : y
            tol = (pa[1] ~ /±/ ? 0.5 : 0.25) * m
            if (tol < 1e6) tol = 1e6
            bad = pa[1] != pb[1] || (x > y ? x - y : y - x) > tol + 1e-9
          } else if (decimal(a[i]) && decimal(b[i])) {
            x = num(a[i]); y = num(b[i])
            tol = a[i] ~ /%/ ? 2 : 0.25 * (x > y ? x : y)
            bad = (x > y ? x - y : y - x) > tol + 1e-9
          } else bad = 1
        }
        if (bad) { printf "FAIL: %s, block %s, line %d:\n  doc:  %s\n  demo: %s\n", doc, what, FNR, old[FNR], $0; failed = 1 }
      }
      END {
        if (nnew != nold) { printf "FAIL: %s, block %s: %d lines in the doc, %d from the demo\n", doc, what, nold, nnew; failed = 1 }
        exit failed
      }' "$work/old" "$work/new" || fail=1
  done <"$doc"
  [ $n -gt 0 ] || { echo "FAIL: $doc has no demo-example block"; fail=1; }
  [ "$mode" = --write ] && cp "$out" "$doc" && echo "$doc: $n blocks written"
done
}

for run in 1 2 3; do
  demo_run
  check_all "$@" >"$work/check.out" || true
  busy=$(grep "a busy machine" "$work/demo.out" || true)
  [ $fail -ne 0 ] && [ -n "$busy" ] && [ "$mode" = --check ] && [ $run -lt 3 ] || break
  echo "doc_examples: run $run differs on a busy machine (${busy#*: }); again on a fresh demo"
done
cat "$work/check.out"
[ -n "$busy" ] && echo "doc_examples: ${busy#*: }"
[ "$mode" = --check ] && [ $fail -eq 0 ] && echo "$*: every demo-example block matches topo-demo"
exit $fail

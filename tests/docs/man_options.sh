#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A tool's page in docs/man/ documents every long option its --help names, and shows examples.
# Usage: man_options.sh TOOL PAGE.md
set -u
tool=$1 page=$2
[ -f "$page" ] || { echo "FAIL: no page $page"; exit 1; }
fail=0
opts=$("$tool" --help | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
[ -n "$opts" ] || { echo "FAIL: $tool --help names no option"; exit 1; }
for o in $opts; do
  grep -q -- "\`$o[\` ]" "$page" || { echo "FAIL: $page does not document $o"; fail=1; }
done
grep -q '^## EXAMPLES' "$page" || { echo "FAIL: $page has no EXAMPLES section"; fail=1; }
[ $fail -eq 0 ] && echo "$page documents all $(echo "$opts" | wc -l) options of $(basename "$tool") --help"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The command-line contract every topo tool keeps:
#   TOOL --help        exit 0, the usage and at least one example on stdout, nothing on stderr
#   TOOL --version     exit 0, "NAME VERSION" on stdout (the version from git)
#   TOOL <misuse>      exit != 0, nothing on stdout, exactly one line on stderr naming the tool
# Usage: cli_check.sh TOOL NAME VERSION [MISUSE ...]   (each MISUSE is one word-split argument list;
# `--no-such-option` is always tried)
set -u
tool=$1 name=$2 version=$3
shift 3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/topo-cli-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $name: $*"; fail=1; }

"$tool" --help >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || bad "--help exits $rc"
[ -s "$tmp/err" ] && bad "--help writes to stderr: $(head -1 "$tmp/err")"
grep -qi '^usage' "$tmp/out" || bad "--help has no usage line"
grep -qi '^examples\?:\?$' "$tmp/out" || bad "--help has no Examples section"
grep -q "^  $name " "$tmp/out" || bad "--help shows no example command line '  $name ...'"

"$tool" --version >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || bad "--version exits $rc"
grep -q "^$name $version\\( \\|\$\\)" "$tmp/out" || bad "--version prints '$(head -1 "$tmp/out")', want '$name $version'"

for misuse in --no-such-option "$@"; do
  # shellcheck disable=SC2086
  "$tool" $misuse >"$tmp/out" 2>"$tmp/err"
  rc=$?
  [ $rc -ne 0 ] || bad "'$misuse' exits 0"
  [ -s "$tmp/out" ] && bad "'$misuse' writes to stdout"
  n=$(wc -l <"$tmp/err")
  [ "$n" -eq 1 ] || bad "'$misuse' writes $n lines to stderr, want one"
  grep -q "^$name: " "$tmp/err" || bad "'$misuse': message does not start with '$name: ': $(head -1 "$tmp/err")"
  echo "$name $misuse -> $rc: $(head -1 "$tmp/err")"
done
[ $fail -eq 0 ] && echo "$name: --help, --version and misuse as expected"
exit $fail

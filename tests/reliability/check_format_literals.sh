#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every call through NCCL's logger pointer (ncclDebugLogger_t has no format attribute, so the
# compiler cannot check it) must pass a string literal as its format (5th argument); every other
# printf-like call is checked by -Wformat=2 (-Wformat-nonliteral, -Wformat-security) -Werror.
# Usage: check_format_literals.sh SOURCE_DIR
cd "$1" || exit 2
dirs=""
for d in common tuner-plugin profiler-plugin tools; do [ -d "$d" ] && dirs="$dirs $d"; done
hits=$(grep -rnE '(^|[^_[:alnum:]])(logger|->logger)[[:space:]]*\(' --include='*.c' $dirs)
[ $? -le 1 ] || exit 2
bad=$(printf '%s\n' "$hits" | grep . | grep -vE 'logger[[:space:]]*\(([^,]*,){4}[[:space:]]*"')
if [ -n "$bad" ]; then
  echo "calls through the logger without a literal format:"
  echo "$bad"
  exit 1
fi
n=$(printf '%s\n' "$hits" | grep -c .)
echo "$n call(s) through NCCL's logger, all with a literal format"
[ "$n" -ge 1 ]

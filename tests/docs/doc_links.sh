#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every relative Markdown link in README.md and docs/ (recursively) points at an existing file.
# Usage: doc_links.sh SOURCE_DIR
set -u
cd "$1" || exit 1
fail=0 n=0
for f in README.md $(find docs -name '*.md' | sort); do
  dir=$(dirname "$f")
  for target in $(grep -o '](\([^)#]*\))' "$f" | sed 's/^](//; s/)$//'); do
    case $target in http://*|https://*|mailto:*|'') continue ;; esac
    n=$((n + 1))
    [ -e "$dir/$target" ] || { echo "FAIL: $f links to $target, which does not exist"; fail=1; }
  done
done
[ $fail -eq 0 ] && echo "$n relative links, all resolve"
exit $fail

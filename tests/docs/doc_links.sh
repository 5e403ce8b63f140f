#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every relative Markdown link in README.md and docs/ (recursively) points at an existing file,
# and every #anchor (in the same file or another .md) at one of that file's headings, spelt as
# GitHub spells heading anchors (lower case, punctuation dropped, spaces as '-'). Run on the
# source tree and on the installed share/doc/topo (tests/install).
# Usage: doc_links.sh DIR   (DIR holds README.md and docs/)
set -u
cd "$1" || exit 1
fail=0 n=0 na=0

# The anchors of a Markdown file's headings, one a line (code blocks skipped).
anchors() {
  awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ +/, ""); print }' "$1" |
    tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

for f in README.md $(find docs -name '*.md' | sort); do
  dir=$(dirname "$f")
  for link in $(grep -o '](\([^) ]*\))' "$f" | sed 's/^](//; s/)$//'); do
    case $link in http://*|https://*|mailto:*|'') continue ;; esac
    target=${link%%#*} anchor=""
    case $link in *'#'*) anchor=${link#*#} ;; esac
    if [ -n "$target" ]; then
      n=$((n + 1))
      [ -e "$dir/$target" ] || { echo "FAIL: $f links to $target, which does not exist"; fail=1; continue; }
      file=$dir/$target
    else
      file=$f
    fi
    [ -n "$anchor" ] || continue
    na=$((na + 1))
    case $file in *.md) ;; *) continue ;; esac
    anchors "$file" | grep -qxF "$anchor" \
      || { echo "FAIL: $f links to $link: $file has no heading with anchor #$anchor"; fail=1; }
  done
done
[ $fail -eq 0 ] && echo "$n relative links and $na anchors, all resolve"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# One page of docs/man/*.md as a roff man page, at build time (cmake/man.cmake): go-md2man (Debian
# package go-md2man) converts the Markdown; this script then gives the page its .TH line (name,
# section 1, the version) and lets the last column of every table take the rest of the line, so
# that its text blocks wrap there and the page reads at 80 columns.
# Usage: md2man.sh GO_MD2MAN PAGE.md OUT.1 VERSION
set -eu
md2man=$1 in=$2 out=$3 version=$4
name=$(basename "$in" .md)
upper=$(echo "$name" | tr a-z A-Z)
# Before: a link is its text (a man page cannot follow it; the texts name the files), and a
# table's escaped '\|' is kept from splitting the cell.
sed -e 's/\[\([^]]*\)\]([^)]*)/\1/g' -e 's/\\|/@@BAR@@/g' "$in" >"$out.md"
"$md2man" -in "$out.md" -out "$out.tmp"
rm -f "$out.md"
awk -v th=".TH $upper 1 \"\" \"topo $version\" \"topo manual\"" '
  function cells(line, from,   n, c, i, o) {     # wrap cells from `from` on in text blocks
    n = split(line, c, "\t")
    o = ""
    for (i = 1; i <= n; i++) {
      if (i < from || c[i] == "T{" || c[i] == "T}") o = o (i > 1 ? "\t" : "") c[i]
      else o = o (i > 1 ? "\t" : "") "T{\n" c[i] "\nT}"
    }
    return o
  }
  /^\.TH / && !titled { print th; titled = 1; next }
  /^\.TS$/ { print; ts = 1; body = 0; block = 0; next }
  ts && !body && /;$/ { print; next }              # table options (allbox;)
  ts && !body {                                    # format lines: the last column takes the
    if ($0 !~ /\.$/) next                          # rest of the line width
    spec = $0
    sub(/ *\.$/, "", spec)
    n = split(spec, f, " ")
    line = ""
    for (i = 1; i < n; i++) line = line "l "
    print line "lx."
    body = 1
    next
  }
  ts && /^\.TE$/ { print; ts = 0; next }
  ts && block && /^T}/ { block = 0; print cells($0, 2); if ($0 ~ /T\{$/) block = 1; next }
  ts && block { print; next }
  ts { print cells($0, 1); if ($0 ~ /T\{$/) block = 1; next }
  { print }
' "$out.tmp" | sed -e 's/@@BAR@@/|/g' -e 's/^\(\.\.*\/\)/\\\&\1/' >"$out"
rm -f "$out.tmp"

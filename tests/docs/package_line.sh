#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The packages a fresh machine needs are named alike everywhere: docs/quickstart.md's
# `apt-get install` line names exactly README.md's packages, and .ci/run installs every one of them.
# Usage: package_line.sh SOURCE_DIR
set -u
cd "$1" || exit 1
pkgs() { sed -n 's/.*apt-get install -y \([^#]*\).*/\1/p' "$1" | head -1 | tr ' ' '\n' | grep -v '^$' | sort; }
readme=$(pkgs README.md) quick=$(pkgs docs/quickstart.md)
fail=0
[ -n "$readme" ] || { echo "FAIL: README.md has no apt-get install line"; exit 1; }
[ "$readme" = "$quick" ] || { echo "FAIL: docs/quickstart.md installs '$(echo $quick)', README.md '$(echo $readme)'"; fail=1; }
ci=$(sed -n '/apt-get install/,/>\/dev\/null/p' .ci/run | tr ' \\' '\n\n')
for p in $readme; do
  echo "$ci" | grep -qxF "$p" || { echo "FAIL: .ci/run does not install $p (README.md names it)"; fail=1; }
done
[ $fail -eq 0 ] && echo "README.md, docs/quickstart.md and .ci/run agree on: $(echo $readme)"
exit $fail

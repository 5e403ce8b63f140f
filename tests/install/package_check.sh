#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CPack builds the package of this build (into OUTDIR, emptied first) and its contents are listed
# with the packaging tool itself (dpkg-deb -c / rpm -qlp): both plugins and their aliases under
# /usr/LIBDIR, the tools under /usr/BINDIR, the README and docs under /usr/DOCDIR, and the
# package version carries git's. Registered only where dpkg-deb (or rpmbuild and rpm) exist.
# Usage: package_check.sh deb|rpm BUILD_DIR OUTDIR PKG_VERSION BINDIR LIBDIR DOCDIR WITH_CALIBRATE
set -u
kind=$1 build=$2 out=$3 pkgver=$4 bindir=$5 libdir=$6 docdir=$7 with_calibrate=$8
fail=0
bad() { echo "FAIL: $*"; fail=1; }
rm -rf "$out"
mkdir -p "$out"
gen=$(echo "$kind" | tr a-z A-Z)
(cd "$build" && cpack -G "$gen" -B "$out") >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; echo "FAIL: cpack -G $gen"; exit 1; }
pkg=$(ls "$out"/*."$kind" 2>/dev/null | head -1)
[ -n "$pkg" ] || { cat "$out/cpack.log"; echo "FAIL: no .$kind written"; exit 1; }
echo "built $pkg"
if [ "$kind" = deb ]; then
  dpkg-deb -c "$pkg" | awk '{ p = $6; sub(/^\./, "", p); if ($7 == "->") p = p " -> " $8; print p }' >"$out/list"
  version=$(dpkg-deb -f "$pkg" Version)
else
  rpm -qp --qf '[%{FILENAMES} -> %{FILELINKTOS}\n]' "$pkg" 2>/dev/null | sed 's/ -> $//' >"$out/list"
  version=$(rpm -qp --qf '%{VERSION}' "$pkg" 2>/dev/null)
fi
[ "$version" = "$pkgver" ] || bad "package version '$version', want '$pkgver'"
want="/usr/$libdir/libtopo-tuner.so
/usr/$libdir/libtopo-profiler.so
/usr/$libdir/libnccl-tuner-topo.so -> libtopo-tuner.so
/usr/$libdir/libnccl-profiler-topo.so -> libtopo-profiler.so
/usr/$bindir/topo-report
/usr/$bindir/topo-tune
/usr/$bindir/topo-demo
/usr/$docdir/README.md
/usr/$docdir/docs/quickstart.md
/usr/$docdir/docs/environment.md"
[ "$with_calibrate" = 1 ] && want="$want
/usr/$bindir/topo-calibrate"
echo "$want" | while IFS= read -r f; do
  grep -qxF "$f" "$out/list" || { echo "FAIL: $kind lacks '$f'"; echo x >>"$out/missing"; }
done
[ -e "$out/missing" ] && { fail=1; cat "$out/list"; }
[ $fail -eq 0 ] && echo "$kind contents and version ($version) as expected"
exit $fail

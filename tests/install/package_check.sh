#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CPack builds the packages of this build (into OUTDIR, emptied first) and their contents are
# listed with the packaging tool itself (dpkg-deb -c / rpm -qlp): package topo holds both plugins
# and their aliases under /usr/LIBDIR, topo-report, topo-tune and topo-demo under /usr/BINDIR, their
# man pages under /usr/share/man/man1, the README and docs under /usr/DOCDIR; package
# topo-calibrate (where built) holds topo-calibrate and topo-profiler-cost and their man pages; the
# version carries git's. For the .deb, every shared library any ELF file of a package needs
# (readelf NEEDED) must come from a package its Depends names: the Depends are true.
# Usage: package_check.sh deb|rpm BUILD_DIR OUTDIR PKG_VERSION BINDIR LIBDIR DOCDIR WITH_CALIBRATE
set -u
kind=$1 build=$2 out=$3 pkgver=$4 bindir=$5 libdir=$6 docdir=$7 with_calibrate=$8
fail=0
bad() { echo "FAIL: $*"; fail=1; }
rm -rf "$out"
mkdir -p "$out"
gen=$(echo "$kind" | tr a-z A-Z)
(cd "$build" && cpack -G "$gen" -B "$out") >"$out/cpack.log" 2>&1 || { cat "$out/cpack.log"; echo "FAIL: cpack -G $gen"; exit 1; }

# The Debian package that provides a shared library (the soname), as Debian 12 names it.
provider() {
  case $1 in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) echo libc6 ;;
    libz.so.1) echo zlib1g ;;
    libstdc++.so.6) echo libstdc++6 ;;
    libgcc_s.so.1) echo libgcc-s1 ;;
    libnccl.so.2) echo libnccl2 ;;
    libcudart.so.*) echo cuda-cudart- ;;
    *) echo "?" ;;
  esac
}

# check PACKAGE_NAME WANT...: the package file's contents, version and (deb) Depends.
check() {
  name=$1
  shift
  if [ "$kind" = deb ]; then
    pkg=$(ls "$out"/"${name}"_*.deb 2>/dev/null | head -1)
  else
    pkg=$(ls "$out"/"${name}"-[0-9]*.rpm 2>/dev/null | head -1)
  fi
  [ -n "$pkg" ] || { ls "$out"; bad "no $name .$kind written"; return; }
  echo "built $pkg"
  list=$out/$name.list
  if [ "$kind" = deb ]; then
    dpkg-deb -c "$pkg" | awk '{ p = $6; sub(/^\./, "", p); if ($7 == "->") p = p " -> " $8; print p }' >"$list"
    version=$(dpkg-deb -f "$pkg" Version)
  else
    rpm -qp --qf '[%{FILENAMES} -> %{FILELINKTOS}\n]' "$pkg" 2>/dev/null | sed 's/ -> $//' >"$list"
    version=$(rpm -qp --qf '%{VERSION}' "$pkg" 2>/dev/null)
  fi
  [ "$version" = "$pkgver" ] || bad "$name: package version '$version', want '$pkgver'"
  for f in "$@"; do
    grep -qxF "$f" "$list" || { bad "$name .$kind lacks '$f'"; cat "$list"; }
  done
  [ "$kind" = deb ] || return
  depends=$(dpkg-deb -f "$pkg" Depends)
  echo "$name Depends: $depends"
  x=$out/$name.x
  rm -rf "$x"
  dpkg-deb -x "$pkg" "$x"
  for elf in $(find "$x" -type f); do
    head -c 4 "$elf" | grep -q 'ELF' || continue
    for lib in $(readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
      dep=$(provider "$lib")
      [ "$dep" = "?" ] && { bad "$name: ${elf#$x} needs $lib, which no known package provides"; continue; }
      echo "$depends" | tr ',' '\n' | sed 's/^ *//' | grep -q "^$dep" \
        || bad "$name: ${elf#$x} needs $lib ($dep), which Depends does not name"
    done
  done
}

check topo "/usr/$libdir/libtopo-tuner.so" "/usr/$libdir/libtopo-profiler.so" \
  "/usr/$libdir/libnccl-tuner-topo.so -> libtopo-tuner.so" \
  "/usr/$libdir/libnccl-profiler-topo.so -> libtopo-profiler.so" \
  "/usr/$bindir/topo-report" "/usr/$bindir/topo-tune" "/usr/$bindir/topo-demo" \
  /usr/share/man/man1/topo-report.1 /usr/share/man/man1/topo-tune.1 /usr/share/man/man1/topo-demo.1 \
  "/usr/$docdir/README.md" "/usr/$docdir/docs/quickstart.md" "/usr/$docdir/docs/environment.md"
grep -q '/topo-calibrate$\|/topo-profiler-cost$\|man1/topo-calibrate' "$out/topo.list" && bad "package topo holds topo-calibrate (its own package)"
if [ "$with_calibrate" = 1 ]; then
  check topo-calibrate "/usr/$bindir/topo-calibrate" "/usr/$bindir/topo-profiler-cost" \
    /usr/share/man/man1/topo-calibrate.1 /usr/share/man/man1/topo-profiler-cost.1
fi
[ $fail -eq 0 ] && echo "$kind packages: contents, version ($pkgver) and dependencies as expected"
exit $fail

#!/usr/bin/env bash
# Installs a gkrt build to a prefix and builds examples/ against the INSTALLED package
# (never the build tree), with find_package(gkrt) and with pkg-config, C and C++,
# shared and static, then checks that each program prints the seeds' outputs
# (examples/expected_output.txt) and that the shared-library programs run against the
# installed libgkrt.so. Run by `./setup.sh test`; about a minute on 2 cores.
#
#   examples/check_installed.sh [BUILD_DIR]     default: build (the host preset)
#
# A cross build (build-aarch64) is checked the same way: the app is configured with the
# build's toolchain file and CMAKE_PREFIX_PATH, and run under the build's emulator
# (qemu-aarch64 -L /usr/aarch64-linux-gnu); there only find_package is checked.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/CMakeCache.txt" ] || { echo "check_installed: $build is not a configured build; run cmake --preset host first" >&2; exit 2; }
prefix=$PWD/$build/install
apps=$PWD/$build/example-apps
cache_value() { sed -n "s|^$1:[A-Z]*=||p" "$build/CMakeCache.txt"; }
toolchain=$(cache_value CMAKE_TOOLCHAIN_FILE)
emulator=""  # the toolchain file's, e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu
[ -n "$toolchain" ] && emulator=$(sed -n 's/^set(CMAKE_CROSSCOMPILING_EMULATOR \(.*\))$/\1/p' "$toolchain" | tr ';' ' ')
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
libdir=$(cache_value CMAKE_INSTALL_LIBDIR)
fail() { echo "check_installed: $*" >&2; exit 1; }

rm -rf "$prefix" "$apps"
cmake --install "$build" --prefix "$prefix" >/dev/null
echo "installed $build to $prefix (gkrt $version)"

# Only the public headers, each compiling on its own with nothing but <prefix>/include
# (*_impl.h are the template bodies their header includes at its end).
[ "$(ls "$prefix/include")" = gkrt ] || fail "$prefix/include holds more than gkrt/: $(ls "$prefix/include")"
headers=$(cd "$prefix/include" && find gkrt -name '*.h' ! -name '*_impl.h' | sort)
for h in $headers; do
  c++ -std=c++17 -fsyntax-only -I"$prefix/include" -x c++ - <<<"#include <$h>" ||
    fail "installed header $h does not compile on its own"
done
cc -std=c99 -Wall -Werror -fsyntax-only -I"$prefix/include" -x c - <<<"#include <gkrt/gkrt_c.h>" ||
  fail "gkrt/gkrt_c.h does not compile as C99"
echo "public headers: $(echo "$headers" | wc -l), each compiles alone against $prefix/include"

run() {  # run PROGRAM ARGS...: under the build's emulator for cross builds
  if [ -n "$emulator" ]; then $emulator "$@"; else "$@"; fi
}
check_output() {  # check_output LABEL PROGRAM ARGS...
  local label=$1; shift
  local out
  out=$(run "$@") || fail "$label: $* failed"
  echo "$out" | head -1 | grep -q "^gkrt $version, " || fail "$label: first line '$(echo "$out" | head -1)' is not 'gkrt $version, ...'"
  diff <(echo "$out" | tail -n +2) examples/expected_output.txt >/dev/null ||
    { echo "$out" >&2; fail "$label: output differs from examples/expected_output.txt"; }
  echo "  $label: seeds' outputs ok"
}
check_needs_installed_lib() {  # the program loads libgkrt.so.<major> from the prefix
  local program=$1
  readelf -d "$program" | grep -q "NEEDED.*libgkrt\.so\.${version%%.*}\]" || fail "$program does not link libgkrt.so.${version%%.*}"
  if [ -z "$emulator" ]; then
    local resolved
    resolved=$(ldd "$program" | sed -n 's/.*libgkrt\.so\.[0-9]* => \([^ ]*\).*/\1/p')
    [ "$(readlink -f "$resolved")" = "$(readlink -f "$prefix/$libdir/libgkrt.so.$version")" ] ||
      fail "$program resolves libgkrt to '$resolved', not the installed $prefix/$libdir"
  fi
}

modes="find_package pkg-config"
[ -n "$toolchain" ] && modes=find_package
for mode in $modes; do
  app=$apps/$mode
  args=(-S examples -B "$app" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGKRT_FIND_WITH=$mode)
  [ -n "$toolchain" ] && args+=(-DCMAKE_TOOLCHAIN_FILE=$toolchain)
  if [ "$mode" = find_package ]; then
    cmake "${args[@]}" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
  else
    PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig cmake "${args[@]}" >/dev/null
  fi
  cmake --build "$app" >/dev/null
  echo "example app with $mode: built in $app"
  check_output "C, shared" "$app/mynet_c"
  check_output "C++, shared, builder" "$app/mynet_cpp"
  check_output "C++, shared, .gkm files" "$app/mynet_cpp" "$prefix/share/gkrt/examples"
  check_needs_installed_lib "$app/mynet_c"
  check_needs_installed_lib "$app/mynet_cpp"
  if [ "$mode" = find_package ]; then
    [ -x "$app/mynet_c_static" ] || fail "gkrt::gkrt_static was not found"
    readelf -d "$app/mynet_c_static" | grep -q 'NEEDED.*libgkrt' && fail "mynet_c_static needs libgkrt.so"
    check_output "C, static" "$app/mynet_c_static"
  fi
done

if [ -z "$toolchain" ]; then  # what docs/using-gkrt.md shows: one compiler line with pkg-config
  export PKG_CONFIG_PATH=$prefix/$libdir/pkgconfig
  [ "$(pkg-config --modversion gkrt)" = "$version" ] || fail "pkg-config --modversion gkrt is not $version"
  # shellcheck disable=SC2046
  cc -o "$apps/mynet_c_pkgconfig" examples/mynet_c.c $(pkg-config --cflags --libs gkrt) \
     -Wl,-rpath,"$(pkg-config --variable=libdir gkrt)"
  check_output "C, cc \$(pkg-config --cflags --libs gkrt)" "$apps/mynet_c_pkgconfig" "$(pkg-config --variable=examplesdir gkrt)"
  check_needs_installed_lib "$apps/mynet_c_pkgconfig"
fi
echo "check_installed: all passed"

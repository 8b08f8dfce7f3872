#!/usr/bin/env bash
# Stripped sizes of the gkrt libraries, the tiny_run example (C API only) and the gkrt
# tool, for every target (host, aarch64, armhf), full and minimal (the ops of
# tools/minimal/transformer_block_ops.txt only, -Os, no exceptions/RTTI), as the
# markdown table in docs/boards.md.
#
#   tools/size_report.sh            # reports the builds present
#   tools/size_report.sh --build    # configures and builds every preset first
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--build" ]; then
  for preset in host aarch64 armhf minimal minimal-aarch64 minimal-armhf; do
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j"$(nproc)" >/dev/null
  done
fi

size_of() {  # stripped size of a file, in KiB ("-" when absent)
  local strip=$1 file=$2 tmp
  [ -f "$file" ] || { echo "-"; return; }
  tmp=$(mktemp)
  "$strip" --strip-unneeded -o "$tmp" "$file" 2>/dev/null || cp "$file" "$tmp"
  echo $(( $(stat -c %s "$tmp") / 1024 ))
  rm -f "$tmp"
}
libs_of() {  # libgkrt.a + libgkrt_ir.a
  local strip=$1 dir=$2
  [ -f "$dir/libgkrt.a" ] || { echo "-"; return; }
  echo $(( $(size_of "$strip" "$dir/libgkrt.a") + $(size_of "$strip" "$dir/libgkrt_ir.a") ))
}

echo "| target | libraries, full (KiB) | libraries, minimal (KiB) | tiny_run, full (KiB) | tiny_run, minimal (KiB) | gkrt tool (KiB) |"
echo "| --- | --- | --- | --- | --- | --- |"
for entry in "host:build:build-minimal:strip" \
             "aarch64:build-aarch64:build-minimal-aarch64:aarch64-linux-gnu-strip" \
             "armhf:build-armhf:build-minimal-armhf:arm-linux-gnueabihf-strip"; do
  IFS=: read -r name full minimal strip <<<"$entry"
  [ -d "$full" ] || [ -d "$minimal" ] || continue
  echo "| $name | $(libs_of "$strip" "$full") | $(libs_of "$strip" "$minimal") | $(size_of "$strip" "$full/tiny_run")" \
       "| $(size_of "$strip" "$minimal/tiny_run") | $(size_of "$strip" "$full/tools/gkrt") |"
done

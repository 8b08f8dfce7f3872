#!/usr/bin/env bash
# Stripped sizes of the gkrt libraries, the tiny_run example and the gkrt tool for each
# build present (host, aarch64, armhf), as a markdown table for the README.
#
#   tools/size_report.sh          # after building the presets you want reported
set -euo pipefail
cd "$(dirname "$0")/.."

size_of() {  # stripped size of a file, in KiB
  local strip=$1 file=$2 tmp
  tmp=$(mktemp)
  "$strip" --strip-unneeded -o "$tmp" "$file" 2>/dev/null || cp "$file" "$tmp"
  echo $(( $(stat -c %s "$tmp") / 1024 ))
  rm -f "$tmp"
}

echo "| target | libgkrt.a + libgkrt_ir.a (KiB) | tiny_run (KiB) | gkrt tool (KiB) |"
echo "| --- | --- | --- | --- |"
for entry in "host:build:strip" "aarch64:build-aarch64:aarch64-linux-gnu-strip" "armhf:build-armhf:arm-linux-gnueabihf-strip"; do
  IFS=: read -r name dir strip <<<"$entry"
  [ -f "$dir/tools/tiny_run" ] || continue
  libs=$(( $(size_of "$strip" "$dir/libgkrt.a") + $(size_of "$strip" "$dir/libgkrt_ir.a") ))
  echo "| $name | $libs | $(size_of "$strip" "$dir/tools/tiny_run") | $(size_of "$strip" "$dir/tools/gkrt") |"
done

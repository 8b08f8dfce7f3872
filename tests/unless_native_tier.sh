#!/bin/sh
# unless_native_tier.sh GKRT TIER COMMAND...: run COMMAND (a test under GKRT_CPU_ISA=TIER)
# unless this machine's own tier already is TIER; then the default run was that run, and
# the test is skipped (exit 77, ctest's SKIP_RETURN_CODE) instead of repeating it.
gkrt=$1 tier=$2
shift 2
if "$gkrt" info --cpu | grep -Eq "^ *detected: +$tier\$"; then
  echo "skipped: this machine's own cpu tier is $tier, which the default run covered"
  exit 77
fi
exec "$@"

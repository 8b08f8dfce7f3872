#!/bin/sh
# Runs each libFuzzer target for a chosen time (docs/errors.md).
#
#   tests/fuzz/run_fuzzers.sh 600                      # every target, 10 minutes each
#   tests/fuzz/run_fuzzers.sh 30 gkm_loader npy_reader # these two, 30 s each
#
# Needs the sanitizer build (cmake --preset sanitize && cmake --build --preset sanitize)
# and, for seeds, a host build whose tests have run (build/examples, build/golden,
# build/onnx_node_tests, build/zoo). Seeds are copied into build-sanitize/fuzz_seeds/
# (at most GKRT_FUZZ_SEEDS per source, default 200, each at most -max_len bytes); what the fuzzer learns is kept in
# build-sanitize/fuzz_corpus/<target>/ between runs; a crash, leak or UBSan report is
# written to build-sanitize/fuzz_artifacts/ and fails the script. Leak checking is on,
# with tests/fuzz/lsan_suppressions.txt.
set -eu
cd "$(dirname "$0")/../.."
SECONDS_EACH=${1:-60}
[ $# -gt 0 ] && shift
TARGETS=${*:-"gkm_loader onnx_convert fusion_flags npy_reader gguf_reader gguf_import"}
SAN=${GKRT_SANITIZE_BUILD:-build-sanitize}
HOST=${GKRT_HOST_BUILD:-build}
MAX_SEEDS=${GKRT_FUZZ_SEEDS:-200}

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/fuzz/lsan_suppressions.txt:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export GKRT_LOG=error

# seed TARGET FILE... : copies up to MAX_SEEDS files of at most 256 KiB (spread evenly).
seed() {
  target=$1; shift
  dir=$SAN/fuzz_seeds/$target
  mkdir -p "$dir"
  ls -1 "$@" 2>/dev/null | awk -v n="$MAX_SEEDS" '{ f[NR] = $0 } END { step = NR > n ? NR / n : 1; for (i = 1; i <= NR; i += step) print f[int(i)] }' |
    while read -r f; do
      if [ "$(wc -c < "$f")" -le "$max_len" ]; then cp "$f" "$dir/$(echo "$f" | tr '/' '_')"; fi
    done
  true
}

# .gkm seeds of every op for the loader: the ONNX node tests converted by the host build's
# gkrt once (about 80 s; kept in $SAN/fuzz_seed_models/, delete it to redo;
# GKRT_FUZZ_SEED_MODELS=0 skips it, as the CI job does).
seed_models() {
  out=$SAN/fuzz_seed_models
  [ "${GKRT_FUZZ_SEED_MODELS:-1}" = 0 ] || [ -d "$out" ] || [ ! -x "$HOST/tools/gkrt" ] && return 0
  mkdir -p "$out"
  for d in "$HOST"/onnx_node_tests/*/; do
    [ -f "$d/model.onnx" ] || continue
    n=$(basename "$d")
    "$HOST/tools/gkrt" convert "$d/model.onnx" -o "$out/$n.gkm" > /dev/null 2>&1 || rm -f "$out/$n.gkm"
  done
}

status=0
for t in $TARGETS; do
  bin=$SAN/tests/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "run_fuzzers: $bin is not built (cmake --build --preset sanitize)" >&2; exit 2; }
  rm -rf "$SAN/fuzz_seeds/$t"
  mkdir -p "$SAN/fuzz_corpus/$t" "$SAN/fuzz_artifacts" "$SAN/fuzz_seeds/$t"
  max_len=262144
  [ "$t" = npy_reader ] && max_len=8192  # headers and small tensors: where the parsing is
  [ "$t" = gguf_reader ] && max_len=16384  # metadata and tensor infos
  [ "$t" = gguf_import ] && max_len=32768  # whole tiny decoders (tests/fuzz/make_gguf_seeds.py)
  case $t in
    gkm_loader) seed_models; seed "$t" "$HOST"/examples/*.gkm "$HOST"/zoo/*.gkm "$HOST"/zoo_quant/*.gkm "$SAN"/fuzz_seed_models/*.gkm ;;
    onnx_convert) seed "$t" "$HOST"/onnx_node_tests/*/model.onnx "$HOST"/zoo/*.onnx ;;
    npy_reader) seed "$t" "$HOST"/examples/*.npy "$HOST"/golden/*.npy "$HOST"/zoo/*.npy ;;
    fusion_flags) seed "$t" tests/fuzz/seeds/fusion_flags/* ;;
  esac
  seed "$t" tests/fuzz/regressions/"$t"/*
  echo "== fuzz_$t: ${SECONDS_EACH} s, $(ls "$SAN/fuzz_seeds/$t" | wc -l) seeds, $(ls "$SAN/fuzz_corpus/$t" | wc -l) in the corpus"
  if nice "$bin" -max_total_time="$SECONDS_EACH" -timeout=30 -rss_limit_mb=3072 -malloc_limit_mb=1024 -max_len="$max_len" \
       -print_final_stats=1 -artifact_prefix="$SAN/fuzz_artifacts/$t-" \
       "$SAN/fuzz_corpus/$t" "$SAN/fuzz_seeds/$t" > "$SAN/fuzz_$t.log" 2>&1; then
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$SAN/fuzz_$t.log" | tr '\n' ' '
    echo
  else
    status=1
    echo "fuzz_$t FAILED; the input is in $SAN/fuzz_artifacts/; its report:" >&2
    grep -E -A30 "ERROR: |runtime error:|SUMMARY" "$SAN/fuzz_$t.log" | head -60 >&2
  fi
done
exit $status

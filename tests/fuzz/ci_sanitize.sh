#!/bin/sh
# The CI sanitizer job (./setup.sh test runs it after the host tests): one clang build
# with ASan+UBSan (leak checking on) and libFuzzer instrumentation of only what it needs
# (core runtime, reference and cpu backends without oneDNN, no OpenCL, no ONNX converter;
# the loader, IR, session and fusion unit tests; the fuzz targets), then
#   1. gkrt_sanitize_tests (GKRT_GOLDEN_DIR from the host build),
#   2. the committed fuzz regressions (tests/fuzz/regressions/),
#   3. each fuzz target but onnx_convert for GKRT_CI_FUZZ_SECONDS (default 20) from the host build's seeds.
# The full ASan+UBSan run of every suite and long fuzzing are commands in docs/errors.md.
set -eu
cd "$(dirname "$0")/../.."
start=$(date +%s)
cmake --preset sanitize > /dev/null
nice cmake --build --preset sanitize --target gkrt_sanitize_tests fuzz_gkm_loader fuzz_fusion_flags \
  fuzz_npy_reader fuzz_gguf_reader fuzz_gguf_import fuzz_gkm_loader_replay fuzz_fusion_flags_replay fuzz_npy_reader_replay \
  fuzz_gguf_reader_replay fuzz_gguf_import_replay
built=$(date +%s)
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export LSAN_OPTIONS=suppressions=$PWD/tests/fuzz/lsan_suppressions.txt:print_suppressions=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
GKRT_GOLDEN_DIR=${GKRT_HOST_BUILD:-build}/golden build-sanitize/tests/fuzz/gkrt_sanitize_tests --gtest_brief=1
# The ONNX converter target (and the converter's sanitized build, ~a third of this job's
# compile) stays out of CI: its regressions replay unsanitized in the host ctest
# (fuzz_onnx_convert_regressions) and `tests/fuzz/run_fuzzers.sh SECONDS onnx_convert`
# runs it sanitized (docs/errors.md).
for t in gkm_loader fusion_flags npy_reader gguf_reader gguf_import; do
  build-sanitize/tests/fuzz/fuzz_${t}_replay tests/fuzz/regressions/$t
done
GKRT_FUZZ_SEED_MODELS=0 tests/fuzz/run_fuzzers.sh "${GKRT_CI_FUZZ_SECONDS:-10}" gkm_loader fusion_flags npy_reader gguf_reader gguf_import
echo "sanitizer job: build $((built - start)) s, tests and fuzzing $(($(date +%s) - built)) s"

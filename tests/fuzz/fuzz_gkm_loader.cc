// libFuzzer target: bytes -> loadModelBuffer -> compile on reference -> run small.
// Seeds: the bundled examples and the zoo's .gkm models (tests/fuzz/run_fuzzers.sh).
#include <cstddef>
#include <cstdint>

#include "runtime/model_io.h"
#include "tests/fuzz/fuzz_run_model.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gkrt::ModelLimits limits;  // small caps: the fuzzer's inputs are small
  limits.max_nodes = 4096;
  limits.max_tensors = 16384;
  limits.max_depth = 1024;
  auto g = gkrt::loadModelBuffer(data, size, limits);
  if (g.ok()) gkrt::fuzz::compileAndRunSmall(*g);
  return 0;
}

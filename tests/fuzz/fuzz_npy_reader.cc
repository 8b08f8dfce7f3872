// libFuzzer target: bytes -> readNpyBytes -> npyToModelType for every gkrt dtype.
// Seeds: the zoo's and examples' .npy files (tests/fuzz/run_fuzzers.sh).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = gkrt::readNpyBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.npy");
  if (!t.ok() || t->size() > 4096) return 0;  // conversions of big tensors only slow the fuzzer
  for (int d = 0; d < gkrt::kNumDTypes; ++d) (void)gkrt::npyToModelType(*t, static_cast<gkrt::DType>(d), "x");
  return 0;
}

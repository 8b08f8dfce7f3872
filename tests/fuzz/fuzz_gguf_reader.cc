// libFuzzer target: bytes -> GgufFile::fromBytes (tools/gguf/gguf_file.h), then every
// metadata value and tensor read back and the summary printed (nothing may read past
// the bytes). Seeds: tests/fuzz/regressions/gguf_reader/.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "tools/gguf/gguf_summary.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = gkrt::gguf::GgufFile::fromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
  if (!f.ok()) return 0;
  std::ostringstream out;
  gkrt::gguf::printSummary(*f, "fuzz.gguf", true, out);
  unsigned sum = 0;
  for (const auto& t : f->tensors()) {
    if (t.bytes) sum += t.data[0] + t.data[t.bytes - 1];
  }
  for (const auto& [key, v] : f->metadata()) {
    (void)f->getInt(key);
    (void)f->getFloat(key);
    (void)f->getString(key);
  }
  return int(sum & 0);
}

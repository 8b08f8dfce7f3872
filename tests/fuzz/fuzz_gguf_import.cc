// libFuzzer target: bytes -> GgufFile::fromBytes -> importGguf (tools/gguf/gguf_import.h),
// the decoder graph built and validated, and its tokenizer loaded from the same metadata
// (tools/text/tokenizer_load.h): a truncated or inconsistent file must be an error, never
// a read past the bytes or a crash. Seeds: tests/fuzz/regressions/gguf_import/
// (tests/fuzz/make_gguf_seeds.py).
#include <cstddef>
#include <cstdint>
#include <string>

#include "tools/gguf/gguf_import.h"
#include "tools/text/tokenizer_load.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = gkrt::gguf::GgufFile::fromBytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.gguf");
  if (!f.ok()) return 0;
  auto g = gkrt::gguf::importGguf(*f, "fuzz.gguf");
  auto t = gkrt::text::loadTokenizerGguf(*f, "fuzz.gguf");
  if (t.ok()) {
    auto ids = t->encode("ab abc", true);
    if (ids.ok()) (void)t->decode(*ids);
  }
  return int(g.ok() && g->nodes.empty());
}

// libFuzzer target: bytes -> ONNX ModelProto -> convert -> save -> load -> run small.
// External data is looked up in an empty directory (paths must stay inside it).
// Seeds: the ONNX node tests' and the zoo's small models (tests/fuzz/run_fuzzers.sh).
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "runtime/model_io.h"
#include "tests/fuzz/fuzz_run_model.h"
#include "tools/onnx/onnx_import.h"

namespace {

const std::string& emptyDir() {
  static const std::string dir = [] {
    std::filesystem::path p = std::filesystem::temp_directory_path() / "gkrt_fuzz_onnx_empty";
    std::error_code ec;
    std::filesystem::create_directories(p, ec);
    return p.string();
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  onnx::ModelProto model;
  if (size > (1u << 24) || !model.ParseFromArray(data, static_cast<int>(size))) return 0;
  auto g = gkrt::importOnnxModel(model, emptyDir());
  if (!g.ok()) return 0;
  auto bytes = gkrt::serializeModel(*g);  // the .gkm round trip a user's model takes
  if (!bytes.ok()) return 0;
  auto loaded = gkrt::loadModelBuffer(bytes->data(), bytes->size());
  if (loaded.ok()) gkrt::fuzz::compileAndRunSmall(*loaded);
  return 0;
}

// libFuzzer target: bytes -> parseFusionFlags (MS_DEV_GRAPH_KERNEL_FLAGS syntax); a flag
// string that parses is also applied to the seeds' MyNet-with-MyOp graph (fusion runs).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fusion/fusion_options.h"
#include "fusion/pass_manager.h"
#include "runtime/builder.h"
#include "runtime/base/log.h"

namespace {

gkrt::ir::Graph myOpGraph() {
  gkrt::GraphBuilder b;
  auto x = b.input("x", gkrt::DType::kFloat32, {4, 4});
  auto y = b.input("y", gkrt::DType::kFloat32, {4, 4});
  b.output(b.mul(b.sub(b.pow(b.mul(x, 2.0f), y), x), x), "result");
  return std::move(b.finish()).value();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gkrt::setLogLevel(gkrt::LogLevel::kError);
  auto options = gkrt::parseFusionFlags(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!options.ok()) return 0;
  options->dump_as_text = false;  // never write files from fuzzed flags
  static const gkrt::ir::Graph base = myOpGraph();
  gkrt::ir::Graph g = gkrt::ir::cloneGraph(base);
  (void)gkrt::runFusionPipeline(g, *options, options->profile.value_or(gkrt::FusionColumn::kCpu), [](const gkrt::ir::Node&) { return true; });
  return 0;
}

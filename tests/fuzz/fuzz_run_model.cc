#include "tests/fuzz/fuzz_run_model.h"

#include "runtime/ir/ops/op_helpers.h"
#include "runtime/base/log.h"
#include "runtime/session.h"

namespace gkrt::fuzz {

void compileAndRunSmall(const ir::Graph& model) {
  setLogLevel(LogLevel::kError);
  SessionOptions options;
  options.backend = "reference";
  options.fusion = FusionOptions{};
  options.max_memory_bytes = kFuzzMemoryCap;
  options.max_cached_plans = 1;
  constexpr int64_t kMaxInputElements = 1 << 16;
  // Compile always, but run only models with little weight data: a mutated copy of a big
  // seed (an int8 MLP) spends ~20 ms per run in its GEMMs under ASan and teaches the fuzzer
  // nothing about parsing; small models of every op run.
  constexpr size_t kMaxRunConstantBytes = 64 << 10;
  size_t constant_bytes = 0;
  for (const ir::Tensor& t : model.tensors) constant_bytes += t.constant ? t.constant->size : 0;
  for (int t : model.inputs) {
    if (t < 0 || static_cast<size_t>(t) >= model.tensors.size()) return;
    const ir::Tensor& in = model.tensors[t];
    if (isStatic(in.shape)) continue;
    Shape small = in.shape;
    for (int64_t& d : small) if (d == kUnknownDim) d = 2;  // dynamic dims: a small size
    options.input_shapes[in.name] = small;
  }
  auto session = Session::create(model, options);
  if (!session.ok() || constant_bytes > kMaxRunConstantBytes) return;
  for (const TensorInfo& in : (*session)->inputs()) {
    if (!isStatic(in.shape)) return;
    auto count = checkedNumElements(in.shape);
    if (!count.ok() || *count > kMaxInputElements) return;
    HostTensor value(in.dtype, in.shape);
    for (int64_t i = 0; i < *count; ++i) ops::storeF(value.data(), in.dtype, i, static_cast<float>(i % 5) - 2.0f);
    if (!(*session)->setInput(in.name, value).ok()) return;
  }
  if (!(*session)->run().ok()) return;
  for (const TensorInfo& out : (*session)->outputs()) (void)(*session)->output(out.name);
}

}  // namespace gkrt::fuzz

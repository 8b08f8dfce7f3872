#include "backends/cpu/fused/float_class_kernel.h"

#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/ir/op_def.h"

namespace gkrt::cpu {
namespace {

enum class FloatClass { kNan, kInf, kFinite };

// On the bits, so the loop vectorises without floating-point compares: exponent all ones
// and a mantissa (NaN), without one (infinity), or not all ones (finite).
template <FloatClass kClass>
void classify(const float* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    const uint32_t m = b & 0x7fffffffu;
    if constexpr (kClass == FloatClass::kNan) y[i] = m > 0x7f800000u;
    if constexpr (kClass == FloatClass::kInf) y[i] = m == 0x7f800000u;
    if constexpr (kClass == FloatClass::kFinite) y[i] = m < 0x7f800000u;
  }
}

class FloatClassKernel final : public Kernel {
 public:
  FloatClassKernel(FloatClass c, ThreadPool& pool) : class_(c), pool_(pool) {}
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* x = in[0].as<float>();
    uint8_t* y = static_cast<uint8_t*>(out[0].data);
    pool_.parallelFor(out[0].size(), 64, 64 * 1024, [&](int, int64_t b, int64_t e) {
      if (class_ == FloatClass::kNan) classify<FloatClass::kNan>(x + b, y + b, e - b);
      if (class_ == FloatClass::kInf) classify<FloatClass::kInf>(x + b, y + b, e - b);
      if (class_ == FloatClass::kFinite) classify<FloatClass::kFinite>(x + b, y + b, e - b);
    });
    return Status::Ok();
  }
  std::string detail() const override { return "own float class loop"; }

 private:
  FloatClass class_;
  ThreadPool& pool_;
};

}  // namespace

bool canRunFloatClass(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || node.subgraph || node.inputs.size() != 1 || node.outputs.size() != 1 || node.inputs[0] < 0) return false;
  const std::string op = node.op->name;
  if (op != "IsNan" && op != "IsInf" && op != "IsFinite") return false;
  const ir::Tensor &x = g.tensors[node.inputs[0]], &y = g.tensors[node.outputs[0]];
  return x.dtype == DType::kFloat32 && y.dtype == DType::kBool && isStatic(x.shape) && x.shape == y.shape;
}

std::unique_ptr<Kernel> compileFloatClass(const ir::Node& node, ThreadPool& pool) {
  const std::string op = node.op->name;
  const FloatClass c = op == "IsNan" ? FloatClass::kNan : op == "IsInf" ? FloatClass::kInf : FloatClass::kFinite;
  return std::unique_ptr<Kernel>(new FloatClassKernel(c, pool));
}

}  // namespace gkrt::cpu

#include "backends/cpu/quant_kernels.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

bool isInt8(DType t) { return t == DType::kInt8 || t == DType::kUInt8; }
bool oneElement(const ir::Graph& g, int t) { return t < 0 || numElements(g.tensors[t].shape) == 1; }
int inputAt(const ir::Node& n, size_t k) { return k < n.inputs.size() ? n.inputs[k] : -1; }

float scaleOf(const TensorView& s) { return s.as<float>()[0]; }
int zeroPointOf(const std::vector<TensorView>& in, size_t k) {
  return k < in.size() && in[k].present() ? static_cast<int>(ops::loadIndex(in[k], 0)) : 0;
}

// sat(rint(v) + zp) into T, NaN as 0 (the reference's rule).
template <class T> T saturate(float v, int zp) {
  constexpr float lo = std::is_signed_v<T> ? -128.0f : 0.0f, hi = std::is_signed_v<T> ? 127.0f : 255.0f;
  const float r = (v == v ? std::nearbyint(v) : 0.0f) + static_cast<float>(zp);
  return static_cast<T>(std::min(std::max(r, lo), hi));
}

template <class T> void quantize(const float* x, float s, int zp, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = saturate<T>(x[i] / s, zp);
}
template <class T> void dequantize(const T* x, float s, int zp, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(static_cast<int>(x[i]) - zp) * s;
}
// QLinearAdd / QLinearMul; `na`, `nb`: the operands' sizes (each repeats over y: its
// shape is a suffix of y's).
template <class T, bool kMul>
void binary(const T* a, int64_t na, const T* b, int64_t nb, float ra, float rb, int az, int bz, int cz, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float fa = static_cast<float>(static_cast<int>(a[i % na]) - az), fb = static_cast<float>(static_cast<int>(b[i % nb]) - bz);
    y[i] = saturate<T>(kMul ? fa * fb * ra : fa * ra + fb * rb, cz);
  }
}

class QuantElementwiseKernel final : public Kernel {
 public:
  explicit QuantElementwiseKernel(std::string op) : op_(std::move(op)) {}
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const MutableTensorView& y = out[0];
    const int64_t n = y.size();
    const bool s8 = (op_ == "QuantizeLinear" ? y.dtype : in[0].dtype) == DType::kInt8;
    if (op_ == "QuantizeLinear") {
      const float s = scaleOf(in[1]);
      const int zp = zeroPointOf(in, 2);
      if (s8) quantize(in[0].as<float>(), s, zp, y.as<int8_t>(), n);
      else quantize(in[0].as<float>(), s, zp, y.as<uint8_t>(), n);
    } else if (op_ == "DequantizeLinear") {
      const float s = scaleOf(in[1]);
      const int zp = zeroPointOf(in, 2);
      if (s8) dequantize(in[0].as<int8_t>(), s, zp, y.as<float>(), n);
      else dequantize(in[0].as<uint8_t>(), s, zp, y.as<float>(), n);
    } else {  // as the reference: ratios in float32
      const bool mul = op_ == "QLinearMul";
      const float as = scaleOf(in[1]), bs = scaleOf(in[4]), cs = scaleOf(in[6]);
      const float ra = mul ? as * bs / cs : as / cs, rb = bs / cs;
      const int az = zeroPointOf(in, 2), bz = zeroPointOf(in, 5), cz = zeroPointOf(in, 7);
      const int64_t sa = in[0].size(), sb = in[3].size();
      if (s8 && mul) binary<int8_t, true>(in[0].as<int8_t>(), sa, in[3].as<int8_t>(), sb, ra, rb, az, bz, cz, y.as<int8_t>(), n);
      if (s8 && !mul) binary<int8_t, false>(in[0].as<int8_t>(), sa, in[3].as<int8_t>(), sb, ra, rb, az, bz, cz, y.as<int8_t>(), n);
      if (!s8 && mul) binary<uint8_t, true>(in[0].as<uint8_t>(), sa, in[3].as<uint8_t>(), sb, ra, rb, az, bz, cz, y.as<uint8_t>(), n);
      if (!s8 && !mul) binary<uint8_t, false>(in[0].as<uint8_t>(), sa, in[3].as<uint8_t>(), sb, ra, rb, az, bz, cz, y.as<uint8_t>(), n);
    }
    return Status::Ok();
  }
  std::string detail() const override { return "own int8 loop"; }

 private:
  std::string op_;
};

}  // namespace

bool canRunQuantElementwise(const ir::Graph& g, const ir::Node& node) {
  if (node.subgraph || !node.op) return false;
  const std::string op = node.op->name;
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  if (op == "QuantizeLinear" || op == "DequantizeLinear") {
    const auto& a = node.attrs.get<QuantAttrs>();
    const ir::Tensor& scale = g.tensors[node.inputs[1]];
    const bool types = op == "QuantizeLinear" ? x.dtype == DType::kFloat32 && isInt8(y.dtype) && a.precision == DType::kFloat32
                                              : isInt8(x.dtype) && y.dtype == DType::kFloat32;
    return types && scale.dtype == DType::kFloat32 && oneElement(g, node.inputs[1]) && oneElement(g, inputAt(node, 2));
  }
  if (op == "QLinearAdd" || op == "QLinearMul") {
    const ir::Tensor& b = g.tensors[node.inputs[3]];
    for (size_t k : {1, 4, 6}) if (g.tensors[node.inputs[k]].dtype != DType::kFloat32) return false;
    const auto fits = [&](const ir::Tensor& t) {  // t's shape without leading 1s ends y's shape
      size_t lead = 0;
      while (lead < t.shape.size() && t.shape[lead] == 1) ++lead;
      const size_t r = t.shape.size() - lead;
      return r <= y.shape.size() && std::equal(t.shape.begin() + lead, t.shape.end(), y.shape.end() - r);
    };
    return isInt8(x.dtype) && fits(x) && fits(b);
  }
  return false;
}

StatusOr<std::unique_ptr<Kernel>> compileQuantElementwise(const ir::Graph&, const ir::Node& node) {
  return std::unique_ptr<Kernel>(new QuantElementwiseKernel(node.op->name));
}

}  // namespace gkrt::cpu

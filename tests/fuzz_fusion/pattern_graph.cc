#include "tests/fuzz_fusion/pattern_graph.h"

#include <cmath>
#include <limits>
#include <random>

#include "runtime/builder.h"

namespace gkrt::fuzz {
namespace {

class PatternGenerator {
 public:
  explicit PatternGenerator(uint64_t seed) : rng_(seed) {}
  StatusOr<RandomGraph> build();

 private:
  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool coin(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <class T> T choose(std::initializer_list<T> v) { return *(v.begin() + pick(static_cast<int>(v.size()))); }

  HostTensor tensorOf(const Shape& s, const std::vector<float>& values) const { return tensorFromValues(dtype_, s, values); }
  std::vector<float> uniform(int64_t n, float lo, float hi);
  Value input(const Shape& s, std::vector<float> values);
  Value input(const Shape& s) { return input(s, uniform(numElements(s), -2.0f, 2.0f)); }
  Value constant(const Shape& s, float lo, float hi);
  Value scalar(float v) { return b_.scalar(v, x_); }
  Value op(const std::string& name, const std::vector<Value>& in, Attrs attrs = {}) {
    ops_.push_back(name);
    return b_.op1(name, in, std::move(attrs));
  }
  // x @ W (+ bias) with W [E, n] constant.
  Value projection(Value x, int64_t n, bool bias);
  void maybeOutput(Value v) {
    if (coin(0.15)) extra_outputs_.push_back(v);
  }

  Value attention(Value x);
  Value addNorm(Value h, Value residual);
  Value feedForward(Value x);
  Value splitConcat(Value x);

  std::mt19937_64 rng_;
  GraphBuilder b_;
  DType dtype_ = DType::kFloat32;
  int64_t batch_ = 1, seq_ = 8, heads_ = 2, head_dim_ = 4;
  Value x_;
  std::vector<HostTensor> inputs_;
  std::vector<std::string> ops_;
  std::vector<Value> extra_outputs_;
  int counter_ = 0;
};


std::vector<float> PatternGenerator::uniform(int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = u(rng_);
  return v;
}

Value PatternGenerator::input(const Shape& s, std::vector<float> values) {
  inputs_.push_back(tensorOf(s, values));
  return b_.input("in" + std::to_string(inputs_.size() - 1), dtype_, s);
}

Value PatternGenerator::constant(const Shape& s, float lo, float hi) {
  const HostTensor t = tensorOf(s, uniform(numElements(s), lo, hi));
  return b_.constant("c" + std::to_string(counter_++), dtype_, s, t.data());
}

Value PatternGenerator::projection(Value x, int64_t n, bool bias) {
  if (!b_.status().ok()) return x;  // finish() reports the first error
  const int64_t e = b_.tensor(x).shape.back();
  const float w = 1.0f / std::sqrt(static_cast<float>(e));
  const bool flat = b_.tensor(x).shape.size() == 2;
  Value y = op(flat ? "MatMul" : "BatchMatMul", {x, constant({e, n}, -w, w)}, MatMulAttrs{false, false});
  if (bias) y = op("Add", {y, constant({n}, -0.5f, 0.5f)});
  return y;
}

// softmax(scale * Q K^T + mask) V over heads, merged back to [B, S, E].
Value PatternGenerator::attention(Value x) {
  const int64_t B = batch_, S = seq_, H = heads_, D = head_dim_, E = H * D;
  const bool bias = coin(0.5);
  Value q, k, v;
  if (coin(0.3)) {  // one projection split three ways (inference_matmul_split_fusion)
    auto qkv = b_.op("Split", {projection(x, 3 * E, bias)}, SplitAttrs{-1, {}}, 3);
    ops_.push_back("Split");
    if (qkv.size() != 3) return x;
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    q = projection(x, E, bias), k = projection(x, E, bias), v = projection(x, E, bias);
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const int scale_at = pick(3);  // 0: Mul on the scores, 1: RealDiv on the scores, 2: Mul on Q
  if (scale_at == 2) q = op("Mul", {q, scalar(scale)});
  auto heads = [&](Value t) { return op("Reshape", {t}, ShapeAttrs{{B, S, H, D}}); };
  q = op("Transpose", {heads(q)}, PermAttrs{{0, 2, 1, 3}});
  v = op("Transpose", {heads(v)}, PermAttrs{{0, 2, 1, 3}});
  const bool transpose_b = coin(0.3);
  k = op("Transpose", {heads(k)}, PermAttrs{transpose_b ? std::vector<int64_t>{0, 2, 1, 3} : std::vector<int64_t>{0, 2, 3, 1}});
  Value scores = op("BatchMatMul", {q, k}, MatMulAttrs{false, transpose_b});
  if (coin(0.15)) extra_outputs_.push_back(scores);  // near-miss: the scores read elsewhere
  if (scale_at == 0) scores = op("Mul", {scores, scalar(scale)});
  if (scale_at == 1) scores = op("RealDiv", {scores, scalar(std::sqrt(static_cast<float>(D)))});
  if (coin(0.6)) {
    const Shape ms = {coin(0.5) ? B : 1, coin(0.3) ? H : 1, coin(0.4) ? S : 1, S};
    std::vector<float> m(static_cast<size_t>(numElements(ms)));
    const float neg = coin(0.3) ? -std::numeric_limits<float>::infinity() : -10000.0f;
    for (size_t i = 0; i < m.size(); ++i) m[i] = i % ms[3] + 1 == static_cast<size_t>(ms[3]) ? 0.0f : (coin(0.3) ? neg : 0.0f);
    scores = op("Add", {scores, input(ms, m)});
  }
  const int64_t axis = coin(0.9) ? -1 : 2;  // near-miss: another axis
  Value p = op("Softmax", {scores}, AxisAttrs{axis, false});
  Value o = op("BatchMatMul", {p, v}, MatMulAttrs{false, false});
  o = op("Reshape", {op("Transpose", {o}, PermAttrs{{0, 2, 1, 3}})}, ShapeAttrs{{B, S, E}});
  return coin(0.7) ? projection(o, E, true) : o;
}

// norm(h + residual): LayerNorm, RmsNorm, or LayerNorm as exporters decompose it.
Value PatternGenerator::addNorm(Value h, Value residual) {
  const int64_t E = heads_ * head_dim_;
  Value sum = op("Add", {h, residual});
  maybeOutput(sum);
  const int kind = pick(4);
  const bool two_axes = coin(0.15);
  const Shape gs = two_axes ? Shape{seq_, E} : Shape{E};
  Value gamma = constant(gs, 0.5f, 1.5f), beta = constant(gs, -0.5f, 0.5f);
  if (kind == 0) return op("LayerNorm", {sum, gamma, beta}, NormAttrs{two_axes ? 1 : -1, 1e-5f});
  if (kind == 1) return op("LayerNorm", {sum}, NormAttrs{two_axes ? 1 : -1, 1e-5f});  // no affine (_ext_)
  if (kind == 2) return op("RmsNorm", {sum, gamma}, NormAttrs{two_axes ? 1 : -1, 1e-6f});
  AxesAttrs last{{-1}, true};
  Value mean = op("ReduceMean", {sum}, last);
  Value d = op("Sub", {sum, mean});
  Value var = op("ReduceMean", {op("Pow", {d, scalar(2.0f)})}, last);
  Value y = op("RealDiv", {d, op("Sqrt", {op("Add", {var, scalar(1e-5f)})})});
  gamma = constant({E}, 0.5f, 1.5f), beta = constant({E}, -0.5f, 0.5f);
  return op("Add", {op("Mul", {y, gamma}), beta});
}

Value PatternGenerator::feedForward(Value x) {
  const int64_t E = heads_ * head_dim_, F = E * (1 + pick(3));
  const int kind = pick(6);
  if (kind == 5) {  // SwiGLU
    Value both = projection(x, 2 * F, coin(0.3));
    auto halves = b_.op("Split", {both}, SplitAttrs{-1, {}}, 2);
    ops_.push_back("Split");
    Value gate = coin(0.5) ? op("SiLU", {halves[0]}) : op("Mul", {halves[0], op("Sigmoid", {halves[0]})});
    return projection(op("Mul", {gate, halves[1]}), E, coin(0.5));
  }
  Value h = projection(x, F, kind != 4);
  if (kind == 1) h = op("ReLU", {h});
  if (kind == 2) h = op("GeLU", {h}, GeluAttrs{coin(0.5) ? GeluApprox::kTanh : GeluApprox::kNone});
  if (kind == 3 && coin(0.5)) {  // GeLU as its Erf formula
    Value e = op("Erf", {op("RealDiv", {h, scalar(1.41421356f)})});
    h = op("Mul", {op("Mul", {h, op("Add", {e, scalar(1.0f)})}), scalar(0.5f)});
  } else if (kind == 3) {  // GeLU as its tanh formula
    Value cube = op("Mul", {op("Pow", {h, scalar(3.0f)}), scalar(0.044715f)});
    Value t = op("Tanh", {op("Mul", {op("Add", {h, cube}), scalar(0.7978845608f)})});
    h = op("Mul", {op("Mul", {h, op("Add", {t, scalar(1.0f)})}), scalar(0.5f)});
  }
  Value y = projection(h, E, coin(0.7));
  return coin(0.3) ? op("Add", {y, x}) : y;  // MatMul + residual
}

// Concat(Split(x, axis 0), axis 1) over [B, S, E] seen as [S, B*E].
Value PatternGenerator::splitConcat(Value x) {
  const int64_t E = heads_ * head_dim_;
  Value t = op("Reshape", {x}, ShapeAttrs{{batch_ * seq_, E}});
  if (seq_ * batch_ % 2 != 0) return x;
  auto parts = b_.op("Split", {t}, SplitAttrs{0, {}}, 2);
  ops_.push_back("Split");
  Value c = op("Concat", {parts[0], parts[1]}, AxisAttrs{1, false});
  return op("Reshape", {c}, ShapeAttrs{{batch_, seq_, E}});
}

StatusOr<RandomGraph> PatternGenerator::build() {
  dtype_ = pick(10) == 0 ? DType::kFloat16 : DType::kFloat32;
  batch_ = choose<int64_t>({1, 1, 2});
  seq_ = choose<int64_t>({1, 2, 3, 8, 16, 17, 33});
  heads_ = choose<int64_t>({1, 2, 4});
  head_dim_ = choose<int64_t>({2, 4, 8, 16});
  x_ = input({batch_, seq_, heads_ * head_dim_});
  Value x = x_;
  const int blocks = 1 + pick(3);
  for (int k = 0; k < blocks; ++k) {
    const int kind = pick(5);
    if (kind <= 1) {  // a pre- or post-norm transformer layer
      Value a = attention(x);
      x = addNorm(a, x);
      x = addNorm(feedForward(x), x);
    } else if (kind == 2) {
      x = attention(x);
    } else if (kind == 3) {
      x = addNorm(feedForward(x), x);
    } else {
      x = splitConcat(x);
    }
    maybeOutput(x);
  }
  std::vector<int> outputs = {x.id};  // the chain's end first, then what was also read out
  for (Value v : extra_outputs_) outputs.push_back(v.id);
  ASSIGN_OR_RETURN(RandomGraph rg, finishRandomGraph(b_, outputs, std::move(inputs_), std::move(ops_)));
  rg.patterns = true;
  return rg;
}

}  // namespace

StatusOr<RandomGraph> makePatternGraph(uint64_t seed) {
  PatternGenerator gen(seed * 0xD1B54A32D192ED03ull + 7);
  return gen.build();
}

}  // namespace gkrt::fuzz

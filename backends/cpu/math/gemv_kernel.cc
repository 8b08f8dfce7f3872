#include "backends/cpu/math/gemv_kernel.h"

#include <algorithm>
#include <cstring>

#include "runtime/ir/op_def.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GKRT_GEMV_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define GKRT_GEMV_CLONES
#endif

namespace gkrt::cpu {
namespace {

constexpr int64_t kPanel = 64;  // output columns a task keeps in registers (8 vectors of 8)

typedef float Vec8 __attribute__((vector_size(32)));
// An unaligned load, expanded in place (a function returning a vector would be compiled
// for the default ISA, outside the clones).
#define GKRT_LOAD8(p) ({ Vec8 v_; __builtin_memcpy(&v_, (p), sizeof v_); v_; })

// acc[r][0..64) = sum over k of x[r][k] * panel[k][0..64): the 64 sums of a row stay in
// registers while the panel streams past.
GKRT_GEMV_CLONES void gemvPanel(const float* x, int64_t m, int64_t K, const float* panel, float* acc) {
  for (int64_t r = 0; r < m; ++r) {
    Vec8 a0 = {}, a1 = {}, a2 = {}, a3 = {}, a4 = {}, a5 = {}, a6 = {}, a7 = {};
    const float* xr = x + r * K;
    const float* wr = panel;
    for (int64_t k = 0; k < K; ++k, wr += kPanel) {
      const Vec8 xv = Vec8{} + xr[k];
      a0 += xv * GKRT_LOAD8(wr), a1 += xv * GKRT_LOAD8(wr + 8), a2 += xv * GKRT_LOAD8(wr + 16), a3 += xv * GKRT_LOAD8(wr + 24);
      a4 += xv * GKRT_LOAD8(wr + 32), a5 += xv * GKRT_LOAD8(wr + 40), a6 += xv * GKRT_LOAD8(wr + 48), a7 += xv * GKRT_LOAD8(wr + 56);
    }
    const Vec8 all[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
    std::memcpy(acc + r * kPanel, all, sizeof all);
  }
}

class GemvKernel final : public Kernel {
 public:
  GemvKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : pool_(pool) {
    const Shape& w = g.tensors[size_t(node.inputs[1])].shape;
    K_ = w[0];
    N_ = w[1];
    M_ = numElements(g.tensors[size_t(node.inputs[0])].shape) / K_;
    const std::string op = node.op->name;
    if (op == "MatMulAdd") {
      residual_ = 2;
      if (node.inputs.size() > 3 && node.inputs[3] >= 0) bias_ = 3;
    } else if (op == "MatMulBiasAdd" || op == "MatMulSplit") {
      if (node.inputs.size() > 2 && node.inputs[2] >= 0) bias_ = 2;
    }
    for (int t : node.outputs) {  // MatMulSplit: the outputs' column ranges
      part_end_.push_back((part_end_.empty() ? 0 : part_end_.back()) + g.tensors[size_t(t)].shape.back());
    }
    // Panels [N / 64][K][64] (the last zero-padded), each read from start to end by one
    // task: weights read in place, 64 columns of a row apart by N, streamed at 4-5 GB/s
    // where a sequential read runs at 9-12 on the machine this was written on.
    const float* w0 = reinterpret_cast<const float*>(g.tensors[size_t(node.inputs[1])].constant->data);
    const int64_t panels = (N_ + kPanel - 1) / kPanel;
    packed_.assign(size_t(panels * K_ * kPanel), 0.0f);
    for (int64_t p = 0; p < panels; ++p) {
      const int64_t n0 = p * kPanel, width = std::min(kPanel, N_ - n0);
      for (int64_t k = 0; k < K_; ++k) {
        std::memcpy(&packed_[size_t((p * K_ + k) * kPanel)], w0 + k * N_ + n0, sizeof(float) * size_t(width));
      }
    }
  }

  size_t workspaceBytes() const override { return size_t(pool_.size() * kGemvMaxRows * kPanel) * sizeof(float); }
  std::string detail() const override { return "gkrt gemv"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float* x = in[0].as<float>();
    const float* c = residual_ >= 0 ? in[size_t(residual_)].as<float>() : nullptr;
    const float* bias = bias_ >= 0 ? in[size_t(bias_)].as<float>() : nullptr;
    const int64_t panels = (N_ + kPanel - 1) / kPanel;
    pool_.parallelFor(panels, 1, 1, [&](int thread, int64_t begin, int64_t end) {
      float* acc = static_cast<float*>(ws) + thread * kGemvMaxRows * kPanel;
      for (int64_t p = begin; p < end; ++p) {
        gemvPanel(x, M_, K_, packed_.data() + p * K_ * kPanel, acc);
        const int64_t n0 = p * kPanel, width = std::min(kPanel, N_ - n0);
        size_t part = 0;
        while (part_end_[part] <= n0) ++part;
        for (int64_t j = 0; j < width; ++j) {
          const int64_t col = n0 + j;
          if (col >= part_end_[part]) ++part;
          const int64_t begin = part ? part_end_[part - 1] : 0, width_p = part_end_[part] - begin;
          float* y = out[part].as<float>();
          for (int64_t r = 0; r < M_; ++r) {
            float v = acc[r * kPanel + j];
            if (bias) v += bias[col];
            if (c) v += c[r * N_ + col];
            y[r * width_p + col - begin] = v;
          }
        }
      }
    });
    return Status::Ok();
  }

 private:
  ThreadPool& pool_;
  int64_t M_ = 0, K_ = 0, N_ = 0;
  int residual_ = -1, bias_ = -1;
  std::vector<int64_t> part_end_;  // per output: the end of its columns
  std::vector<float> packed_;
};

}  // namespace

bool canRunGemv(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if ((op != "MatMul" && op != "BatchMatMul" && op != "MatMulAdd" && op != "MatMulBiasAdd" && op != "MatMulSplit")) return false;
  if (node.inputs.size() < 2 || node.inputs[0] < 0 || node.inputs[1] < 0) return false;
  if (op != "MatMulSplit") {  // MatMulSplit has no transposes (its attributes are the split's)
    const auto& a = node.attrs.get<MatMulAttrs>();
    if (a.transpose_a || a.transpose_b) return false;
  }
  for (int t : node.inputs) if (t >= 0 && g.tensors[size_t(t)].dtype != DType::kFloat32) return false;
  const ir::Tensor& w = g.tensors[size_t(node.inputs[1])];
  const Shape& x = g.tensors[size_t(node.inputs[0])].shape;
  const Shape& y = g.tensors[size_t(node.outputs[0])].shape;
  if (!w.isConstant() || w.shape.size() != 2 || x.empty() || x.back() != w.shape[0] || !isStatic(x) || !isStatic(y)) return false;
  const int64_t rows = numElements(x) / w.shape[0];
  int64_t cols = 0;
  for (int t : node.outputs) {
    const Shape& o = g.tensors[size_t(t)].shape;
    if (!isStatic(o) || o.empty() || numElements(o) != rows * o.back()) return false;
    cols += o.back();
  }
  if (rows < 1 || rows > kGemvMaxRows || cols != w.shape[1]) return false;
  if (op == "MatMulAdd" && g.tensors[size_t(node.inputs[2])].shape != y) return false;  // the residual, of y's shape
  const int bias = op == "MatMulAdd" ? 3 : op == "MatMulBiasAdd" || op == "MatMulSplit" ? 2 : -1;
  if (bias >= 0 && int(node.inputs.size()) > bias && node.inputs[size_t(bias)] >= 0 &&
      g.tensors[size_t(node.inputs[size_t(bias)])].shape != Shape{w.shape[1]}) {
    return false;
  }
  return true;
}

std::unique_ptr<Kernel> compileGemv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::make_unique<GemvKernel>(g, node, pool);
}

}  // namespace gkrt::cpu

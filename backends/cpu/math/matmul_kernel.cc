#include "backends/cpu/math/matmul_kernel.h"

#include <array>
#include <cstdlib>
#include <string>

#include "backends/cpu/math/gemm.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

struct MatMulPlan {
  bool transpose_a = false, transpose_b = false;
  float alpha = 1.0f, beta = 1.0f;
  bool is_gemm = false;
  int64_t M = 0, K = 0, N = 0;
  Shape out_batch, a_batch, b_batch;
};

MatMulPlan planFor(const ir::Graph& g, const ir::Node& node) {
  MatMulPlan p;
  const std::string op = node.op->name;
  p.is_gemm = op == "Gemm";
  if (p.is_gemm) {
    const auto& a = node.attrs.get<GemmAttrs>();
    p.transpose_a = a.transpose_a;
    p.transpose_b = a.transpose_b;
    p.alpha = a.alpha;
    p.beta = a.beta;
  } else {
    const auto& a = node.attrs.get<MatMulAttrs>();
    p.transpose_a = a.transpose_a;
    p.transpose_b = a.transpose_b;
  }
  const Shape& sa = g.tensors[node.inputs[0]].shape;
  const Shape& sb = g.tensors[node.inputs[1]].shape;
  const Shape& sy = g.tensors[node.outputs[0]].shape;
  p.M = sy[sy.size() - 2];
  p.N = sy[sy.size() - 1];
  p.K = p.transpose_a ? sa[sa.size() - 2] : sa[sa.size() - 1];
  p.out_batch.assign(sy.begin(), sy.end() - 2);
  p.a_batch.assign(sa.begin(), sa.end() - 2);
  p.b_batch.assign(sb.begin(), sb.end() - 2);
  return p;
}

class MatMulKernel final : public Kernel {
 public:
  MatMulKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) : p_(planFor(g, node)), pool_(pool) {
    a_pack_.resize(static_cast<size_t>(packedASize(p_.M, p_.K)));
    const ir::Tensor& b = g.tensors[node.inputs[1]];
    if (b.isConstant() && numElements(p_.b_batch) == 1) {  // weights: packed once, here
      packB(reinterpret_cast<const float*>(b.constant->data), p_.K, p_.N, p_.transpose_b, &packed_);
      prepacked_ = true;
    } else {  // packed per run into storage reserved here
      packed_.panels.reserve(static_cast<size_t>((p_.N + kGemmNR - 1) / kGemmNR * kGemmNR * p_.K));
    }
    // The batch broadcast, walked once here: a launch allocates nothing.
    ops::forEachBroadcast<2>(p_.out_batch, {&p_.a_batch, &p_.b_batch}, [&](int64_t, const std::array<int64_t, 2>& o) {
      batch_offsets_.push_back(o);
    });
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* a = in[0].as<float>();
    const float* b = in[1].as<float>();
    float* y = out[0].as<float>();
    const int64_t M = p_.M, K = p_.K, N = p_.N;
    for (size_t bi = 0; bi < batch_offsets_.size(); ++bi) {
      const std::array<int64_t, 2>& o = batch_offsets_[bi];
      if (!prepacked_) packB(b + o[1] * K * N, K, N, p_.transpose_b, &packed_);
      gemm(M, a + o[0] * M * K, p_.transpose_a, packed_, y + int64_t(bi) * M * N, a_pack_.data(), pool_);
    }
    if (p_.is_gemm) {  // y = alpha * AB + beta * C
      const bool has_c = in.size() > 2 && in[2].present();
      if (p_.alpha != 1.0f || has_c) {
        Shape ys{M, N};
        const Shape c_shape = has_c ? in[2].shape : Shape{};
        const float* c = has_c ? in[2].as<float>() : nullptr;
        ops::forEachBroadcast<1>(ys, {&c_shape}, [&](int64_t i, const std::array<int64_t, 1>& o) {
          y[i] = p_.alpha * y[i] + (c ? p_.beta * c[o[0]] : 0.0f);
        });
      }
    }
    return Status::Ok();
  }

 private:
  MatMulPlan p_;
  ThreadPool& pool_;
  PackedB packed_;
  bool prepacked_ = false;
  std::vector<float> a_pack_;
  std::vector<std::array<int64_t, 2>> batch_offsets_;  // per output batch: a's and b's
};

}  // namespace

bool canRunMatMul(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op->name;
  if (op != "MatMul" && op != "BatchMatMul" && op != "Gemm") return false;
  for (int t : node.inputs) if (t >= 0 && g.tensors[t].dtype != DType::kFloat32) return false;
  if (g.tensors[node.outputs[0]].dtype != DType::kFloat32) return false;
  return g.tensors[node.outputs[0]].shape.size() >= 2;
}

bool isTinyMatMul(const ir::Graph& g, const ir::Node& node) {
  const Shape& a = g.tensors[size_t(node.inputs[0])].shape;
  const Shape& y = g.tensors[size_t(node.outputs[0])].shape;
  if (a.empty() || !isStatic(a) || !isStatic(y)) return false;
  const int64_t K = a.size() >= 2 && node.attrs.kind() == AttrKind::kMatMul && node.attrs.get<MatMulAttrs>().transpose_a ? a[a.size() - 2] : a.back();
  return numElements(y) * K <= 4096;
}

StatusOr<std::unique_ptr<Kernel>> compileMatMul(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  return std::unique_ptr<Kernel>(new MatMulKernel(g, node, pool));
}

}  // namespace gkrt::cpu

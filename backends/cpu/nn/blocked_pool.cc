#include "backends/cpu/nn/blocked_pool.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cpu/cpu_tier.h"
#include "backends/cpu/nn/pool_kernel.h"
#include "runtime/ir/op_def.h"

// V8 values cross only always-inlined helpers; the ABI note for non-AVX callers does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace gkrt::cpu {
namespace {

typedef float V8 __attribute__((vector_size(32)));

inline __attribute__((always_inline)) V8 load8(const float* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

struct PoolRows {
  const float* x;
  float* y;
  int64_t H, W, OH, OW, block;
  bool out_blocked;  // else plain NCHW
  PoolAttrs a;
};

// Output rows [begin, end) of the (image * channel block * OH) rows.
template <bool kMax>
GKRT_INLINE_BODY void poolRowsBody(const PoolRows& p, int64_t begin, int64_t end) {
  const PoolAttrs& a = p.a;
  const int64_t B = p.block, vecs = B / 8;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t plane = r / p.OH, oh = r % p.OH;
    const float* x = p.x + plane * p.H * p.W * B;
    float* y = p.y + (plane * p.OH + oh) * p.OW * B;               // blocked output row
    float* y_plain = p.y + (plane * B * p.OH + oh) * p.OW;          // plain: channel plane * B, row oh
    for (int64_t ow = 0; ow < p.OW; ++ow) {
      const PoolWindow win = PoolWindow::at(a, p.H, p.W, oh, ow);
      const float count = static_cast<float>(win.count);
      for (int64_t v = 0; v < vecs; ++v) {
        V8 acc = V8{} + (kMax ? -std::numeric_limits<float>::infinity() : 0.0f);
        for (int64_t h = win.hb; h < win.he; ++h) {
          for (int64_t w = win.wb; w < win.we; ++w) {
            const V8 e = load8(x + (h * p.W + w) * B + v * 8);
            if (kMax) {
              acc = e > acc ? e : acc;  // as the reference: NaN skipped
            } else {
              acc += e;
            }
          }
        }
        if (!kMax) acc /= count;
        if (p.out_blocked) {
          std::memcpy(y + ow * B + v * 8, &acc, sizeof acc);
        } else {
          for (int l = 0; l < 8; ++l) y_plain[(v * 8 + l) * p.OH * p.OW + ow] = acc[l];
        }
      }
    }
  }
}
#ifdef GKRT_X86_TIERS
template <bool kMax>
__attribute__((target("avx2"), flatten)) void poolRowsOnAvx2(const PoolRows& p, int64_t begin, int64_t end) {
  poolRowsBody<kMax>(p, begin, end);
}
#endif
template <bool kMax>
void poolRows(const PoolRows& p, int64_t begin, int64_t end) {
#ifdef GKRT_X86_TIERS
  static const bool avx2 = cpuTier().has(CpuIsa::kAvx2);
  if (avx2) return poolRowsOnAvx2<kMax>(p, begin, end);
#endif
  poolRowsBody<kMax>(p, begin, end);
}

template <bool kMax>
class BlockedPoolKernel final : public Kernel {
 public:
  BlockedPoolKernel(const PoolAttrs& a, int block, bool out_blocked, ThreadPool& pool)
      : a_(a), block_(block), out_blocked_(out_blocked), pool_(pool) {}
  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const Shape& x = in[0].shape;
    const Shape& y = out[0].shape;
    const PoolRows p{in[0].as<float>(), out[0].as<float>(), x[2], x[3], y[2], y[3], block_, out_blocked_, a_};
    const int64_t rows = x[0] * (x[1] / block_) * y[2];
    pool_.parallelFor(rows, 1, 1, [&](int, int64_t b, int64_t e) { poolRows<kMax>(p, b, e); });
    return Status::Ok();
  }
  std::string detail() const override {
    return "own, nChw" + std::to_string(block_) + "c" + (out_blocked_ ? "" : " to plain");
  }

 private:
  PoolAttrs a_;
  int64_t block_;
  bool out_blocked_;
  ThreadPool& pool_;
};

}  // namespace

bool canRunBlockedPool(const ir::Graph& g, const ir::Node& node) {
  const std::string op = node.op ? node.op->name : "";
  if ((op != "MaxPool" && op != "AvgPool") || node.subgraph || node.inputs.size() != 1 || node.outputs.size() != 1) {
    return false;
  }
  const ir::Tensor& x = g.tensors[node.inputs[0]];
  const ir::Tensor& y = g.tensors[node.outputs[0]];
  const auto& a = node.attrs.get<PoolAttrs>();
  const bool undilated = a.dilations.empty() || std::all_of(a.dilations.begin(), a.dilations.end(), [](int64_t d) {
    return d == 1;
  });
  return x.dtype == DType::kFloat32 && y.dtype == DType::kFloat32 && x.shape.size() == 4 && y.shape.size() == 4 &&
         a.kernel.size() == 2 && a.strides.size() == 2 && a.pads.size() == 4 && undilated;
}

StatusOr<std::unique_ptr<Kernel>> compileBlockedPool(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                     int block, bool out_blocked) {
  if (!canRunBlockedPool(g, node) || (block != 8 && block != 16) || g.tensors[node.inputs[0]].shape[1] % block) {
    return makeError(StatusCode::kUnsupported, "cpu: ", node.name, " is not a blocked 2-D pooling this kernel takes");
  }
  const auto& a = node.attrs.get<PoolAttrs>();
  if (std::string(node.op->name) == "MaxPool") return std::unique_ptr<Kernel>(new BlockedPoolKernel<true>(a, block, out_blocked, pool));
  return std::unique_ptr<Kernel>(new BlockedPoolKernel<false>(a, block, out_blocked, pool));
}

}  // namespace gkrt::cpu

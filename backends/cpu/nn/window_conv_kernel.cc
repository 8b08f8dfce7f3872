#include "backends/cpu/nn/window_conv_kernel.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "backends/cpu/math/gemm.h"
#include "runtime/ir/op_def.h"

#ifdef GKRT_HAVE_DNNL
#include <oneapi/dnnl/dnnl.hpp>

#include "backends/cpu/onednn/onednn_impl.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#endif

namespace gkrt::cpu {
namespace {

struct WindowDims {
  int64_t N = 0, W = 0, C = 0, K = 0, stride = 1, T = 0;
};

bool windowDims(const ir::Graph& g, const ir::Node& node, WindowDims* d) {
  if (!node.op || node.op->name != std::string("Conv2D") || node.subgraph || node.inputs.size() < 2) return false;
  const auto& a = node.attrs.get<Conv2DAttrs>();
  if (a.groups != 1 || a.strides.size() != 2 || a.strides[0] != 1 || a.dilations != Ints{1, 1}) return false;
  for (int64_t p : a.pads) if (p != 0) return false;
  const ir::Tensor& x = g.tensors[size_t(node.inputs[0])];
  const ir::Tensor& w = g.tensors[size_t(node.inputs[1])];
  const ir::Tensor& y = g.tensors[size_t(node.outputs[0])];
  if (x.dtype != DType::kFloat32 || w.dtype != DType::kFloat32 || !w.isConstant() || x.shape.size() != 4 ||
      w.shape.size() != 4 || !isStatic(x.shape) || !isStatic(y.shape)) {
    return false;
  }
  if (x.shape[1] != 1 || x.shape[2] != 1 || w.shape[1] != 1 || w.shape[2] != 1) return false;
  if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
    const ir::Tensor& b = g.tensors[size_t(node.inputs[2])];
    if (b.dtype != DType::kFloat32 || numElements(b.shape) != w.shape[0]) return false;
  }
  d->N = x.shape[0];
  d->W = x.shape[3];
  d->C = w.shape[0];
  d->K = w.shape[3];
  d->stride = a.strides[1];
  d->T = y.shape[3];
  // Enough work for the GEMM to pay: at least 32 windows of at least 64 taps into at least
  // 32 filters (silero's single 4-window frame: 0.012 ms against oneDNN's 0.009).
  return d->K >= 64 && d->C >= 32 && d->N * d->T >= 32 && (d->T - 1) * d->stride + d->K <= d->W;
}

class WindowConvKernel final : public Kernel {
 public:
  WindowConvKernel(const ir::Graph& g, const ir::Node& node, const WindowDims& d, ThreadPool& pool) : d_(d), pool_(pool) {
    const float* w = reinterpret_cast<const float*>(g.tensors[size_t(node.inputs[1])].constant->data);
#ifdef GKRT_HAVE_DNNL
    if (useOneDnn(w, node.inputs.size() > 2 && node.inputs[2] >= 0)) return;
#endif
    // op(B) = w^T [K, C]: w [C, K] is B stored transposed.
    packB(w, d_.K, d_.C, true, &filters_);
  }

  size_t workspaceBytes() const override {
    const int64_t M = d_.N * d_.T;
    return sizeof(float) * size_t(M * d_.K + packedASize(M, d_.K) + M * d_.C) + 128;
  }

  std::string detail() const override {
#ifdef GKRT_HAVE_DNNL
    if (onednn_) return "gkrt windows as one GEMM (oneDNN " + impl_ + ")";
#endif
    return "gkrt windows as one GEMM";
  }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void* ws) override {
    const float* x = in[0].as<float>();
    const float* bias = in.size() > 2 && in[2].present() ? in[2].as<float>() : nullptr;
    float* y = out[0].as<float>();
    const int64_t M = d_.N * d_.T;
    float* rows = align(static_cast<float*>(ws));
    float* a_pack = align(rows + M * d_.K);
    float* prod = align(a_pack + packedASize(M, d_.K));
    for (int64_t n = 0; n < d_.N; ++n) {
      for (int64_t t = 0; t < d_.T; ++t) {
        std::memcpy(rows + (n * d_.T + t) * d_.K, x + n * d_.W + t * d_.stride, size_t(d_.K) * sizeof(float));
      }
    }
#ifdef GKRT_HAVE_DNNL
    if (onednn_) {
      a_mem_.set_data_handle(rows);
      c_mem_.set_data_handle(prod);
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, a_mem_}, {DNNL_ARG_WEIGHTS, w_mem_}, {DNNL_ARG_DST, c_mem_}};
      if (bias) {
        bias_mem_.set_data_handle(const_cast<float*>(bias));
        args[DNNL_ARG_BIAS] = bias_mem_;
        bias = nullptr;  // added by the product
      }
      prim_.execute(stream_, args);
      stream_.wait();
    } else
#endif
    {
      packA(rows, M, d_.K, false, a_pack);
      gemmPacked(M, a_pack, filters_, prod, d_.C, nullptr, pool_);
    }
    // [n, t, c] -> [n, c, t], plus the bias.
    pool_.parallelFor(d_.N, 1, 1, [&](int, int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        for (int64_t c = 0; c < d_.C; ++c) {
          const float b = bias ? bias[c] : 0.0f;
          float* dst = y + (n * d_.C + c) * d_.T;
          for (int64_t t = 0; t < d_.T; ++t) dst[t] = prod[(n * d_.T + t) * d_.C + c] + b;
        }
      }
    });
    return Status::Ok();
  }

 private:
  static float* align(float* p) {
    return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(p) + 63) / 64 * 64);
  }

#ifdef GKRT_HAVE_DNNL
  // The product of the window rows by the filters' transpose as a oneDNN matmul with the
  // bias: its brgemm kernel took silero's 80 x 256 x 258 product in 0.063 ms at 1 thread
  // on the AMX Xeon where the own GEMM took 0.12 (the whole kernel 0.077 against 0.132;
  // capped at GKRT_CPU_ISA=avx2, gemm:jit 0.118 against 0.154). False (the own GEMM)
  // where oneDNN has only its reference implementation.
  bool useOneDnn(const float* w, bool has_bias) {
    using dt = dnnl::memory::data_type;
    const int64_t M = d_.N * d_.T;
    try {
      const dnnl::memory::desc a({M, d_.K}, dt::f32, dnnl::memory::format_tag::ab);
      const dnnl::memory::desc b({d_.K, d_.C}, dt::f32, dnnl::memory::format_tag::any);
      const dnnl::memory::desc c({M, d_.C}, dt::f32, dnnl::memory::format_tag::ab);
      const dnnl::memory::desc bias({1, d_.C}, dt::f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(has_bias ? dnnl::matmul::desc(a, b, bias, c) : dnnl::matmul::desc(a, b, c),
                                      oneDnnEngine());
      impl_ = pd.impl_info_str();
      if (isReferenceImpl(impl_)) return false;
      dnnl::stream stream(oneDnnEngine());
      dnnl::memory src(dnnl::memory::desc({d_.K, d_.C}, dt::f32, dnnl::memory::format_tag::ba), oneDnnEngine(),
                       const_cast<float*>(w));  // w [C, K] is B [K, C] stored transposed
      w_mem_ = dnnl::memory(pd.weights_desc(), oneDnnEngine());
      dnnl::reorder(src, w_mem_).execute(stream, src, w_mem_);
      stream.wait();
      if (has_bias) bias_mem_ = dnnl::memory(bias, oneDnnEngine(), DNNL_MEMORY_NONE);
      a_mem_ = dnnl::memory(a, oneDnnEngine(), DNNL_MEMORY_NONE);
      c_mem_ = dnnl::memory(c, oneDnnEngine(), DNNL_MEMORY_NONE);
      stream_ = dnnl::stream(oneDnnEngine());
      prim_ = dnnl::matmul(pd);
      onednn_ = true;
    } catch (const dnnl::error&) {
      onednn_ = false;
    }
    return onednn_;
  }

  bool onednn_ = false;
  std::string impl_;
  dnnl::matmul prim_;
  dnnl::memory w_mem_, bias_mem_, a_mem_, c_mem_;
  dnnl::stream stream_;
#endif
  WindowDims d_;
  ThreadPool& pool_;
  PackedB filters_;
};

}  // namespace

bool canRunWindowConv(const ir::Graph& g, const ir::Node& node) {
  WindowDims d;
  return windowDims(g, node, &d);
}

std::unique_ptr<Kernel> compileWindowConv(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  WindowDims d;
  windowDims(g, node, &d);
  return std::make_unique<WindowConvKernel>(g, node, d, pool);
}

}  // namespace gkrt::cpu

#include "backends/cpu/quantization/block_quant_onednn.h"

#ifdef GKRT_HAVE_DNNL
#include <stdexcept>

#include "backends/cpu/onednn/onednn_impl.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/cpu/onednn/onednn_post_ops.h"
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
namespace {

using dt = dnnl::memory::data_type;

class OneDnnGemm final : public BlockQuantOneDnnGemm {
 public:
  explicit OneDnnGemm(const ops::BlockQuantDims& d) : d_(d), stream_(oneDnnEngine()) {
    using dims = dnnl::memory::dims;
    const dnnl::memory::desc x_md(dims{d_.M, d_.K}, dt::f32, dims{d_.K, 1});
    const dnnl::memory::desc w_md(dims{d_.K, d_.N}, dt::f32, dims{1, d_.K});  // column by column
    const dnnl::memory::desc y_md(dims{d_.M, d_.N}, dt::f32, dims{d_.N, 1});
    const dnnl::memory::desc b_md(dims{1, d_.N}, dt::f32, dims{d_.N, 1});
    auto desc = d_.bias ? dnnl::matmul::desc(x_md, w_md, b_md, y_md) : dnnl::matmul::desc(x_md, w_md, y_md);
    dnnl::matmul::primitive_desc pd(desc, oneDnnEngine());
    impl_ = pd.impl_info_str();
    if (isReferenceImpl(impl_)) throw std::runtime_error("oneDNN has only its reference matmul (" + impl_ + ")");
    prim_ = dnnl::matmul(pd);
    x_ = dnnl::memory(x_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    w_ = dnnl::memory(w_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    y_ = dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    if (d_.bias) b_ = dnnl::memory(b_md, oneDnnEngine(), DNNL_MEMORY_NONE);
  }
  size_t workspaceBytes() const override { return size_t(d_.K * d_.N) * sizeof(float); }
  std::string impl() const override { return impl_; }

  void multiply(const float* x, const float* w, const float* bias, float* y) override {
    x_.set_data_handle(const_cast<float*>(x));
    w_.set_data_handle(const_cast<float*>(w));
    y_.set_data_handle(y);
    args_.set(DNNL_ARG_SRC, x_);
    args_.set(DNNL_ARG_WEIGHTS, w_);
    args_.set(DNNL_ARG_DST, y_);
    if (bias) {
      b_.set_data_handle(const_cast<float*>(bias));
      args_.set(DNNL_ARG_BIAS, b_);
    }
    args_.execute(prim_, stream_);
    stream_.wait();
  }

 private:
  ops::BlockQuantDims d_;
  dnnl::stream stream_;
  dnnl::matmul prim_;
  dnnl::memory x_, w_, b_, y_;
  OneDnnArgs args_;
  std::string impl_;
};

}  // namespace

std::unique_ptr<BlockQuantOneDnnGemm> BlockQuantOneDnnGemm::make(const ops::BlockQuantDims& d) {
  if (d.M < kMinRows || d.K * d.N * int64_t(sizeof(float)) > kMaxWideBytes) return nullptr;
  try {
    return std::make_unique<OneDnnGemm>(d);
  } catch (const std::exception&) {  // reference code only, or a shape oneDNN refuses: the packed GEMM instead
    return nullptr;
  }
}
#else
std::unique_ptr<BlockQuantOneDnnGemm> BlockQuantOneDnnGemm::make(const ops::BlockQuantDims&) { return nullptr; }
#endif

}  // namespace gkrt::cpu

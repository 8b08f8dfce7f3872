#include "backends/cpu/quantization/block_quant_onednn.h"

#ifdef GKRT_HAVE_DNNL
#include <algorithm>
#include <stdexcept>

#include "backends/cpu/onednn/onednn_impl.h"
#include "backends/cpu/onednn/onednn_kernels.h"
#include "backends/cpu/onednn/onednn_post_ops.h"
#endif

namespace gkrt::cpu {

#ifdef GKRT_HAVE_DNNL
namespace {

using dt = dnnl::memory::data_type;
constexpr int64_t kChunkBytes = 4 << 20;  // widened weights at once (MiniLM's 1536 x 384: one chunk)

// One chunk width's primitive and the memories it runs on.
struct ChunkProduct {
  dnnl::matmul prim;
  dnnl::memory x, w, b, y;
  OneDnnArgs args;
  std::string impl;
};

class OneDnnGemm final : public BlockQuantOneDnnGemm {
 public:
  explicit OneDnnGemm(const ops::BlockQuantDims& d) : d_(d), stream_(oneDnnEngine()) {
    const int64_t per_column = d_.K * int64_t(sizeof(float));
    const int64_t chunks = std::max<int64_t>(1, (d_.N * per_column + kChunkBytes - 1) / kChunkBytes);
    width_ = std::min(d_.N, ((d_.N + chunks - 1) / chunks + 15) / 16 * 16);
    full_ = build(width_);
    const int64_t tail = d_.N % width_;
    if (tail) tail_ = build(tail);
  }
  size_t workspaceBytes() const override { return size_t(d_.K * width_) * sizeof(float); }
  std::string impl() const override { return full_->impl; }

  int64_t width() const override { return width_; }

  void multiply(const float* x, const float* w, const float* bias, float* y, int64_t cols) override {
    ChunkProduct& c = cols == width_ ? *full_ : *tail_;
    c.x.set_data_handle(const_cast<float*>(x));
    c.w.set_data_handle(const_cast<float*>(w));
    c.y.set_data_handle(y);
    c.args.set(DNNL_ARG_SRC, c.x);
    c.args.set(DNNL_ARG_WEIGHTS, c.w);
    c.args.set(DNNL_ARG_DST, c.y);
    if (bias) {
      c.b.set_data_handle(const_cast<float*>(bias));
      c.args.set(DNNL_ARG_BIAS, c.b);
    }
    c.args.execute(c.prim, stream_);
    stream_.wait();
  }

 private:
  std::unique_ptr<ChunkProduct> build(int64_t cols) {
    using dims = dnnl::memory::dims;
    const dnnl::memory::desc x_md(dims{d_.M, d_.K}, dt::f32, dims{d_.K, 1});
    const dnnl::memory::desc w_md(dims{d_.K, cols}, dt::f32, dims{1, d_.K});  // column by column
    const dnnl::memory::desc y_md(dims{d_.M, cols}, dt::f32, dims{d_.N, 1});
    const dnnl::memory::desc b_md(dims{1, cols}, dt::f32, dims{cols, 1});
    auto desc = d_.bias ? dnnl::matmul::desc(x_md, w_md, b_md, y_md) : dnnl::matmul::desc(x_md, w_md, y_md);
    dnnl::matmul::primitive_desc pd(desc, oneDnnEngine());
    auto c = std::make_unique<ChunkProduct>();
    c->impl = pd.impl_info_str();
    if (isReferenceImpl(c->impl)) throw std::runtime_error("oneDNN has only its reference matmul (" + c->impl + ")");
    c->prim = dnnl::matmul(pd);
    c->x = dnnl::memory(x_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    c->w = dnnl::memory(w_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    c->y = dnnl::memory(y_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    if (d_.bias) c->b = dnnl::memory(b_md, oneDnnEngine(), DNNL_MEMORY_NONE);
    return c;
  }

  ops::BlockQuantDims d_;
  dnnl::stream stream_;
  int64_t width_ = 0;
  std::unique_ptr<ChunkProduct> full_, tail_;
};

}  // namespace

std::unique_ptr<BlockQuantOneDnnGemm> BlockQuantOneDnnGemm::make(const ops::BlockQuantDims& d) {
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

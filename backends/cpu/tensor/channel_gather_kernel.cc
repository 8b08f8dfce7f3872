#include "backends/cpu/tensor/channel_gather_kernel.h"

#include <algorithm>
#include <string>
#include <vector>

#include "runtime/ir/op_def.h"
#include "runtime/ir/ops/op_helpers.h"

namespace gkrt::cpu {
namespace {

class ChannelGatherKernel final : public Kernel {
 public:
  ChannelGatherKernel(const Shape& x, const Shape& y, std::vector<int64_t> src, ThreadPool& pool, int x_block, int y_block)
      : n_(y[0]), c_in_(x[1]), c_out_(y[1]), hw_(y[2] * y[3]), bx_(x_block), by_(y_block), src_(std::move(src)), pool_(pool) {}

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float* x = in[0].as<float>();
    float* y = out[0].as<float>();
    if (bx_ == c_in_ && by_ == c_out_) {  // NHWC: a gather within each pixel's channels
      pool_.parallelFor(n_ * hw_, 16, 64, [&](int, int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const float* xp = x + p * c_in_;
          float* yp = y + p * c_out_;
          for (int64_t c = 0; c < c_out_; ++c) yp[c] = xp[src_[c]];
        }
      });
      return Status::Ok();
    }
    // Plain or channel-blocked: one (image, output channel) a task, its pixels strided by
    // the block (offset of channel c at pixel p: ((n * C/B + c/B) * HW + p) * B + c%B).
    pool_.parallelFor(n_ * c_out_, 1, std::max<int64_t>(1, 4096 / std::max<int64_t>(hw_, 1)), [&](int, int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t n = t / c_out_, c = t % c_out_, s = src_[c];
        const float* xs = x + ((n * (c_in_ / bx_) + s / bx_) * hw_) * bx_ + s % bx_;
        float* yc = y + ((n * (c_out_ / by_) + c / by_) * hw_) * by_ + c % by_;
        for (int64_t p = 0; p < hw_; ++p) yc[p * by_] = xs[p * bx_];
      }
    });
    return Status::Ok();
  }
  std::string detail() const override {
    const auto name = [&](int b, int64_t c) {
      return b == 1 ? std::string("nchw") : b == c ? std::string("nhwc") : "nChw" + std::to_string(b) + "c";
    };
    return "own channel gather, " + name(bx_, c_in_) + (bx_ == by_ || (bx_ == c_in_ && by_ == c_out_) ? "" : " to " + name(by_, c_out_));
  }

 private:
  int64_t n_, c_in_, c_out_, hw_, bx_, by_;
  std::vector<int64_t> src_;
  ThreadPool& pool_;
};

}  // namespace

bool canRunChannelGather(const ir::Graph& g, const ir::Node& node) {
  if (!node.op || std::string(node.op->name) != "Gather" || node.subgraph || node.inputs.size() != 2) return false;
  if (node.inputs[0] < 0 || node.inputs[1] < 0 || node.outputs.size() != 1) return false;
  const ir::Tensor &x = g.tensors[node.inputs[0]], &ind = g.tensors[node.inputs[1]], &y = g.tensors[node.outputs[0]];
  if (x.dtype != DType::kFloat32 || x.shape.size() != 4 || !isStatic(x.shape) || y.shape.size() != 4) return false;
  const int64_t axis = node.attrs.get<AxisAttrs>().axis;
  if (axis != 1 && axis != -3) return false;
  if (!ind.isConstant() || ind.shape.size() != 1 || (ind.dtype != DType::kInt64 && ind.dtype != DType::kInt32)) return false;
  for (int64_t j = 0; j < ind.shape[0]; ++j) {
    const int64_t k = static_cast<int64_t>(ops::loadF(ind.constant->data, ind.dtype, j));
    if (k < -x.shape[1] || k >= x.shape[1]) return false;  // the reference kernel reports it
  }
  return true;
}

StatusOr<std::unique_ptr<Kernel>> compileChannelGather(const ir::Graph& g, const ir::Node& node, ThreadPool& pool,
                                                       int x_block, int y_block) {
  if (!canRunChannelGather(g, node)) return makeError(StatusCode::kInternal, "cpu: ", node.name, " is not a channel gather");
  const ir::Tensor &x = g.tensors[node.inputs[0]], &ind = g.tensors[node.inputs[1]];
  std::vector<int64_t> src(static_cast<size_t>(ind.shape[0]));
  for (size_t j = 0; j < src.size(); ++j) {
    const int64_t k = static_cast<int64_t>(ops::loadF(ind.constant->data, ind.dtype, static_cast<int64_t>(j)));
    src[j] = k < 0 ? k + x.shape[1] : k;
  }
  return std::unique_ptr<Kernel>(
      new ChannelGatherKernel(x.shape, g.tensors[node.outputs[0]].shape, std::move(src), pool, x_block, y_block));
}

}  // namespace gkrt::cpu

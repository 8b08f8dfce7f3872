#include "backends/cpu/nn/rotary_kernel.h"

#include "runtime/ir/ops/rotary.h"

namespace gkrt::cpu {
namespace {

class RotaryKernel final : public Kernel {
 public:
  RotaryKernel(ops::RotaryRows rows, ThreadPool& pool) : r_(std::move(rows)), pool_(pool) {}
  std::string detail() const override { return "gkrt rotary"; }

  Status launch(const std::vector<TensorView>& in, const std::vector<MutableTensorView>& out, void*) override {
    const float *x = in[0].as<float>(), *c = in[1].as<float>(), *s = in[2].as<float>();
    float* y = out[0].as<float>();
    pool_.parallelFor(r_.rows, 1, 64, [&](int, int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t a = r_.angle_row[size_t(row)];
        ops::rotaryRow(x + row * r_.dim, c + a, s + a, y + row * r_.dim, r_.dim, r_.angles);
      }
    });
    return Status::Ok();
  }

 private:
  ops::RotaryRows r_;
  ThreadPool& pool_;
};

}  // namespace

std::unique_ptr<Kernel> makeRotaryKernel(const ir::Graph& g, const ir::Node& node, ThreadPool& pool) {
  auto r = ops::rotaryRows(g.tensors[size_t(node.inputs[0])].shape, g.tensors[size_t(node.inputs[1])].shape,
                           g.tensors[size_t(node.inputs[2])].shape);
  if (!r.ok()) return nullptr;
  return std::make_unique<RotaryKernel>(std::move(r).value(), pool);
}

}  // namespace gkrt::cpu

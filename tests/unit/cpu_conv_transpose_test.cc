// ConvTranspose on the cpu backend (oneDNN deconvolution where this build has oneDNN)
// against the reference kernel: 1-D, 2-D grouped with stride, dilation, asymmetric
// pads and output_padding, 3-D; and the forms oneDNN does not take (a negative begin pad,
// weights that are not constants), which run the reference kernel.
#include "backends/cpu/onednn/onednn_kernels.h"
#include "runtime/ir/op_def.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

struct DeconvCase {
  Shape x, w;
  ConvTransposeAttrs a;
  bool bias;
  bool onednn;  // whether oneDNN should take it (in builds that have it)
};

void runCase(const DeconvCase& c, bool constant_weights) {
  GraphBuilder b;
  Value x = b.input("x", DType::kFloat32, c.x);
  const HostTensor wt = testing::randomTensor(c.w, 11);
  Value w = constant_weights ? b.constant("w", DType::kFloat32, c.w, wt.data()) : b.input("w", DType::kFloat32, c.w);
  std::vector<Value> ins = {x, w};
  if (c.bias) {
    const int64_t m = c.w[1] * c.a.groups;
    ins.push_back(b.constant("b", DType::kFloat32, {m}, testing::randomTensor({m}, 12).data()));
  }
  b.output(b.op1("ConvTranspose", ins, c.a), "y");
  auto g = b.finish();
  ASSERT_TRUE(g.ok()) << g.status().toString();
#ifdef GKRT_HAVE_DNNL
  EXPECT_EQ(cpu::canRunOneDnn(*g, g->nodes[0]), c.onednn && constant_weights) << shapeToString(c.x);
  if (c.onednn && constant_weights) {
    auto k = cpu::compileOneDnn(*g, g->nodes[0]);
    EXPECT_TRUE(k.ok()) << k.status().toString();
  }
#endif
  std::vector<HostTensor> inputs = {testing::randomTensor(c.x, 10)};
  if (!constant_weights) inputs.push_back(wt);
  auto want = testing::runGraph(*g, inputs, "reference", testing::optLevel(0));
  ASSERT_TRUE(want.ok()) << want.status().toString();
  for (int threads : {1, 2}) {
    SessionOptions o;
    o.backend = "cpu";
    o.backend_options.num_threads = threads;
    auto s = Session::create(*g, o);
    ASSERT_TRUE(s.ok()) << s.status().toString();
    for (size_t k = 0; k < inputs.size(); ++k) ASSERT_TRUE((*s)->setInput((*s)->inputs()[k].name, inputs[k]).ok());
    ASSERT_TRUE((*s)->run().ok());
    auto got = (*s)->output("y");
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(testing::compareTensors(*got, (*want)[0], 1e-4, 1e-5), "") << shapeToString(c.x) << ", " << threads << " threads";
  }
}

TEST(CpuConvTranspose, MatchesReference) {
  const std::vector<DeconvCase> cases = {
      {{1, 3, 7}, {3, 4, 3}, {{2}, {1, 0}, {1}, {1}, 1}, true, true},
      {{2, 4, 5, 6}, {4, 3, 3, 2}, {{2, 1}, {1, 0, 0, 1}, {1, 2}, {1, 0}, 2}, true, true},
      {{1, 8, 9, 9}, {8, 8, 4, 4}, {{2, 2}, {1, 1, 1, 1}, {1, 1}, {0, 0}, 1}, false, true},  // the common 2x upsampler
      {{1, 2, 3, 4, 3}, {2, 2, 2, 3, 2}, {{2, 1, 2}, {0, 1, 0, 0, 0, 1}, {1, 1, 1}, {0, 0, 1}, 1}, true, true},
      {{1, 2, 4, 4}, {2, 3, 3, 3}, {{3, 3}, {-1, 0, 0, 0}, {1, 1}, {0, 0}, 1}, false, false},  // negative begin pad
      {{1, 2, 4, 4}, {2, 3, 3, 3}, {{2, 2}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1}, false, true},    // output_padding > end pad
  };
  for (const DeconvCase& c : cases) {
    runCase(c, true);
    runCase(c, false);
  }
}

}  // namespace
}  // namespace gkrt

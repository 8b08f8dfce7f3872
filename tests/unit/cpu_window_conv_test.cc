// A one-channel strided 1-D convolution (an STFT front end) runs as one GEMM of its
// windows on the cpu backend and equals the reference kernel; too few windows keep
// oneDNN's convolution.
#include <gtest/gtest.h>

#include "backends/backend.h"
#include "runtime/builder.h"
#include "tests/unit/test_support.h"

namespace gkrt {
namespace {

TEST(CpuWindowConv, StridedOneChannelConvolutionIsOneGemmOfItsWindows) {
  struct Case { int64_t N, W, C, K, stride; bool bias; bool gemm; };
  for (const Case& c : {Case{6, 1000, 40, 96, 64, true, true}, Case{16, 832, 258, 256, 128, false, true},
                        Case{1, 832, 258, 256, 128, false, false}}) {
    GraphBuilder b;
    Value x = b.input("x", DType::kFloat32, {c.N, 1, 1, c.W});
    const HostTensor w = testing::randomTensor({c.C, 1, 1, c.K}, 3), bias = testing::randomTensor({c.C}, 4);
    Conv2DAttrs a;
    a.strides = {1, c.stride};
    std::vector<Value> ins = {x, b.constant("w", DType::kFloat32, {c.C, 1, 1, c.K}, w.data())};
    if (c.bias) ins.push_back(b.constant("b", DType::kFloat32, {c.C}, bias.data()));
    b.output(b.op1("Conv2D", ins, a), "y");
    auto g = b.finish();
    ASSERT_TRUE(g.ok()) << g.status().toString();
    const HostTensor in = testing::randomTensor({c.N, 1, 1, c.W}, 5);
    auto want = testing::runGraph(*g, {in}, "reference", testing::optLevel(0));
    SessionOptions opts;
    opts.backend = "cpu";
    opts.fusion = testing::optLevel(2);
    auto run = testing::runWithKernels(*g, {in}, opts);
    ASSERT_TRUE(want.ok() && run.ok()) << (run.ok() ? want.status().toString() : run.status().toString());
    // Sums of K products of values in [-2, 2]: float32 in another order.
    EXPECT_EQ(testing::compareTensors(run->outputs[0], (*want)[0], 1e-4, 2e-4), "") << c.N << "x" << c.C;
    EXPECT_EQ(run->countDetail("windows as one GEMM"), c.gemm ? 1 : 0) << c.N << "x" << c.C << "\n" << run->details;
  }
}

}  // namespace
}  // namespace gkrt
